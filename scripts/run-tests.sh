#!/usr/bin/env bash
# scripts/run-tests.sh [config...] - builds ursa in each configuration and runs every test with
# CTest (each test in its own process, under a timeout).  Configurations:
#   model     Spin model check of the SMP scheduler's protocols and of the switch's on-CPU byte
#             (scripts/check-model.sh, model/README.md); each of its checks counts as a test.
#   plain     gcc, asm context switch, -Werror
#   debug     -O0 with ursa's internal invariant checks (URSA_ASSERT, -DURSA_DEBUG) on
#   asan      AddressSanitizer + UndefinedBehaviorSanitizer
#   ucontext  the portable ucontext context switch
#   tsan      ThreadSanitizer
#   valgrind  the plain build, each test run under Valgrind memcheck (stacks registered) with
#             --leak-check=full --errors-for-leak-kinds=definite: a definite leak fails the test;
#             ursa_tests' tests run in batches of 8 per Valgrind process, each in a forked child
#             (tests/CMakeLists.txt), and are counted, timed and skipped one by one here
#   hard      allocation-failure injection (-DURSA_TEST_HARD=ON): every allocation and mapping of
#             a scenario fails in turn; errors must be -ENOMEM/-EAGAIN and nothing may leak;
#             with several VPs also a random run-queue order and a migration at every yield and
#             wake-up (URSA_SEED, printed per test, replays the choices; src/sched/vp.c)
#   clang     the plain build with clang
#   clang-asan  ASan+UBSan with clang
#   clang-tsan, clang-valgrind, clang-hard   the tsan, valgrind and hard builds with clang
#   aarch64   cross-built for AArch64 and run under qemu-aarch64 (scripts/test-aarch64.sh, which
#             installs the cross tools and qemu); the tests qemu-user cannot pass count as skipped
# Default: all fourteen, model first (gcc and clang each in plain, ASan+UBSan, TSan, Valgrind
# and hard).
#
# Output (all of it fits in 60 lines when everything passes):
#   a header, then one line per configuration as it finishes: tests passed, failed and skipped,
#   its wall time (configure + build + tests), an estimate of the time left (the table below,
#   scaled by how fast the configurations done so far went) and its test that came closest to
#   its timeout ("slowest": its time and the share of its timeout it used);
#   after a failing configuration, the line "FAILED ..., see LOG" and the output of each failed
#   test as CTest printed it (--output-on-failure), or the configure or build log;
#   the skipped tests, one line per reason (how many test runs, in which configurations); the
#   whole list, configuration, test and reason, is written to build-test-skips.txt;
#   passed/failed/skipped per configuration, the FAILED and NOT RUN configurations, and last
#   "total: N passed, N failed, N skipped".
# Logs: build-test-<c>.configure.log, build-test-<c>.build.log, build-test-<c>/ctest.log (CTest's
# whole output); build-model.log; build-aarch64.ctest.log (all of scripts/test-aarch64.sh).
#
# A configuration that cannot run (model: no spin; aarch64: no cross tools or qemu; both scripts
# try apt-get first) is reported NOT RUN with the reason, and the run fails: on Debian x86-64,
# where scripts/setup.sh and those scripts install everything, all of them must run.  On a
# machine that cannot have them, URSA_TEST_ALLOW_NOT_RUN lists the configurations that may be
# missing (comma- or space-separated, e.g. URSA_TEST_ALLOW_NOT_RUN=model,aarch64).
# Exit status: 0 when every test passed or skipped and every configuration ran (or was allowed
# not to).  A configuration that does not configure or build, or must run and did not, counts
# as one failed test, so that the total's "failed" is 0 exactly when the run passes.
set -u
cd "$(dirname "$0")/.."

ALL=(model plain debug asan ucontext tsan valgrind hard clang clang-asan clang-tsan clang-valgrind clang-hard aarch64)

