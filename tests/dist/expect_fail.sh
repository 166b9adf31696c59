#!/usr/bin/env bash
# tests/dist/expect_fail.sh PATTERN COMMAND... - runs COMMAND (an mpiexec job that must fail) and
# passes when it exits non-zero, was not killed by the outer timeout (the job ended by itself:
# fail-stop), and its output has a line matching PATTERN (grep -E; empty: any output).  Prints how
# long the job took (a figure, not a check: no test depends on timing).  Status 137 is the outer
# timeout's only when the job lasted the whole 60 s: Open MPI's mpiexec itself exits 137 when a
# rank was killed by SIGKILL.
set -u
pat=$1; shift
t0=$(date +%s%N)
out=$(timeout -k 5 60 "$@" 2>&1); rc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
echo "$out" | tail -n 30
if [ $rc -eq 0 ]; then echo "expect_fail: the job exited 0; it must fail"; exit 1; fi
if [ $rc -eq 124 ] || { [ $rc -eq 137 ] && [ $ms -ge 60000 ]; }; then
  echo "expect_fail: the job did not end by itself within 60 s (status $rc)"; exit 1
fi
if [ -n "$pat" ] && ! echo "$out" | grep -qE "$pat"; then echo "expect_fail: no line matches '$pat'"; exit 1; fi
echo "expect_fail: the job failed as it must (status $rc, after $ms ms)"
