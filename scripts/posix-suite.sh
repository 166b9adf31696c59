#!/usr/bin/env bash
# scripts/posix-suite.sh - runs the Open POSIX Test Suite 1.5.2 (conformance/interfaces) against
# libursa-pthread.so, unmodified, through ursa-run (LD_PRELOAD), as issue #17 says an outside
# party will: what `make posix-suite` runs.
#
#   bash scripts/posix-suite.sh [-t SECONDS] [-c CONFIGS] [PATTERN...]
#     -t SECONDS  timeout of one native run (default 60: pthread_create/14-1 takes 47 s natively);
#                 under ursa a test gets 3 times its native time plus 10 s, at most SECONDS (a
#                 test that hangs under ursa would otherwise cost the whole timeout each time)
#     -c CONFIGS  the configurations to run, comma-separated (default: all five below)
#     -s          run nothing: the summary of the results kept from earlier runs
#     PATTERN     run only the tests whose name (e.g. pthread_cond_wait/2-1) matches one of
#                 these extended regular expressions
#
# The suite's code is never part of ursa (its licence is the GPL, and code from other projects is
# never copied into the repository): the script downloads Debian's copy of the upstream tarball
# into build-posix-suite/ when it is not there (or copies $URSA_POSIX_SUITE_TARBALL), checks its
# SHA-256 and unpacks it there.  It builds ursa in build-posix-suite/ursa (RelWithDebInfo, no
# tests), then each test of the groups below with the flags of Debian's package (-D_GNU_SOURCE
# -lpthread -lrt, -std=gnu99 -D_POSIX_C_SOURCE=200112L), warnings off (the 2005 sources do not
# build with today's -Werror), two compilers at a time.
#
# Configurations: native (glibc), cm-1 (ursa-run -n 1 -m cm), pcm-2 (-n 2 -m pcm), cp-ts-1 (-n 1
# -m cp-ts), cp-ts-2 (-n 2 -m cp-ts).  The cooperative model at 2 VPs is pcm: cm runs one VP by
# definition, and `-n 2 -m cm` is refused (docs/GUIDE.md, "Choosing a model").  Every test binary
# runs in each, from its own directory, under `timeout`, two runs at a time; the suite's exit
# codes (include/posixtest.h) are 0 PASS, 1 FAIL, 2 UNRESOLVED, 4 UNSUPPORTED, 5 UNTESTED; a run
# killed by the timeout is HUNG, one killed by a signal CRASH, any other status OTHER, and a run
# in which libursa-pthread could not start ursa (so that glibc served it) NOT-URSA.
#
# Output: per configuration the counts; then every test that passes natively but not in some ursa
# configuration, with its outcome per configuration: a test of the known-differences list below
# is printed as KNOWN with the reason, every other one as REGRESSION.  Exit status 0 when there is
# no REGRESSION, 1 otherwise, 2 when the suite could not be had or built.  Every run's output
# stays in build-posix-suite/out/<config>/<group>/<test>.txt, the results in
# build-posix-suite/results/<config>.tsv (config, test, exit status, seconds).  A run with
# PATTERNs or -c replaces the rows of the tests and configurations it ran and keeps the others, so
# one test can be run again in one configuration (the native results of an earlier run give it
# its timeout and its "passes natively"); the summary covers the tests of the run.
#
# Not part of `make test`: it needs the network the first time, and it takes about 31 minutes on
# the 2-core reference machine (native 330 s, cm-1 425 s, pcm-2 398 s, cp-ts-1 350 s, cp-ts-2
# 346 s on 2026-11-25, shared with other work: the suite's tests sleep, its timing tests run for
# seconds by design, and a test that hangs under ursa waits for its timeout), and its
# timing-dependent and signal tests are not deterministic on a loaded machine.
set -u
cd "$(dirname "$0")/.."
root=$PWD

URL=http://deb.debian.org/debian/pool/main/p/posixtestsuite/posixtestsuite_1.5.2.orig.tar.gz
SHA256=15a2185672127cba851d35ec9d538ff6148defdbb75f99c7e9c50aeba0f94757   # Debian's .dsc of 1.5.2-8
B=$root/build-posix-suite
TARBALL=$B/posixtestsuite_1.5.2.orig.tar.gz
SRC=$B/src/posixtestsuite
timeout_s=60
summary_only=0
ALL_CONFIGS=native,cm-1,pcm-2,cp-ts-1,cp-ts-2
configs=$ALL_CONFIGS