# The one place that says how much slower a configuration runs its tests: every CTest timeout of
# the configuration (60 s for a test of the list) is multiplied by FACTOR (the CMake cache
# variable URSA_TEST_TIMEOUT_FACTOR, ../CMakeLists.txt).  SECONDS: what the whole configuration
# (configure, build, tests) takes on the 2-core reference machine (a fresh clone, 2026-11-27,
# session 21: 15m36s in all), for the time-left estimate
# (model runs no CTest, so has no factor).
#            config          FACTOR SECONDS
TABLE=$(cat <<'EOF'
             model           -      85
             plain           1      52
             debug           1      46
             asan            2      82
             ucontext        1      45
             tsan            3      101
             valgrind        5      116
             hard            1      45
             clang           1      38
             clang-asan      2      37
             clang-tsan      3      58
             clang-valgrind  5      125
             clang-hard      1      44
             aarch64         4      75
EOF
)
declare -A FACTOR EXPECT
while read -r c f s; do FACTOR[$c]=$f; EXPECT[$c]=$s; done <<<"$TABLE"

configs=("$@")
[ ${#configs[@]} -eq 0 ] && configs=("${ALL[@]}")
for c in "${configs[@]}"; do
  [ -n "${FACTOR[$c]:-}" ] || { echo "unknown configuration $c (known: ${ALL[*]})" >&2; exit 2; }
done
allow=" ${URSA_TEST_ALLOW_NOT_RUN:-} "; allow=${allow//,/ }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ursa-tests.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

# ---- helpers ------------------------------------------------------------------------------------
dur() {   # seconds -> 45s, 3m05s, 1h02m
  local s=$1
  if [ "$s" -lt 60 ]; then printf '%ds' "$s"
  elif [ "$s" -lt 3600 ]; then printf '%dm%02ds' $((s / 60)) $((s % 60))
  else printf '%dh%02dm' $((s / 3600)) $((s % 3600 / 60)); fi
}

# ctest_results LOG: one line per test CTest ran, from its progress lines
# (" 5/250 Test   #5: name ........   Passed    0.01 sec"): STATUS<tab>NAME<tab>SECONDS, where
# STATUS is pass, skip (Skipped, or Not Run (Disabled)) or fail:<what CTest said>.
ctest_results() {
  awk '
    /^ *[0-9]+\/[0-9]+ +Test +#[0-9]+: / {
      line = $0; sub(/^ *[0-9]+\/[0-9]+ +Test +#[0-9]+: +/, "", line)
      name = line; sub(/ .*/, "", name)
      rest = substr(line, length(name) + 1)
      secs = ""
      if (match(rest, / [0-9.]+ sec$/)) secs = substr(rest, RSTART + 1, RLENGTH - 5)
      if (rest ~ /\*\*\*Skipped/ || rest ~ /\*\*\*Not Run \(Disabled\)/) st = "skip"
      else if (rest ~ /^[ .]*Passed/) st = "pass"
      else { st = rest; sub(/^[ .]*(\*\*\*)?/, "", st); sub(/ +[0-9.]+ sec$/, "", st); st = "fail:" st }
      printf "%s\t%s\t%s\n", st, name, secs
    }' "$1"
}

# ctest_failed_output LOG: the progress line of each failed test and the output CTest printed
# after it (--output-on-failure), indented.
ctest_failed_output() {
  awk '
    /^ *[0-9]+\/[0-9]+ +Test +#[0-9]+: / {
      on = ($0 !~ /Passed +[0-9.]+ sec$/ && $0 !~ /\*\*\*Skipped/ && $0 !~ /\*\*\*Not Run \(Disabled\)/)
      if (on) { l = $0; sub(/^ */, "", l); print "  " l }
      next
    }
    /^ +Start +[0-9]+: / || /^[0-9]+% tests passed/ || /^Total Test time/ { on = 0; blank = 0 }
    on && /^[ \t]*$/ { blank++; next }                # blank lines only between output lines
    on { for (; blank > 0; blank--) print ""; print "    " $0 }' "$1"
}

# skip_reasons LASTTEST_LOG: NAME<tab>REASON for each test whose output has a line "SKIP: why"
# (task.h RETURN_SKIP) or "<script>: skipped: why" (the last such line).
skip_reasons() {
  [ -r "$1" ] || return 0
  awk '
    /^[0-9]+\/[0-9]+ Testing: / { name = $0; sub(/^[0-9]+\/[0-9]+ Testing: /, "", name); out = 0; why = ""; next }
    /^Output:$/ { out = 1; getline; next }
    /^<end of output>$/ { if (why != "") printf "%s\t%s\n", name, why; out = 0; next }
    out && /^SKIP: / { why = $0; sub(/^SKIP: /, "", why) }
    out && /^[A-Za-z0-9_.-]+: skipped: / { why = $0; sub(/^[A-Za-z0-9_.-]+: skipped: /, "", why) }' "$1"
}

# batch_results LASTTEST_LOG TIMEOUTS_FILE: the tests of the Valgrind batches (CTest tests
# vg_batch_*, tests/CMakeLists.txt: the runner's --each) as tests of their own: STATUS<tab>NAME
# <tab>SECONDS from each "ok - NAME S s of L s" line (status as ctest_results; "not ok" is
# fail:Failed), and NAME<tab>L appended to TIMEOUTS_FILE; on stderr, NAME<tab>REASON for each
# skipped one (its last "SKIP: why" line before its TAP line).  A batch that died before a test's
# TAP line leaves that test out here; the batch itself then counts as failed (ctest_results).
batch_results() {
  [ -r "$1" ] || return 0
  awk -v tofile="$2" '
    /^[0-9]+\/[0-9]+ Testing: / { name = $0; sub(/^[0-9]+\/[0-9]+ Testing: /, "", name); inb = (name ~ /^vg_batch_/); why = ""; next }
    !inb { next }
    /^SKIP: / { why = $0; sub(/^SKIP: /, "", why); next }
    /^(not )?ok - [A-Za-z0-9_]+ [0-9.]+ s of [0-9]+ s( # SKIP)?$/ {
      st = ($1 == "not") ? "fail:Failed" : ($0 ~ / # SKIP$/ ? "skip" : "pass")
      off = ($1 == "not") ? 1 : 0
      t = $(3 + off); secs = $(4 + off); lim = $(7 + off)
      printf "%s\t%s\t%s\n", st, t, secs
      printf "%s\t%s\n", t, lim >> tofile
      if (st == "skip" && why != "") printf "%s\t%s\n", t, why > "/dev/stderr"
      why = ""
    }' "$1"
}

# timeouts BUILD_DIR: NAME<tab>TIMEOUT of every test registered there (python3 reads CTest's JSON).
timeouts() {
  ctest --test-dir "$1" --show-only=json-v1 2>/dev/null | python3 -c '
import json, sys
for t in json.load(sys.stdin).get("tests", []):
    to = [p["value"] for p in t.get("properties", []) if p.get("name") == "TIMEOUT"]
    print("%s\t%s" % (t["name"], to[0] if to else 1500))' 2>/dev/null
}

# slowest RESULTS TIMEOUTS: "NAME T s = P% of L s" for the test with the largest share of its
# timeout (the longest one when no timeouts are known).
slowest() {
  awk -F'\t' -v tofile="$2" '
    FILENAME == tofile { to[$1] = $2; next }
    $3 != "" {
      share = ($2 in to && to[$2] > 0) ? $3 / to[$2] : -1
      if (best == "" || share > bshare || (share == bshare && $3 + 0 > bsecs + 0)) {
        best = $2; bsecs = $3; bshare = share
      }
    }
    END {
      if (best == "") exit
      if (bshare < 0) printf "%s %.1f s (no timeout)\n", best, bsecs
      else printf "%s %.1f s = %d%% of %d s\n", best, bsecs, bshare * 100 + 0.5, to[best]
    }' "$2" "$1"
}

# Tests at a time: one per CPU.  One more (3 on the 2-core machine) left the CPUs less idle
# (the TSan tests 78 -> 62 s, the whole run 15m36s -> 13m58s), but the extra load made a test of
# the scheduler's behaviour fail in the debug build from a fresh clone (smp_handoff_pair_stays_on_
# one_vp: 66 moves in 40,000 hand-offs, session 22), so the suite stays at one per CPU.
CTEST_JOBS=$(nproc 2>/dev/null || echo 1)

# Valgrind as the tests' wrapper.  --read-inline-info=no: Valgrind starts each of the ~400 test
# processes in 0.27 s instead of 0.34 (its floor, /bin/true, on the 2-core machine); a report then
# names the function an inlined piece of code was inlined into, with the inlined code's own line.
# --fair-sched=yes: Valgrind runs one kernel thread at a time, and its default lock (a pipe) lets
# the thread that releases it take it again at once, so a VP's kernel thread that never makes a
# system call kept it: with two VPs, VP 1 never ran at all while four threads yielded on VP 0
# (session 22: smp_errno_survives_migration failed in 16 of 16 runs, in main's code as before;
# VP 1: 0 switches; with the fair lock, 16,669 of 33,340).  Same time for the configuration (1m54s).
VALGRIND_WRAPPER="valgrind;--error-exitcode=9;--leak-check=full;--errors-for-leak-kinds=definite;--read-inline-info=no;--fair-sched=yes;-q"

flags_of() {   # the CMake flags of configuration $1 (unchanged from the first run-tests.sh)
  case "$1" in
    plain)    flags=() ;;
    debug)    flags=(-DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS=-DURSA_DEBUG) ;;
    asan)     flags=(-DURSA_SANITIZE=address) ;;
    ucontext) flags=(-DURSA_CONTEXT=ucontext) ;;
    tsan)     flags=(-DURSA_SANITIZE=thread) ;;
    hard)     flags=(-DURSA_TEST_HARD=ON) ;;
    clang)    flags=(-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++) ;;
    clang-asan) flags=(-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DURSA_SANITIZE=address) ;;
    clang-tsan) flags=(-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DURSA_SANITIZE=thread) ;;
    clang-valgrind) flags=(-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_FLAGS=-gdwarf-4  # Valgrind 3.19 reads no DWARF 5
                           -DURSA_VALGRIND=ON "-DURSA_TEST_WRAPPER=$VALGRIND_WRAPPER") ;;
    clang-hard) flags=(-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DURSA_TEST_HARD=ON) ;;
    valgrind) flags=(-DURSA_VALGRIND=ON "-DURSA_TEST_WRAPPER=$VALGRIND_WRAPPER") ;;
  esac
}

