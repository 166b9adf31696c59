#!/usr/bin/env bash
# tests/gdb_check.sh EXE KIND LIBDIR SCRIPT SANITIZE CONTEXT PROCESSOR
#
# Drives gdb in batch mode on EXE (tests/gdb_target.c: named ursa threads parked on a semaphore, a
# mutex, a sleep, joins, one ready, one finished, one running) and checks what tools/gdb/ursa_gdb.py
# shows: `info ursa-threads` (id, name, state, VP, wait) and `ursa-thread bt N` (the known call
# chains) for every thread, and `ursa-thread select` / `restore`.  Four sessions:
#   live    run to the breakpoint in gdb_target_stopped and inspect;
#   gcore   the same run with URSA_GUARD=mprotect, saved with gdb's gcore, then inspected
#           (gdb 13's gcore cannot read a mapping that holds MADV_GUARD_INSTALL guard pages and
#           drops the whole mapping, i.e. every stack; mprotect guards are separate mappings);
#   kernel  when core_pattern names a plain file: the live session ends with SIGABRT, and the
#           kernel's core (default guard pages) is inspected; skipped with a note otherwise.
# KIND shared: EXE uses libursa.so and the script must be auto-loaded from LIBDIR (named as it is
# installed, libursa.so.X.Y.Z-gdb.py); KIND static: the script is sourced.
# Exit 0 all good, 1 an expectation failed (each printed), 77 skipped (no gdb or no Python in it,
# sanitizer build, ucontext build, not x86-64, libursa without debug info).
set -u
exe=$1 kind=$2 libdir=$3 script=$4 sanitize=$5 context=$6 proc=$7

skip() { echo "gdb_check: skipped: $*"; exit 77; }
# The expected listing parks every thread on VP 0: the target runs on one VP.
export URSA_VPS=1
[ -z "$sanitize" ] || skip "sanitizer build (URSA_SANITIZE=$sanitize)"
case $proc in x86_64|AMD64|amd64) ;; *) skip "not x86-64 ($proc): the script reads the x86-64 context layout";; esac
[ "$context" = asm ] || skip "URSA_CONTEXT=$context: the script reads the asm context layout"
command -v gdb >/dev/null 2>&1 || skip "gdb not found"
gdb -nx -batch -ex 'python print("py" + "ok")' 2>/dev/null | grep -q pyok || skip "gdb has no Python"
if [ "$kind" = shared ]; then dbg=$libdir/libursa.so; else dbg=$exe; fi
gdb -nx -batch -ex 'ptype struct ursa__global' "$dbg" 2>/dev/null | grep -q 'slots;' \
  || skip "no debug info for libursa in $dbg (a Release build? use RelWithDebInfo or Debug)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ursa-gdb.XXXXXX"); trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "gdb_check: FAIL [$kind/$where]: $*"; fail=1; }

if [ "$kind" = shared ]; then
  load=(-iex "add-auto-load-safe-path $libdir")         # auto-loaded beside libursa.so.X.Y.Z
else
  load=(-x "$script")
fi
common=(-nx -batch "${load[@]}" -ex 'set pagination off' -ex 'set confirm off' -ex 'set width 0')
inspect=(-ex 'echo @@AUTOLOAD\n' -ex 'info auto-load python-scripts'
         -ex 'echo @@INFO\n' -ex 'info ursa-threads')
for i in 1 2 3 4 5 6 7 8; do inspect+=(-ex "echo @@BT $i\\n" -ex "ursa-thread bt $i"); done
inspect+=(-ex 'echo @@SELECT\n' -ex 'ursa-thread select 2' -ex 'bt' -ex 'frame function sem_level3' -ex 'print x'
          -ex 'echo @@RESTORE\n' -ex 'ursa-thread restore' -ex 'bt' -ex 'echo @@END\n')
to_break=(-ex 'break gdb_target_stopped' -ex 'run')