# The groups (directories of conformance/interfaces) that are built and run: the functions that
# libursa-pthread.so serves or that programs use with them.  Every pthread_* group is in, except
# those of EXCLUDED.  There is no sem_trywait group: sem_wait's tests cover sem_trywait.
GROUPS_IN="pthread_* sem_init sem_destroy sem_wait sem_timedwait sem_post sem_getvalue sched_yield
nanosleep clock_nanosleep"

# Groups left out, and why.  (The other groups of conformance/interfaces, aio_*, mq_*, sig*,
# timer_*, sched_setscheduler and the like, test functions that stay glibc's and are not listed
# in GROUPS_IN at all.)
EXCLUDED=$(cat <<'EOF'
pthread_barrierattr_getpshared	process-shared objects: the layer serves process-private ones only (issue #17); the pshared attribute functions are glibc's
pthread_barrierattr_setpshared	process-shared objects (as above)
pthread_condattr_getpshared	process-shared objects (as above)
pthread_condattr_setpshared	process-shared objects (as above)
pthread_mutexattr_getpshared	process-shared objects (as above; a process-shared mutex answers ENOTSUP)
pthread_mutexattr_setpshared	process-shared objects (as above)
pthread_rwlockattr_getpshared	process-shared objects (as above)
pthread_rwlockattr_setpshared	process-shared objects (as above)
sem_open	named semaphores stay glibc's (issue #17)
sem_close	named semaphores stay glibc's
sem_unlink	named semaphores stay glibc's
EOF
)
# Single tests left out, and why.
SKIPPED=$(cat <<'EOF'
pthread_cond_init/1-2	sets the system's realtime clock a week ahead and back (clock_settime, as root): it changes the time of the whole machine, and a run killed in between leaves it a week off
pthread_cond_init/2-2	the same
EOF
)
# Also left out: the suite's NAME.sh "tests" of these groups (each only echoes "Tested implicitly
# via assertion N" and exits 0), the speculative/ subdirectories (behaviour POSIX leaves
# unspecified, which the suite itself does not count) and sources without a main (build-only).

# Known differences: tests that pass natively and not under ursa for a reason that is not a bug of
# the layer to fix here: POSIX allows ursa's behaviour and the test assumes glibc's, or the test
# needs what user-level threads on shared kernel threads do not give (a cooperative model's
# thread that never blocks holds its VP), or the layer leaves the feature out on purpose (issue
# #17: process-shared and priority-protocol objects); the few not diagnosed yet say so.  One line each: the test, the
# configurations it applies to (* = every ursa one), the reason's key.  The summary prints them as
# KNOWN with the key, and each key's reason once, below the list: never hidden.
REASONS=$(cat <<'EOF'
pshared	process-shared mutexes and condition variables answer ENOTSUP (issue #17: the layer serves process-private objects only); the test stops as UNRESOLVED
prio	priority-protocol mutexes (PTHREAD_PRIO_INHERIT/PROTECT) and their ceilings answer ENOTSUP (issue #17); ursa has no priorities
coop-spin-signals	the test's worker calls the tested function in a loop that never blocks (pthread_once, pthread_sigmask, pthread_cond_signal, pthread_kill to itself, ...) until main, after a sleep, tells it to stop, while two threads signal the process: under the cooperative models (cm; pcm, depending on where the threads land) the threads that share the worker's VP, main or the senders, never run again (the signals and their handlers' sem_post work: under cp-ts these tests pass)
rwlock-busy	the thread that took the read lock exits without unlocking it, and main then destroys the rwlock: the layer answers EBUSY, which POSIX allows ("may fail"); glibc answers 0
async-cancel	asynchronous cancellation acts as deferred (docs/GUIDE.md): a thread blocked in pthread_mutex_lock, which is not a cancellation point, is not cancelled
stack-addr	a stack given with pthread_attr_setstack is stored and reported, but ursa runs the thread on a stack it maps itself (docs/GUIDE.md)
rwlock-eperm	unlocking an rwlock the caller does not hold answers EPERM, which POSIX allows ("may fail"); the test accepts only 0 (glibc's answer) or EINVAL
handler-race	the test's worker installs the signal handlers while the sender threads already send: natively the worker wins the race, under ursa at 2 VPs under cp-ts a sender runs first, and the signal's default action ends the process
handler-exit	the handler calls pthread_exit, which POSIX does not make async-signal-safe (undefined behaviour); at 2 VPs under cp-ts the process sometimes does not end
affinity	the test binds threads to CPUs (pthread_setaffinity_np, which ursa accepts and ignores) and checks that sched_yield lets the other thread of that CPU run: ursa's sched_yield yields to the ursa threads of the caller's VP
cm-spin	cm never preempts: main busy-waits (lock, read, unlock, without blocking or yielding) for the threads it made, which wait behind it on the one VP and never run; the model's definition (under pcm and cp-ts the test goes on, to its process-shared part)
EOF
)
KNOWN=$(cat <<'EOF'
pthread_cond_broadcast/1-2	*	pshared
pthread_cond_broadcast/2-3	*	pshared
pthread_cond_destroy/2-1	*	pshared
pthread_cond_init/1-3	*	pshared
pthread_cond_signal/1-2	*	pshared
pthread_cond_timedwait/2-6	*	pshared
pthread_cond_timedwait/4-2	*	pshared
pthread_cond_wait/2-3	*	pshared
pthread_cond_wait/2-2	*	pshared
pthread_cond_timedwait/2-4	*	pshared
pthread_cond_timedwait/2-7	*	pshared
pthread_mutex_destroy/2-2	*	pshared
pthread_mutex_destroy/5-2	*	pshared
pthread_mutex_trylock/1-2	*	pshared
pthread_mutex_trylock/2-1	*	pshared
pthread_mutex_trylock/4-2	*	pshared
pthread_mutexattr_getprotocol/1-2	*	prio
pthread_mutexattr_setprotocol/1-1	*	prio
pthread_mutex_getprioceiling/1-1	*	prio
pthread_atfork/3-3	cm-1,pcm-2	coop-spin-signals
pthread_cancel/5-2	cm-1,pcm-2	coop-spin-signals
pthread_cond_broadcast/4-2	cm-1,pcm-2	coop-spin-signals
pthread_cond_init/4-2	cm-1,pcm-2	coop-spin-signals
pthread_cond_signal/4-2	cm-1,pcm-2	coop-spin-signals
pthread_getschedparam/4-1	cm-1,pcm-2	coop-spin-signals
pthread_kill/8-1	cm-1,pcm-2	coop-spin-signals
pthread_mutex_lock/3-1	cm-1,pcm-2	coop-spin-signals
pthread_mutex_trylock/4-3	*	pshared
pthread_once/6-1	cm-1,pcm-2	coop-spin-signals
pthread_rwlock_timedrdlock/6-2	*	rwlock-busy
pthread_rwlock_timedwrlock/6-2	*	rwlock-busy
pthread_setschedparam/5-1	cm-1,pcm-2	coop-spin-signals
pthread_sigmask/18-1	cm-1,pcm-2	coop-spin-signals
pthread_setcanceltype/1-1	*	async-cancel
pthread_mutex_init/1-2	*	async-cancel
pthread_mutex_init/3-2	*	async-cancel
pthread_create/1-5	*	stack-addr
pthread_rwlock_unlock/4-1	*	rwlock-eperm
pthread_cond_init/4-2	cp-ts-2	handler-race
pthread_mutex_init/5-3	cp-ts-2	handler-race
pthread_mutex_init/5-3	cm-1,pcm-2	coop-spin-signals
pthread_mutex_lock/3-1	cp-ts-2	handler-race
pthread_spin_lock/3-1	*	handler-exit
sched_yield/1-1	*	affinity
pthread_cond_timedwait/2-5	cm-1	cm-spin
pthread_cond_timedwait/2-5	pcm-2,cp-ts-1,cp-ts-2	pshared
EOF
)

usage() { sed -n '4,11p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    -t) [ $# -ge 2 ] || usage; timeout_s=$2; shift 2 ;;
    -c) [ $# -ge 2 ] || usage; configs=$2; shift 2 ;;
    -s) summary_only=1; shift ;;
    -h|--help) usage ;;
    --) shift; break ;;
    -*) echo "posix-suite: unknown option $1" >&2; usage ;;
    *) break ;;
  esac
done
patterns=("$@")
for c in ${configs//,/ }; do
  case ",$ALL_CONFIGS," in *",$c,"*) ;; *) echo "posix-suite: unknown configuration $c (one of $ALL_CONFIGS)" >&2; exit 2 ;; esac