# ---- one configuration ----------------------------------------------------------------------------
# run_config C: runs it and leaves
#   $tmp/C.res    STATUS<tab>NAME<tab>SECONDS per test (see ctest_results)
#   $tmp/C.skip   NAME<tab>REASON per skipped test
#   $tmp/C.out    what to print after its line when it failed (test output, a log)
#   $tmp/C.slow   its slowest test (see slowest)
#   notrun        the reason it could not run, or empty
#   why           what failed outside the tests (configure, build, a script), or empty
#   log           its log
run_config() {
  local c=$1 dir rc res=$tmp/$1.res
  : >"$res"; : >"$tmp/$c.skip"; : >"$tmp/$c.out"; : >"$tmp/$c.slow"
  notrun=""; why=""
  case "$c" in
  model)
    log=build-model.log
    bash scripts/check-model.sh >"$log" 2>&1; rc=$?
    if grep -q '^model check skipped: ' "$log"; then
      notrun=$(sed -n 's/^model check skipped: //p' "$log" | head -1); return
    fi
    # "model: ok      LABEL   N states   S s", "model: caught  LABEL  ...", "model: FAILED  LABEL: ..."
    sed -nE 's/^model: ok +(.*[^ ]) +[0-9.e+]+ states +([0-9.e+]+) s$/pass\t\1\t\2/p
             s/^model: caught +(.{44}).*/pass\t\1\t/p
             s/^model: FAILED +([^:]*):.*/fail:FAILED\t\1\t/p' "$log" |
      sed -E 's/ +\t/\t/' >"$res"
    if [ "$rc" -ne 0 ] && ! grep -q '^fail' "$res"; then why="scripts/check-model.sh exited $rc"; fi
    grep -vE '^model: (ok|caught) ' "$log" | sed 's/^/    /' >"$tmp/$c.out"
    slowest "$res" /dev/null >"$tmp/$c.slow"
    return ;;
  aarch64)
    log=build-aarch64.ctest.log; dir=build-aarch64
    URSA_TEST_TIMEOUT_FACTOR=${FACTOR[$c]} bash scripts/test-aarch64.sh >"$log" 2>&1; rc=$?
    if grep -q '^test-aarch64: SKIP: ' "$log"; then
      notrun=$(sed -n 's/^test-aarch64: SKIP: //p' "$log" | head -1); return
    fi
    {
      ctest_results "$log"
      sed -nE 's/^test-aarch64: not run: ([^:]+): .*/skip\t\1\t/p
               s/^test-aarch64: check passed: (.*)/pass\t\1\t/p
               s/^test-aarch64: check FAILED: (.*)/fail:FAILED\t\1\t/p' "$log"
    } >"$res"
    { skip_reasons "$dir/Testing/Temporary/LastTest-main.log"
      sed -nE 's/^test-aarch64: not run: ([^:]+): (.*)/\1\t\2/p' "$log"; } >"$tmp/$c.skip"
    if [ "$rc" -ne 0 ] && ! grep -q '^fail' "$res"; then
      why="scripts/test-aarch64.sh exited $rc"
      grep -vE '^ *[0-9]+/[0-9]+ +Test +#[0-9]+: .*Passed|^ +Start +[0-9]+: ' "$log" |
        sed 's/^/    /' >"$tmp/$c.out"
    else
      { ctest_failed_output "$log"; grep '^test-aarch64: check FAILED' "$log" | sed 's/^/  /'; } >"$tmp/$c.out"
    fi
    timeouts "$dir" >"$tmp/$c.to"     # rewrites LastTest.log, which the script's rerun replaced
    slowest "$res" "$tmp/$c.to" >"$tmp/$c.slow"
    return ;;
  esac
  dir="build-test-$c"
  flags_of "$c"
  # The checks of the sources (the error table, README's tables, the layering check's self-test)
  # run in plain only, and the layering check of the objects in plain and clang: in the other
  # configurations they checked the same files again (1.8 min of test time in all, mostly the
  # layering self-test's compiles).
  case "$c" in
    plain) flags+=(-DURSA_TEST_SOURCE_CHECKS=ON -DURSA_TEST_LAYERING=ON) ;;
    clang) flags+=(-DURSA_TEST_SOURCE_CHECKS=OFF -DURSA_TEST_LAYERING=ON) ;;
    *)     flags+=(-DURSA_TEST_SOURCE_CHECKS=OFF -DURSA_TEST_LAYERING=OFF) ;;
  esac
  if ! cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DURSA_WERROR=ON \
         -DURSA_BUILD_BENCH=OFF "${flags[@]}" -DURSA_TEST_TIMEOUT_FACTOR="${FACTOR[$c]}" \
         >"$dir.configure.log" 2>&1; then
    why="configure"; log=$dir.configure.log; sed 's/^/    /' "$log" >"$tmp/$c.out"; return
  fi
  if ! ninja -C "$dir" >"$dir.build.log" 2>&1; then
    why="build"; log=$dir.build.log
    grep -vE '^\[[0-9]+/[0-9]+\] ' "$log" | sed 's/^/    /' >"$tmp/$c.out"; return
  fi
  timeouts "$dir" >"$tmp/$c.to"      # before the tests: it rewrites Testing/Temporary/LastTest.log
  log=$dir/ctest.log
  (cd "$dir" && ctest --output-on-failure -j "$CTEST_JOBS") >"$log" 2>&1; rc=$?
  ctest_results "$log" >"$res"
  skip_reasons "$dir/Testing/Temporary/LastTest.log" | grep -v '^vg_batch_' >"$tmp/$c.skip"
  if grep -q $'\tvg_batch_' "$res"; then           # Valgrind's batches: their tests, each its own
    batch_results "$dir/Testing/Temporary/LastTest.log" "$tmp/$c.to" >"$tmp/$c.bres" 2>>"$tmp/$c.skip"
    awk -F'\t' '!($1 ~ /^(pass|skip)$/ && $2 ~ /^vg_batch_/)' "$res" >"$tmp/$c.res2"
    cat "$tmp/$c.bres" >>"$tmp/$c.res2"
    mv "$tmp/$c.res2" "$res"
  fi
  if ! grep -qE '^[0-9]+% tests passed' "$log"; then why="ctest did not finish (exit $rc)"
  elif [ "$rc" -ne 0 ] && ! grep -q '^fail' "$res"; then why="ctest exited $rc"; fi
  ctest_failed_output "$log" >"$tmp/$c.out"
  [ -n "$why" ] && ! [ -s "$tmp/$c.out" ] && tail -n 20 "$log" | sed 's/^/    /' >"$tmp/$c.out"
  slowest "$res" "$tmp/$c.to" >"$tmp/$c.slow"
}

