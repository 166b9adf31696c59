#!/bin/sh
# tests/explore_cmd_check.sh URSA_EXPLORE EXPLORE_CASES [--quick] [URSA_RUN PTHREAD_CASES] - the ursa-explore
# command (tools/ursa-explore.c): a correct program passes N schedules (exit 0, a summary line); a
# planted bug fails (exit 1) with ursa's report and a replay line, and that line replays the
# failure; bad usage exits 2; a program that cannot run fails.  With ursa-run: a POSIX-threads
# program's lock-order deadlock is found and reported as one.
set -u
ux=$1 prog=$2
shift 2
n=100                                     # schedules of the correct programs
if [ "${1:-}" = --quick ]; then n=20; shift; fi   # sanitizer builds: every process start is slow
fail() { echo "explore_cmd_check: $*"; exit 1; }
TMPDIR=$(mktemp -d) || exit 1             # the failing runs' trace files, removed at the end
export TMPDIR
trap 'rm -rf "$TMPDIR"' EXIT
out=$("$ux" -n $n -s pct:3 -- "$prog" prodcons 2>&1); rc=$?
[ $rc -eq 0 ] || fail "prodcons: exit $rc: $out"
echo "$out" | grep -q "^passed $n schedules (pct, seeds 0..$((n - 1))): [0-9]* steps" || fail "no summary: $out"
out=$("$ux" -n $n -s random --vps 3 -- "$prog" philosophers 2>&1) || fail "philosophers, random, 3 VPs: $out"
out=$("$ux" -n 1000 -s pct:3 --seed 77 -- "$prog" atomicity 2>&1); rc=$?
[ $rc -eq 1 ] || fail "atomicity: exit $rc, not 1: $out"
echo "$out" | grep -q "ursa: explore: FAILED (signal 6" || fail "no report of the failure: $out"
echo "$out" | grep -q "check failed: av.balance >= 0" || fail "the program's own output is not shown: $out"
line=$(echo "$out" | sed -n 's/^ursa-explore: replay: //p')
[ -n "$line" ] || fail "no replay line: $out"
# the replay line: URSA_EXPLORE=... URSA_REPLAY=... PROGRAM ARGS
again=$(env $line 2>&1); rc=$?
[ $rc -eq 134 ] || fail "the replay ($line) exited $rc, not 134 (abort): $again"
echo "$again" | grep -q "check failed: av.balance >= 0" || fail "the replay failed differently: $again"
for bad in "-s foo -- $prog prodcons" "-n 0 -- $prog prodcons" "-s pct:3:0 -- $prog prodcons" "-n 5" "-x -- $prog"; do
  "$ux" $bad >/dev/null 2>&1; rc=$?
  [ $rc -eq 2 ] || fail "ursa-explore $bad: exit $rc, not 2"
done
out=$("$ux" -n 3 -- /nonexistent/program 2>&1); rc=$?
[ $rc -eq 1 ] && echo "$out" | grep -q "not run" || fail "a missing program: exit $rc: $out"
if [ $# -ge 2 ]; then
  out=$("$ux" -n 1000 -s pct:3 -- "$1" "$2" lock-order 2>&1); rc=$?
  [ $rc -eq 1 ] || fail "pthread lock-order under ursa-run: exit $rc, not 1: $out"
  echo "$out" | grep -q "exit status 3 (deadlock)" || fail "pthread lock-order: not reported as a deadlock: $out"
  out=$("$ux" -n 10 -s pct:3 -- "$1" "$2" prodcons 2>&1) || fail "pthread prodcons under ursa-run: $out"
fi
echo "explore_cmd_check: ok"
