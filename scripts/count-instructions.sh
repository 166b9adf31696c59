#!/usr/bin/env bash
# scripts/count-instructions.sh [build-dir] - instructions per operation of the hottest paths,
# counted by Valgrind (callgrind), which does not depend on the machine's neighbours: the figures
# that the architecture issue (#15) and HACKING.md ("Measuring") compare before and after a change.
# Each benchmark runs at two sizes and the difference is divided by the difference in operations,
# so start-up and teardown cancel out.  Builds a release tree in build-dir (default
# build-count) with the benchmarks only.  Needs valgrind.
set -eu
cd "$(dirname "$0")/.."
dir=${1:-build-count}
command -v valgrind >/dev/null || { echo "count-instructions: valgrind is missing (apt-get install valgrind)" >&2; exit 1; }
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DURSA_BUILD_TESTS=OFF -DURSA_BUILD_BENCH=ON >/dev/null
ninja -C "$dir" ursa_ring_sem smp_ring ursa_yield_pingpong pt_sched_ring ursa_create_join \
  pthread_ring_mutex ursa_pthread >/dev/null

# instructions NAME N1 N2 CMD-WITH-@N@ : prints (Ir(N2) - Ir(N1)) / (N2 - N1)
instructions() {
  local name=$1 n1=$2 n2=$3; shift 3
  local ir1 ir2
  ir1=$(irs "$n1" "$@"); ir2=$(irs "$n2" "$@")
  awk -v a="$ir1" -v b="$ir2" -v n1="$n1" -v n2="$n2" -v name="$name" \
      'BEGIN { printf "%-34s %8.1f instructions per operation\n", name, (b - a) / (n2 - n1) }'
}
irs() {
  local n=$1; shift
  local args=("${@//@N@/$n}") out
  # (--trace-children: ursa-run is a script that execs the program; the last process is it;
  # URSA_ROTATE_US=0: callgrind cannot follow the balancing tick's signal, and the tick costs
  # nothing per operation)
  out=$(URSA_VPS=1 URSA_ROTATE_US=0 valgrind --tool=callgrind --callgrind-out-file=/dev/null --trace-children=yes "${args[@]}" 2>&1 >/dev/null)
  echo "$out" | sed -nE 's/.*Collected : ([0-9]+).*/\1/p' | tail -1
}
b=$dir/bench
instructions "thread-ring, 1 VP (per pass)"       200000 400000 "$b/ursa_ring_sem" @N@
instructions "thread-ring, 2 VPs (per pass)"      200000 400000 "$b/smp_ring" 2 @N@ 1000
instructions "yield ping-pong, 1 VP (per yield)"  200000 400000 "$b/ursa_yield_pingpong" @N@
instructions "create+join, 1 VP (per thread)"     100000 200000 "$b/ursa_create_join" @N@
instructions "stackless scheduled ring (per pass)" 200000 400000 "$b/pt_sched_ring" ring @N@
instructions "POSIX mutex ring, ursa-run 1 VP"    100000 200000 "$dir/ursa-run" -n 1 -- "$b/pthread_ring_mutex" @N@