# ---- the run --------------------------------------------------------------------------------------
expect_all=0
for c in "${configs[@]}"; do expect_all=$((expect_all + EXPECT[$c])); done
logs=()
for c in "${configs[@]}"; do
  case $c in
    model) logs+=(build-model.log) ;;
    aarch64) logs+=(build-aarch64.ctest.log) ;;
    *) [[ " ${logs[*]} " == *" build-test-<c>/ctest.log "* ]] || logs+=("build-test-<c>/ctest.log") ;;
  esac
done
logs=$(printf '%s, ' "${logs[@]}"); logs=${logs%, }
echo "ursa tests: ${#configs[@]} configuration$([ ${#configs[@]} -gt 1 ] && echo s), about $(dur "$expect_all"); full output in $logs"
printf '%-15s %6s %6s %7s %7s %7s  %s\n' configuration passed failed skipped time left \
  "slowest test (the largest share of its timeout)"

start=$SECONDS; ran_secs=0; ran_expect=0; remaining=$expect_all
total_pass=0; total_fail=0; total_skip=0
summary=(); problems=(); ran=(); status=0
: >"$tmp/skips"
for c in "${configs[@]}"; do
  printf '%-15s' "$c"
  t0=$SECONDS
  run_config "$c"
  secs=$((SECONDS - t0))
  remaining=$((remaining - EXPECT[$c]))
  if [ -z "$notrun" ]; then ran_secs=$((ran_secs + secs)); ran_expect=$((ran_expect + EXPECT[$c])); fi
  if [ "$ran_expect" -gt 0 ]; then left=$((remaining * ran_secs / ran_expect)); else left=$remaining; fi
  if [ "$remaining" -le 0 ]; then left_s=-; else left_s="~$(dur "$left")"; fi

  if [ -n "$notrun" ]; then
    if [[ "$allow" == *" $c "* ]]; then
      printf ' NOT RUN: %s (allowed by URSA_TEST_ALLOW_NOT_RUN)\n' "$notrun"
      problems+=("NOT RUN: $c: $notrun (allowed by URSA_TEST_ALLOW_NOT_RUN)")
      summary+=("$c not run")
    else
      printf ' NOT RUN: %s; it must run (URSA_TEST_ALLOW_NOT_RUN=%s would allow it)\n' "$notrun" "$c"
      problems+=("NOT RUN: $c: $notrun (counted as 1 failed; see $log)")
      summary+=("$c not run"); total_fail=$((total_fail + 1)); status=1
    fi
    continue
  fi

  p=$(grep -c '^pass' "$tmp/$c.res"); f=$(grep -c '^fail' "$tmp/$c.res"); s=$(grep -c '^skip' "$tmp/$c.res")
  [ -n "$why" ] && f=$((f + 1))
  printf ' %6d %6d %7d %7s %7s  %s\n' "$p" "$f" "$s" "$(dur "$secs")" "$left_s" "$(cat "$tmp/$c.slow")"
  total_pass=$((total_pass + p)); total_fail=$((total_fail + f)); total_skip=$((total_skip + s))
  summary+=("$c $p/$f/$s")
  [ "$c" = model ] || ran+=("$c")       # the configurations that run CTest, for "[all but ...]"

  # Skipped tests and their reasons: CONFIG<tab>TEST<tab>REASON
  awk -F'\t' -v c="$c" -v whyfile="$tmp/$c.skip" '
    FILENAME == whyfile { why[$1] = $2; next }
    $1 == "skip" { printf "%s\t%s\t%s\n", c, $2, ($2 in why) ? why[$2] : "(no reason printed)" }' \
    "$tmp/$c.skip" "$tmp/$c.res" >>"$tmp/skips"

  if [ "$f" -gt 0 ]; then
    status=1
    names=$(grep '^fail' "$tmp/$c.res" | cut -f2 | head -5 | paste -sd' ')
    [ "$(grep -c '^fail' "$tmp/$c.res")" -gt 5 ] && names+=" ..."
    if [ -n "$why" ] && [ -z "$names" ]; then msg="$why"
    elif [ -n "$why" ]; then msg="$why; tests: $names"
    else msg="$f test$([ "$f" -gt 1 ] && echo s): $names"; fi
    echo "  FAILED $c: $msg; see $log"
    problems+=("FAILED: $c: $msg; see $log")
    cat "$tmp/$c.out"
  fi
