#!/usr/bin/env bash
# scripts/explore-measure.sh [build-dir] [base-seeds] - the figures of docs/GUIDE.md, "Finding
# concurrency bugs" (issue #21's acceptance), from examples/explore/explore_cases and ursa-explore
# in build-dir (default build-x, built first):
#   1. each planted bug, under pct:3 and random, from `base-seeds` (default 100) different base
#      seeds (base i explores seeds i*1000000 ...): in how many runs ursa-explore found it within
#      1,000 schedules, and the median and largest number of schedules it took;
#   2. replay: the first failure of each bug rerun 100 times from its seed, and 100 times from its
#      trace file; a replay counts when it fails the same way with the same schedule (the trace
#      file, byte for byte, and the exit status);
#   3. the correct programs under 10,000 schedules of each strategy (no failure may appear);
#   4. the step rate: a 100,000-round token ring (about 400,000 steps per run) explored under each
#      strategy, against the same program without exploration in the same invocation (medians of 5).
# Needs nothing but the build; runs a few minutes on one core.
set -eu
cd "$(dirname "$0")/.."
dir=${1:-build-x}
bases=${2:-100}
if [ ! -f "$dir/build.ninja" ]; then
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DURSA_BUILD_BENCH=OFF >/dev/null
fi
ninja -C "$dir" explore_cases ursa-explore >/dev/null
prog=$(cd "$dir" && pwd)/explore_cases
ux=$(cd "$dir" && pwd)/ursa-explore
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export TMPDIR=$tmp                        # the failing runs' trace files go here

echo "== 1. planted bugs: found within 1,000 schedules, over $bases base seeds"
printf "%-12s %-8s %8s %8s %8s\n" bug strategy found median max
for bug in lost-wakeup atomicity order lock-order; do
  for s in pct:3 random; do
    : >"$tmp/n"
    found=0
    for ((b = 0; b < bases; b++)); do
      line=$("$ux" -n 1000 -s "$s" --seed $((b * 1000000)) -- "$prog" "$bug" 2>/dev/null | tail -1) || true
      case $line in
        "failed after "*) found=$((found + 1)); echo "$line" | awk '{ print $3 }' >>"$tmp/n" ;;
      esac
    done
    sort -n "$tmp/n" >"$tmp/ns"
    med=$(awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)]; else print "-" }' "$tmp/ns")
    max=$(tail -1 "$tmp/ns" 2>/dev/null || echo -)
    printf "%-12s %-8s %5d/%-3d %8s %8s\n" "$bug" "$s" "$found" "$bases" "$med" "${max:--}"
  done
done

echo "== 2. replay of each bug's first failure (pct:3, base seed 0): 100 times by seed, 100 by trace file"
printf "%-12s %-22s %10s %10s\n" bug "strategy, seed" "by seed" "by file"
for bug in lost-wakeup atomicity order lock-order; do
  line=$("$ux" -n 1000 -s pct:3 -- "$prog" "$bug" 2>/dev/null | tail -1)
  seed=$(echo "$line" | sed -E 's/.*seed ([0-9]+),.*/\1/')
  strat=$(echo "$line" | sed -E 's/.*strategy (.*)$/\1/')
  set +e
  URSA_EXPLORE=$strat URSA_REPLAY=$seed URSA_EXPLORE_TRACE=$tmp/ref "$prog" "$bug" >/dev/null 2>&1
  ref_rc=$?
  same_seed=0
  same_file=0
  for i in $(seq 100); do
    URSA_EXPLORE=$strat URSA_REPLAY=$seed URSA_EXPLORE_TRACE=$tmp/again "$prog" "$bug" >/dev/null 2>&1
    rc=$?
    if [ $rc -eq $ref_rc ] && cmp -s "$tmp/ref" "$tmp/again"; then same_seed=$((same_seed + 1)); fi
    env -u URSA_EXPLORE URSA_REPLAY=$tmp/ref URSA_EXPLORE_TRACE=$tmp/file "$prog" "$bug" >/dev/null 2>&1
    rc=$?
    if [ $rc -eq $ref_rc ] && cmp -s "$tmp/ref" "$tmp/file"; then same_file=$((same_file + 1)); fi
  done
  set -e
  printf "%-12s %-22s %6d/100 %6d/100   (exit status %d)\n" "$bug" "$strat, $seed" "$same_seed" "$same_file" "$ref_rc"
done 2>/dev/null                          # (not the shell's "Aborted" line for each replay)

echo "== 3. correct programs, 10,000 schedules each: ursa-explore (fork and exec per schedule), then"
echo "   ursa_explore() in the program (fork per schedule); steps/s include each schedule's process"
for p in philosophers prodcons readers-writers; do
  for s in pct:3 random; do
    printf "%-12s %-7s " "$p" "$s"
    "$ux" -n 10000 -s "$s" -- "$prog" "$p" 2>&1 | tail -1
    printf "%-12s %-7s " "$p" "$s"
    "$prog" --explore "$p" "$s" 10000 2>&1 | tail -1
  done
done

echo "== 4. step rate: the 100,000-round token ring, explored and plain (medians of 5, one invocation)"
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
t_of() { local s e; s=$(date +%s%N); "$@" >/dev/null 2>&1; e=$(date +%s%N); echo $((e - s)); }
for s in pct:3 random; do
  line=$("$ux" -n 1 -s "$s" -- "$prog" steps | tail -1)
  steps=$(echo "$line" | sed -E 's/.*: ([0-9]+) steps.*/\1/')
  te=$(for i in 1 2 3 4 5; do t_of env URSA_EXPLORE=$s URSA_SEED=$i "$prog" steps; done | median)
  tp=$(for i in 1 2 3 4 5; do t_of env -u URSA_EXPLORE "$prog" steps; done | median)
  awk -v s="$s" -v n="$steps" -v te="$te" -v tp="$tp" 'BEGIN {
    printf "%-7s %d steps per run: explored %.1f ms (%.0f steps/s, process start included), plain %.1f ms: %.2fx\n",
           s, n, te / 1e6, n / (te / 1e9), tp / 1e6, te / tp }'
done