done

say() { echo "posix-suite: $*"; }
die() { echo "posix-suite: $*" >&2; exit 2; }
for tool in cc nm timeout sha256sum tar cmake ninja; do
  command -v $tool >/dev/null 2>&1 || die "needs $tool (scripts/setup.sh test installs what make test needs)"
done
mkdir -p "$B"

# ---- the suite: download (or copy), verify, unpack ---------------------------------------------
if [ ! -f "$TARBALL" ]; then
  if [ -n "${URSA_POSIX_SUITE_TARBALL:-}" ]; then
    cp "$URSA_POSIX_SUITE_TARBALL" "$TARBALL.part" || die "cannot copy $URSA_POSIX_SUITE_TARBALL"
  else
    command -v curl >/dev/null 2>&1 || die "needs curl to download $URL"
    say "downloading $URL"
    curl -fsSL --retry 3 -o "$TARBALL.part" "$URL" || die "cannot download $URL"
  fi
  mv "$TARBALL.part" "$TARBALL"
fi
sum=$(sha256sum "$TARBALL" | cut -d' ' -f1)
if [ "$sum" != "$SHA256" ]; then
  rm -f "$TARBALL"
  die "$TARBALL: SHA-256 $sum, expected $SHA256 (removed; run again to download it anew)"
fi
if [ ! -f "$SRC/include/posixtest.h" ]; then
  rm -rf "$B/src" && mkdir -p "$B/src" && tar xzf "$TARBALL" -C "$B/src" || die "cannot unpack $TARBALL"