done

# ---- the closing summary ------------------------------------------------------------------------
{
  echo "# Skipped tests of scripts/run-tests.sh ${configs[*]} ($(date -u '+%Y-%m-%d %H:%M UTC'))"
  echo "# configuration, test, reason"
  awk -F'\t' '{ printf "%-15s %-45s %s\n", $1, $2, $3 }' "$tmp/skips"
} >build-test-skips.txt
if [ -s "$tmp/skips" ]; then
  echo "skipped, by reason (test runs; configurations); each test in build-test-skips.txt:"
  # REASON<tab>COUNT<tab>CONFIGS, most frequent first; the configurations as "all", "all but X",
  # or a list (in the order they ran).
  awk -F'\t' -v ran="${ran[*]}" '
    { n[$3]++; if (!(($3, $1) in seen)) { seen[$3, $1] = 1; k[$3]++; has[$3, $1] = 1 } }
    END {
      nr = split(ran, order, " ")
      for (r in n) {
        list = ""; but = ""
        for (i = 1; i <= nr; i++) {
          if (has[r, order[i]]) list = list " " order[i]; else but = but " " order[i]
        }
        if (but == "" && nr > 1) where = "all"
        else if (k[r] > nr / 2 && nr > 2) where = "all but" but
        else where = substr(list, 2)
        printf "%d\t%5d  %s  [%s]\n", n[r], n[r], r, where
      }
    }' "$tmp/skips" | sort -t"$(printf '\t')" -k1,1nr -k2 | cut -f2- >"$tmp/reasons"
  max=30
  if [ "$(wc -l <"$tmp/reasons")" -gt "$max" ]; then
    head -n $((max - 1)) "$tmp/reasons"
    echo "  ... $(( $(wc -l <"$tmp/reasons") - max + 1 )) more reasons in build-test-skips.txt"
  else
    cat "$tmp/reasons"
  fi
fi
# passed/failed/skipped per configuration, wrapped at 100 columns
line="passed/failed/skipped:"
for s in "${summary[@]}"; do
  if [ $((${#line} + ${#s} + 2)) -gt 100 ]; then echo "$line"; line=" "; fi
  line+=" $s,"
done
echo "${line%,}"
for p in "${problems[@]}"; do echo "$p"; done
echo "ursa tests: $(dur $((SECONDS - start))) for ${#configs[@]} configuration$([ ${#configs[@]} -gt 1 ] && echo s)"
echo "total: $total_pass passed, $total_fail failed, $total_skip skipped"
exit "$status"
