#!/usr/bin/env bash
# scripts/bench.sh - what `make bench` runs (FULL=1 in the environment: the papers' sizes).
#
# Sizes: one word for the whole run, the same in every suite and in the report: "default" (make
# bench: no size flag to the suites) or "full" (FULL=1: --full to every suite).  The suites'
# third size, "quick" (--quick), is a smoke run by hand that make bench never uses.
#
# Six phases, each announced as "== make bench [k/6] ... ==" with the time elapsed and left; the
# suites show their own progress.  Every suite's JSON is named after this run (its UTC start), so
# that bench/report.py combines exactly this run's files into results/REPORT.md and
# results/plots/ (with .venv/bin/python, which has matplotlib, when scripts/setup.sh could make
# it).  The closing lines are report.py's summary, three separate things: "answers: every answer
# verified" (or which answers failed verification), "targets missed: ..." and "findings that do
# not hold: ...", then one line with the exit status.  A suite that fails, answers wrong or runs
# another model than its label makes the exit status 1 once the report is written; a missed
# performance target or a finding that does not hold does not: they are results.  Ctrl-C: 130.
set -u
cd "$(dirname "$0")/.."
start=$(date +%s)
run=$(date -u +%Y%m%dT%H%M%SZ)
if [ -n "${FULL:-}" ]; then mode=full; else mode=default; fi
rc=0 st= times= t=$start k=0

phase() { k=$1; python3 bench/suite_common.py phase "$1" 6 "$2" --start "$start" --mode "$mode"; t=$(date +%s); }
took() { times="$times${times:+,}$1=$(( $(date +%s) - t ))"; }
suite() {                              # suite NAME COMMAND...
  local name=$1 r
  shift
  BENCH_PHASE="bench $k/6 |" "$@"
  r=$?
  st="$st${st:+,}$name=$r"
  took "$name"
  [ $r -eq 130 ] && { echo "make bench: interrupted" >&2; exit 130; }
  [ $r -eq 0 ] || { rc=1; echo "make bench: $name FAILED (exit status $r): see above" >&2; }
}

phase 1 "setup and build (scripts/setup.sh bench; build-release)"
bash scripts/setup.sh bench || exit 1
cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=Release -DURSA_BUILD_TESTS=OFF \
  >build-release.configure.log 2>&1 || { cat build-release.configure.log; exit 1; }
ninja -C build-release >build-release.build.log 2>&1 || { cat build-release.build.log; exit 1; }
took setup+build
mkdir -p results

phase 2 "micro-benchmarks, peers, SMP (bench/run.py)"
if [ "$mode" = full ]; then suite micro python3 bench/run.py --build build-release --json "results/micro-$run.json" --runs 10
else suite micro python3 bench/run.py --build build-release --json "results/micro-$run.json"; fi
echo "bench 2/6 | scaling counters at 2, 4, 8, 16 VPs under callgrind (bench/count_shared_writes.py)" >&2
suite scaling python3 bench/count_shared_writes.py --build build-release --json "results/scaling-$run.json" >/dev/null

phase 3 "execution models, Tables I-IV (bench/models_suite.py)"
if [ "$mode" = full ]; then suite models python3 bench/models_suite.py --build build-release --json "results/models-$run.json" --full
else suite models python3 bench/models_suite.py --build build-release --json "results/models-$run.json"; fi

phase 4 "the papers' applications in every model (bench/apps_suite.py; bench/dist_suite.py)"
if [ "$mode" = full ]; then suite apps python3 bench/apps_suite.py --build build-release --json "results/apps-$run.json" --full
else suite apps python3 bench/apps_suite.py --build build-release --json "results/apps-$run.json"; fi
# the MPI layer (issue #19): its costs beside MPI's ping-pong, and the AMR speedups (printed only)
if [ -x build-release/bench/dist_latency ]; then suite dist python3 bench/dist_suite.py --build build-release --runs 3 --json "results/dist-$run.json"
else echo "make bench: build-release has no MPI layer (no MPI found): the distributed figures are skipped"; fi

# the Python that has matplotlib (scripts/setup.sh's .venv), for the plots of phases 5 and 6
py=python3
.venv/bin/python -c 'import matplotlib' >/dev/null 2>&1 && py=.venv/bin/python

phase 5 "HTTP load: httpd, Go, nginx under wrk (bench/load_suite.py)"
# ulimit -n: 10,000 connections need 10,000 descriptors in the server and in wrk
ulimit -n "$(ulimit -Hn)" 2>/dev/null
mkdir -p results/plots
if [ "$mode" = full ]; then suite load $py bench/load_suite.py --build build-release --json "results/load-$run.json" --plot results/plots/http-load.png --full
else suite load $py bench/load_suite.py --build build-release --json "results/load-$run.json" --plot results/plots/http-load.png; fi

phase 6 "report (bench/report.py)"
command="make bench"; [ "$mode" = full ] && command="make bench FULL=$FULL"
$py bench/report.py --run "$run" --mode "$mode" --command "$command" \
  --started "$start" --status "$st" --phase-times "$times" --build build-release \
  --micro "results/micro-$run.json" --models "results/models-$run.json" --apps "results/apps-$run.json" \
  --load "results/load-$run.json" --scaling "results/scaling-$run.json" \
  $( [ -x build-release/bench/dist_latency ] && echo --dist "results/dist-$run.json" )
r=$?
# report.py: 0 = written, every answer verified; 3 = written, something failed verification (its
# summary, just above, says what); else it could not write the report.
if [ $r -eq 3 ]; then rc=1
elif [ $r -ne 0 ]; then rc=1; echo "make bench: bench/report.py failed (exit status $r): no summary" >&2; fi
el=$(( $(date +%s) - start ))
if [ $rc -eq 0 ]; then
  echo "make bench: finished in $((el / 60))m$((el % 60))s, exit status 0: every answer verified;" \
       "the targets missed and findings that do not hold listed above are results (results/REPORT.md)"
else
  echo "make bench: FAILED after $((el / 60))m$((el % 60))s, exit status 1: not every answer was verified" \
       "(suites: $st; \"answers\" above lists what failed); the report is results/REPORT.md" >&2
fi
exit $rc