fi

# ---- ursa --------------------------------------------------------------------------------------
say "building ursa (build-posix-suite/ursa)"
{ cmake -S . -B "$B/ursa" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DURSA_BUILD_TESTS=OFF \
    -DURSA_BUILD_BENCH=OFF && ninja -C "$B/ursa" -j2; } >"$B/ursa.build.log" 2>&1 \
  || { cat "$B/ursa.build.log"; die "ursa does not build (build-posix-suite/ursa.build.log)"; }
RUN=$B/ursa/ursa-run
[ -x "$RUN" ] || die "no $RUN after the build"

# ---- the tests ---------------------------------------------------------------------------------
cd "$SRC/conformance/interfaces" || die "no conformance/interfaces in $SRC"
excluded_re="^($(echo "$EXCLUDED" | cut -f1 | paste -sd'|'))\$"
groups=()
for g in $GROUPS_IN; do
  for d in $g; do
    [ -d "$d" ] || continue
    [[ $d =~ $excluded_re ]] && continue
    groups+=("$d")
  done
done
tests=()
skipped_re="^($(echo "$SKIPPED" | cut -f1 | paste -sd'|'))\$"
while IFS= read -r f; do
  t=${f%.c}
  [[ $t =~ $skipped_re ]] && continue
  if [ ${#patterns[@]} -gt 0 ]; then
    m=0; for p in "${patterns[@]}"; do [[ $t =~ $p ]] && m=1; done
    [ $m = 1 ] || continue
  fi
  tests+=("$t")
done < <(find "${groups[@]}" -maxdepth 1 -name '[0-9]*-[0-9]*.c' ! -name '*-buildonly*' | sort -V)
[ ${#tests[@]} -gt 0 ] || die "no test matches"

# build_one TEST: TEST.c -> TEST.o -> TEST.bin (no main: build-only, no binary).  Prints a line
# only when the test does not build.
build_one() {
  local t=$1 inc=$SRC/include
  [ -x "$t.bin" ] && [ "$t.bin" -nt "$t.c" ] && return 0
  if ! cc -std=gnu99 -D_POSIX_C_SOURCE=200112L -D_GNU_SOURCE -I"$inc" -O2 -g -w -c "$t.c" -o "$t.o" >"$t.buildlog" 2>&1; then
    echo "$t: does not compile"; return 0
  fi
  nm -g "$t.o" | grep -q ' T main$' || { rm -f "$t.o"; return 0; }
  cc "$t.o" -o "$t.bin" -lpthread -lrt >>"$t.buildlog" 2>&1 || echo "$t: does not link"
  rm -f "$t.o"
}
export -f build_one
export SRC
say "building ${#tests[@]} tests of ${#groups[@]} groups"
buildfail=$(printf '%s\n' "${tests[@]}" | nice -n 10 xargs -P2 -I{} bash -c 'build_one {}')
runnable=()
for t in "${tests[@]}"; do [ -x "$t.bin" ] && runnable+=("$t"); done

# run_one CONFIG TEST: one run; prints "CONFIG TEST STATUS SECONDS".
run_one() {
  local c=$1 t=$2 out=$B/out/$1/$2.txt s e rc to=$TIMEOUT_S n
  mkdir -p "$(dirname "$out")"
  local -a pre=()
  if [ "$c" != native ]; then      # 3 x the native time + 10 s, at most the timeout
    n=$(awk -F'\t' -v t="$t" '$2 == t { print int($4) }' "$B/results/native.tsv" 2>/dev/null)
    [ -n "$n" ] && [ $(( 3 * n + 10 )) -lt "$to" ] && to=$(( 3 * n + 10 ))
  fi
  case $c in
    native) ;;
    cm-1) pre=("$RUN" -n 1 -m cm --) ;;
    pcm-2) pre=("$RUN" -n 2 -m pcm --) ;;
    cp-ts-1) pre=("$RUN" -n 1 -m cp-ts --) ;;
    cp-ts-2) pre=("$RUN" -n 2 -m cp-ts --) ;;
  esac
  s=$(date +%s%N)
  (cd "$(dirname "$t")" && exec timeout -k 5 "$to" "${pre[@]}" "./$(basename "$t").bin") >"$out" 2>&1 </dev/null
  rc=$?
  e=$(date +%s%N)
  # the layer fell back to glibc (its constructor says so): not a run on ursa
  [ "$c" != native ] && grep -q '^ursa-pthread: ursa_init failed' "$out" && rc=200
  printf '%s\t%s\t%s\t%d.%02d\n' "$c" "$t" "$rc" $(( (e - s) / 1000000000 )) $(( (e - s) / 10000000 % 100 ))
}
export -f run_one
export B RUN TIMEOUT_S=$timeout_s