section() { awk -v s="@@$2" '$0 == s { on = 1; next } /^@@/ { on = 0 } on' "$1"; }
# The function names of a section's frame lines (#N  [0x... in ]name (...)), in order.
frames() { sed -nE 's/^#[0-9]+ +(0x[0-9a-f]+ in )?([A-Za-z_][A-Za-z_0-9.]*) \(.*/\2/p'; }

# expect_chain FILE N FIRST_LEVEL NAME... : thread N's backtrace starts at frame #FIRST_LEVEL and
# holds the names in this order (other frames may come between).
expect_chain() {
  local f=$1 n=$2 first=$3; shift 3
  local text seq want all
  text=$(section "$f" "BT $n")
  all=$(printf '%s\n' "$text" | frames | tr '\n' ' ')
  if ! printf '%s\n' "$text" | grep -qE "^#$first "; then
    bad "ursa-thread bt $n: the first frame is not #$first:"; printf '%s\n' "$text" | sed 's/^/    /'; return
  fi
  seq=" $all"
  for want in "$@"; do
    case $seq in
      *" $want "*) seq=" ${seq#*" $want "}" ;;
      *) bad "ursa-thread bt $n: expected the frames '$*' in this order, got '$all':"
         printf '%s\n' "$text" | sed 's/^/    /'; return ;;
    esac
  done
  if [ "$n" != 8 ] && printf '%s\n' "$text" | grep -q gdb_target_stopped; then
    bad "ursa-thread bt $n shows the running thread's frames (gdb_target_stopped)"
  fi
}

check() {        # check OUTPUT_FILE
  local f=$1 info line rows
  if ! grep -q '^@@END$' "$f"; then bad "the gdb session did not get to its end:"; sed 's/^/    /' "$f"; return; fi
  for pat in 'Python Exception' 'Error occurred in Python' 'Backtrace stopped' 'corrupt stack' \
             'No symbol' 'not initialized' 'Undefined command'; do
    if grep -q "$pat" "$f"; then bad "gdb said '$pat':"; grep -n "$pat" "$f" | sed 's/^/    /'; fi
  done
  if [ "$kind" = shared ] && ! section "$f" AUTOLOAD | grep -qE '^Yes +.*libursa\.so\.[0-9.]+-gdb\.py *$'; then
    bad "the script was not auto-loaded from beside libursa.so:"; section "$f" AUTOLOAD | sed 's/^/    /'
  fi
  info=$(section "$f" INFO)
  local before=$fail; fail=0
  rows=$(printf '%s\n' "$info" | grep -cE '^[ *] [0-9]+ ')
  [ "$rows" = 8 ] || bad "info ursa-threads: $rows threads listed, expected 8"
  while IFS= read -r line; do
    printf '%s\n' "$info" | grep -qE "$line" || bad "info ursa-threads: no line matching /$line/"
  done <<'EOF'
^  1 +main +blocked +0 +ursa_join on thread 8 \(stopper\)$
^  2 +sem-waiter +blocked +0 +ursa_sem_wait on semaphore 0x[0-9a-f]+ <g_sem>$
^  3 +mutex-waiter +blocked +0 +ursa_mutex_lock on mutex 0x[0-9a-f]+ <g_mutex>$
^  4 +sleeper +blocked +0 +ursa_sleep_ns, until .*[0-9] s( from now)?$
^  5 +joiner +blocked +0 +ursa_join on thread 4 \(sleeper\)$
^  6 +yielder +ready +0$
^  7 +finished +finished +0$
^\* 8 +stopper +running +0$
EOF
  [ "$fail" = 0 ] || { echo "  info ursa-threads said:"; printf '%s\n' "$info" | sed 's/^/    /'; }
  [ "$before" = 0 ] || fail=1
  expect_chain "$f" 1 1 main_wait main
  expect_chain "$f" 2 1 sem_level3 sem_level2 sem_level1 sem_thread ursa__thread_entry
  expect_chain "$f" 3 1 mutex_level3 mutex_level2 mutex_level1 mutex_thread ursa__thread_entry
  expect_chain "$f" 4 1 sleep_level3 sleep_level2 sleep_level1 sleep_thread ursa__thread_entry
  expect_chain "$f" 5 1 join_level3 join_level2 join_level1 join_thread ursa__thread_entry
  expect_chain "$f" 6 1 yield_thread ursa__thread_entry
  expect_chain "$f" 7 1 ursa__thread_entry
  expect_chain "$f" 8 0 gdb_target_stopped stop_level1 stop_thread ursa__thread_entry
  local sel; sel=$(section "$f" SELECT)
  # (#1 in an optimized build; a -O0 build shows ursa's own frames first)
  printf '%s\n' "$sel" | grep -qE '^#[1-9][0-9]* +0x[0-9a-f]+ in sem_level3 \(x=2\)' \
    || { bad "ursa-thread select 2 + bt: no '#N ... sem_level3 (x=2)'"; printf '%s\n' "$sel" | sed 's/^/    /'; }
  printf '%s\n' "$sel" | grep -qE '^\$[0-9]+ = 2$' \
    || { bad "ursa-thread select 2 + print x: not 2"; printf '%s\n' "$sel" | sed 's/^/    /'; }
  printf '%s\n' "$sel" | grep -q gdb_target_stopped && bad "ursa-thread select 2 + bt still shows the running thread"
  section "$f" RESTORE | grep -qE '^#0 +gdb_target_stopped \(\)' \
    || { bad "ursa-thread restore + bt: no '#0 gdb_target_stopped ()'"; section "$f" RESTORE | sed 's/^/    /'; }
}