mkdir -p "$B/results"
sel=$B/results/selection
printf '%s\n' "${runnable[@]}" >"$sel"
for c in ${configs//,/ }; do
  [ $summary_only = 1 ] && break
  say "running ${#runnable[@]} tests: $c (2 at a time)"
  start=$(date +%s)
  f=$B/results/$c.tsv
  touch "$f"
  awk -F'\t' 'NR == FNR { s[$1] = 1; next } !($2 in s)' "$sel" "$f" >"$f.old"
  # (bash's own "Floating point exception" notes of crashed tests go to the .err file)
  nice -n 10 xargs -P2 -I{} bash -c "run_one $c {}" <"$sel" >"$f.new" 2>"$B/results/$c.err"
  cat "$f.old" "$f.new" >"$f" && rm -f "$f.old" "$f.new"
  say "$c took $(( $(date +%s) - start )) s"
done
results=$B/results/all.tsv
for c in native ${configs//,/ }; do
  [ -f "$B/results/$c.tsv" ] && awk -F'\t' 'NR == FNR { s[$1] = 1; next } $2 in s' "$sel" "$B/results/$c.tsv"
done | sort -u >"$results"
case ",$configs," in *,native,*) ;; *) configs=native,$configs ;; esac

# ---- the summary -------------------------------------------------------------------------------
echo
echo "Open POSIX Test Suite 1.5.2, conformance/interfaces, ${#groups[@]} groups, ${#runnable[@]} tests ($(date -u +%Y-%m-%d), $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?'))"
[ -n "$buildfail" ] && { echo "not built (counted nowhere):"; echo "$buildfail" | sed 's/^/  /'; }
echo "left out: $(echo "$EXCLUDED" | cut -f1 | paste -sd' ') (groups); $(echo "$SKIPPED" | cut -f1 | paste -sd' ') (tests): see the script"
{ echo "$REASONS" | sed 's/^/R\t/'; echo "$KNOWN" | sed 's/^/K\t/'; } | awk -F'\t' -v cfgs="$configs" -v res="$results" '
  function outcome(rc) {
    if (rc == 0) return "PASS"; if (rc == 1) return "FAIL"; if (rc == 2) return "UNRESOLVED"
    if (rc == 4) return "UNSUPPORTED"; if (rc == 5) return "UNTESTED"
    if (rc == 124 || rc == 137) return "HUNG"; if (rc == 200) return "NOT-URSA"
    if (rc > 128) return "CRASH(sig " rc - 128 ")"
    return "OTHER(" rc ")"
  }
  $1 == "R" { reason[$2] = $3; next }
  # a test may have several lines: kk[test, config] (or [test, "*"]) is the reason of a config
  $1 == "K" && NF >= 4 { m = split($3, kl, ","); for (i = 1; i <= m; i++) kk[$2, kl[i]] = $4; next }
  END {
    n = split(cfgs, cl, ",")
    while ((getline line < res) > 0) {
      split(line, f, "\t"); c = f[1]; t = f[2]; o = outcome(f[3])
      r[c, t] = o; seen[t] = 1
      k = o; sub(/\(.*/, "", k); cnt[c, k]++; tot[c]++
    }
    split("PASS FAIL UNRESOLVED UNSUPPORTED UNTESTED HUNG CRASH OTHER NOT-URSA", kinds, " ")
    printf "%-9s", "config"; for (i = 1; i <= 9; i++) printf " %11s", kinds[i]; printf " %6s\n", "total"
    for (j = 1; j <= n; j++) {
      c = cl[j]; printf "%-9s", c
      for (i = 1; i <= 9; i++) printf " %11d", cnt[c, kinds[i]]
      printf " %6d\n", tot[c]
    }
    if (tot["native"] == 0) { print "no native results: run the native configuration first"; exit 2 }
    nreg = 0; nknown = 0
    for (t in seen) {
      if (r["native", t] != "PASS") continue
      # known: every configuration where it does not pass has a reason in the list
      bad = ""; known = 1; keys = ""
      for (j = 1; j <= n; j++) {
        c = cl[j]; if (c == "native" || !((c, t) in r) || r[c, t] == "PASS") continue
        bad = bad " " c "=" r[c, t]
        k = ((t, c) in kk) ? kk[t, c] : ((t, "*") in kk) ? kk[t, "*"] : ""
        if (k == "") known = 0
        else if (index(" " keys " ", " " k " ") == 0) { keys = keys (keys == "" ? "" : " ") k; used[k] = 1 }
      }
      if (bad == "") continue
      if (known) list_k[++nknown] = sprintf("  KNOWN       %-34s%s  [%s]", t, bad, keys)
      else list_r[++nreg] = sprintf("  REGRESSION  %-34s%s", t, bad)
    }
    if (nreg + nknown == 0) { print "every test that passes natively passes in every ursa configuration"; exit 0 }
    print "tests that pass natively but not under ursa:"; fflush()
    # sorted output: the regressions first
    cmd = "sort"; for (i = 1; i <= nreg; i++) print list_r[i] | cmd; close(cmd)
    for (i = 1; i <= nknown; i++) print list_k[i] | cmd; close(cmd)
    if (nknown) { print "known differences, why:"; fflush() }
    for (k in used) printf "  [%s] %s\n", k, reason[k] | cmd; close(cmd)
    printf "%d regression(s), %d known difference(s)\n", nreg, nknown
    exit (nreg > 0 ? 1 : 0)
  }'