# ---- live, and the kernel's core when core_pattern writes a plain file in the working directory --
pattern=$(cat /proc/sys/kernel/core_pattern 2>/dev/null || echo '|')
kcore=0
mkdir "$tmp/k"
if [[ $pattern != *'|'* && $pattern != */* ]] && (ulimit -c unlimited) 2>/dev/null; then kcore=1; fi
if [ $kcore = 1 ]; then finish=(-ex 'signal SIGABRT'); else finish=(-ex 'kill'); fi
(cd "$tmp/k" && ulimit -c unlimited 2>/dev/null
 gdb "${common[@]}" "${to_break[@]}" "${inspect[@]}" "${finish[@]}" "$exe") > "$tmp/live.out" 2>&1
where=live; check "$tmp/live.out"

# ---- gcore ------------------------------------------------------------------------------------------
gdb "${common[@]}" -ex 'set environment URSA_GUARD=mprotect' "${to_break[@]}" \
    -ex "gcore $tmp/gcore.core" -ex 'kill' "$exe" > "$tmp/gcore-make.out" 2>&1
where=gcore
if [ -s "$tmp/gcore.core" ]; then
  gdb "${common[@]}" "${inspect[@]}" "$exe" "$tmp/gcore.core" > "$tmp/gcore.out" 2>&1
  check "$tmp/gcore.out"
  rm -f "$tmp/gcore.core"
else
  bad "gcore made no core file:"; sed 's/^/    /' "$tmp/gcore-make.out"
fi

# ---- the kernel's core ------------------------------------------------------------------------------
where=kernel
core=$(ls "$tmp"/k/core* 2>/dev/null | head -1)
if [ -n "$core" ]; then
  gdb "${common[@]}" "${inspect[@]}" "$exe" "$core" > "$tmp/kernel.out" 2>&1
  check "$tmp/kernel.out"
else
  echo "gdb_check: note: no kernel core dump (core_pattern '$pattern'), that part skipped"
fi

if [ "$fail" = 0 ]; then
  echo "gdb_check ($kind): info ursa-threads and ursa-thread bt/select/restore right for 8 threads," \
       "live, from a gcore core$([ -n "$core" ] && echo ' and from a kernel core')"
fi
exit $fail
