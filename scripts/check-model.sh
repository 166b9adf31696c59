#!/usr/bin/env bash
# scripts/check-model.sh - model-checks model/rotator.pml (ursa's SMP scheduler: the Protect
# Queue with its overflow list, the inline hand-off and the on-CPU byte, the Waiver-Queue ring and
# the interval timer's ring step, the VP sleep/wake protocol; see model/README.md) and
# model/switch.pml (the context switch's on-CPU byte against timer signals, issue #22) and
# model/steal.pml (an idle VP's turn on a stalled VP's Protect Queue, issue #20) and
# model/iosleep.pml (a VP's sleep on its futex and in its I/O engine, with an explicit futex) with Spin:
# each protocol must verify exhaustively in every configuration below, with no cycle in its state
# graph (every execution finite), and each deliberately broken variant must be caught with the
# assertion that names its bug (so the check cannot pass vacuously).  One line per check; exits 0
# only if all of that holds.  Works in a temporary directory (pan's sources, binary and trails
# never touch the repository).  When Spin is missing and cannot be installed, says "model check
# skipped: spin not installed" and exits 0 (run-tests.sh then reports the configuration NOT RUN).
set -u
cd "$(dirname "$0")/.."
models=$PWD/model

if ! command -v spin >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  sudo=""
  if [ "$(id -u)" != 0 ]; then command -v sudo >/dev/null 2>&1 && sudo="sudo -n" || sudo=no; fi
  if [ "$sudo" != no ]; then
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get install -y -qq --no-install-recommends spin >/dev/null 2>&1 \
      || { $sudo apt-get update -qq >/dev/null 2>&1
           $sudo apt-get install -y -qq --no-install-recommends spin >/dev/null 2>&1; }
  fi
fi
if ! command -v spin >/dev/null 2>&1; then echo "model check skipped: spin not installed"; exit 0; fi
if ! command -v gcc >/dev/null 2>&1; then echo "model check skipped: gcc not installed"; exit 0; fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ursa-model.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

# run K LABEL MODEL SPIN-DEFINES MODE EXPECT: check number K of model/MODEL, in $tmp/K; prints its line
#   MODE   all:    pan -DNP -l: assertions and, in the same search, non-progress cycles (the
#                  models have no progress label, so any cycle at all is one: every execution
#                  must be finite).  pan checks no end states in this mode: rotator.pml's
#                  monitor asserts them itself (stuck).
#          safety: pan -DSAFETY: assertions and invalid end states (switch.pml, steal.pml)
#          cycles: pan -DNP -l for switch.pml and steal.pml, whose end states the safety check covers
#   EXPECT pass, or the text pan must print for the error (e.g. "!(lost_wakeup)")
# A check that must pass builds pan with -O1 when it is large (rotator.pml), else with -O0
# (faster to build; a counterexample is found in a fraction of a second).
run() {
  local label=$2 model=$3 defs=$4 mode=$5 expect=$6 d=$tmp/$1 out cc pan_args err states secs opt=-O0
  mkdir "$d"; cp "$models/$model" "$d/"
  case $mode in
    safety) cc=(-DSAFETY); pan_args=() ;;
    all|cycles) cc=(-DNP); pan_args=(-l) ;;
  esac
  [ "$expect" = pass ] && { [ "$model" = rotator.pml ] || [ "$model" = iosleep.pml ]; } && opt=-O1
  # shellcheck disable=SC2086  # defs is a list of -D words
  if ! (cd "$d" && spin $defs -a "$model" >spin.log 2>&1); then
    echo "model: FAILED  $label: spin -a failed:"; sed 's/^/    /' "$d/spin.log"; return
  fi
  if ! (cd "$d" && gcc $opt -w "${cc[@]}" -DCOLLAPSE -DMEMLIM=3072 -o pan pan.c >cc.log 2>&1); then
    echo "model: FAILED  $label: compiling pan failed:"; sed 's/^/    /' "$d/cc.log"; return
  fi
  out=$(cd "$d" && ./pan -m200000 "${pan_args[@]}" 2>&1)
  err=$(printf '%s\n' "$out" | grep -m1 -E '^pan:[0-9]+: |max search depth too small|reached -DMEMLIM|Search not completed|out of memory')
  states=$(printf '%s\n' "$out" | sed -nE 's/^ *([0-9.e+]+) states, stored.*/\1/p' | head -1)
  secs=$(printf '%s\n' "$out" | sed -nE 's/^pan: elapsed time ([0-9.e+]+) seconds/\1/p' | head -1)
  if [ "$expect" = pass ]; then
    if [ -z "$err" ] && printf '%s\n' "$out" | grep -q 'errors: 0$'; then
      printf 'model: ok      %-44s %10s states %6s s\n' "$label" "$states" "$secs"
    else
      echo "model: FAILED  $label: ${err:-no result}"
      printf '%s\n' "$out" | sed 's/^/    /' | head -40
    fi
  else
    if printf '%s\n' "$err" | grep -qF -- "$expect"; then
      printf 'model: caught  %-44s %s\n' "$label" "$(printf '%s' "$err" | sed -E 's/^pan:[0-9]+: //; s/  +/ /g')"
    else
      echo "model: FAILED  $label: spin should report $expect, got: ${err:-no error}"
    fi
  fi
}

# Each check: LABEL | MODEL | SPIN-DEFINES | MODE | EXPECT.  rotator.pml: VPs N, tokens T, threads
# kept C, wq capacity W, ring capacity R, yields+blocks B, timer ticks K (defaults: N=2 T=3 C=1 W=1
# R=1 B=2 K=1), WQ_RING: the Waiver Queues at the level of their ring's slots and positions;
# model/README.md says what each configuration reaches.  switch.pml: blocks M,
# signals per VP NSIG (defaults: M=3 NSIG=2).  steal.pml: threads T, ring capacity R, the owner's
# moves B, the thief's turns S (defaults: T=3 R=2 B=4 S=2).  iosleep.pml: wakers WK, work items
# (each with its kick) per waker P, events of the sleeper's own E (defaults: WK=2 P=2 E=2).
checks=(
  # The protocol, exhaustively, every execution finite (mode all: no cycle at all).
  "verified N=2 T=3 C=1 W=1 R=1 B=2 K=1       | rotator.pml | -DN=2 -DT=3 -DC=1 -DW=1 -DR=1 -DB=2 -DK=1 | all | pass"
  "verified N=2 T=3 C=1 W=1 R=1 B=3 K=0       | rotator.pml | -DN=2 -DT=3 -DC=1 -DW=1 -DR=1 -DB=3 -DK=0 | all | pass"
  "verified N=2 T=4 C=1 W=1 R=1 B=1 K=1       | rotator.pml | -DN=2 -DT=4 -DC=1 -DW=1 -DR=1 -DB=1 -DK=1 | all | pass"
  "verified N=2 T=4 C=1 W=2 R=2 B=1 K=0 WQ_RING | rotator.pml | -DN=2 -DT=4 -DC=1 -DW=2 -DR=2 -DB=1 -DK=0 -DWQ_RING | all | pass"
  "verified N=2 T=3 C=2 W=1 R=1 B=2 K=1       | rotator.pml | -DN=2 -DT=3 -DC=2 -DW=1 -DR=1 -DB=2 -DK=1 | all | pass"
  "verified N=3 T=3 C=1 W=1 R=1 B=1 K=1       | rotator.pml | -DN=3 -DT=3 -DC=1 -DW=1 -DR=1 -DB=1 -DK=1 | all | pass"
  "verified N=4 T=3 C=1 W=1 R=1 B=0 K=1       | rotator.pml | -DN=4 -DT=3 -DC=1 -DW=1 -DR=1 -DB=0 -DK=1 | all | pass"
  "verified N=2 T=5 C=1 W=1 R=1 B=0 K=1       | rotator.pml | -DN=2 -DT=5 -DC=1 -DW=1 -DR=1 -DB=0 -DK=1 | all | pass"
  "verified N=2 T=3 C=1 W=1 R=1 B=1 K=1 WQ_RING | rotator.pml | -DN=2 -DT=3 -DC=1 -DW=1 -DR=1 -DB=1 -DK=1 -DWQ_RING | all | pass"
  # Without deadlock detection: no detection ends a run before a lost wake-up shows.
  "verified N=2 T=3 B=2 K=0, no detection     | rotator.pml | -DB=2 -DK=0 -DNO_DETECTION       | all | pass"
  # The broken variants must be caught, each by the assertion that names its bug.
  "BUG_HANDOFF_NO_ONCPU (double run)          | rotator.pml | -DBUG_HANDOFF_NO_ONCPU        | all | !(double_run)"
  "BUG_HANDOFF_NONEMPTY (lost token)          | rotator.pml | -DBUG_HANDOFF_NONEMPTY        | all | !(pq_miscount)"
  "BUG_NO_FENCE, no detection (lost wake-up)  | rotator.pml | -DBUG_NO_FENCE -DNO_DETECTION | all | !(lost_wakeup)"
  "BUG_NO_FENCE                               | rotator.pml | -DBUG_NO_FENCE                | all | !(false_deadlock)"
  "BUG_COUNT_FIRST (the first design)         | rotator.pml | -DBUG_COUNT_FIRST             | all | !(false_deadlock)"
  "BUG_NO_CAS                                 | rotator.pml | -DBUG_NO_CAS                  | all | (sleeping[me]==0)"
  "BUG_NO_WAIT                                | rotator.pml | -DBUG_NO_WAIT                 | all | !(false_deadlock)"
  "BUG_WQ_PUBLISH_FIRST (WQ_RING)             | rotator.pml | -DWQ_RING -DBUG_WQ_PUBLISH_FIRST | all | !(wq_torn)"
  # The switch's on-CPU byte against timer signals (issue #22): the switch verifies, with no
  # cycle; the order of ursa before the fix is caught, and is harmless without signals; so is a
  # picker that does not wait for the byte.
  "switch verified M=3 NSIG=2                 | switch.pml  | -DM=3 -DNSIG=2                | safety | pass"
  "switch no cycle M=3 NSIG=2                 | switch.pml  | -DM=3 -DNSIG=2                | cycles | pass"
  "switch verified M=5 NSIG=3                 | switch.pml  | -DM=5 -DNSIG=3                | safety | pass"
  "switch no cycle M=5 NSIG=3                 | switch.pml  | -DM=5 -DNSIG=3                | cycles | pass"
  "switch BUG_CLEAR_BEFORE_MOVE, no signals   | switch.pml  | -DBUG_CLEAR_BEFORE_MOVE -DNSIG=0 | safety | pass"
  "switch BUG_CLEAR_BEFORE_MOVE (issue #22)   | switch.pml  | -DBUG_CLEAR_BEFORE_MOVE       | safety | !(frame_clobbered)"
  "switch BUG_NO_ONCPU_WAIT                   | switch.pml  | -DBUG_NO_ONCPU_WAIT           | safety | !(resumed_twice)"
  # Stealing from a stalled VP (issue #20): the owner's brackets against a thief's turn verify,
  # with no cycle; a missing membarrier, a thief that ignores the bracket and a bracket left too
  # early are caught; and turns do take threads (the checks are not vacuous).
  "steal verified T=3 R=2 B=4 S=2             | steal.pml   | -DT=3 -DR=2 -DB=4 -DS=2         | safety | pass"
  "steal no cycle T=3 R=2 B=4 S=2             | steal.pml   | -DT=3 -DR=2 -DB=4 -DS=2         | cycles | pass"
  "steal verified T=4 R=2 B=6 S=3             | steal.pml   | -DT=4 -DR=2 -DB=6 -DS=3         | safety | pass"
  "steal BUG_NO_MEMBARRIER                    | steal.pml   | -DBUG_NO_MEMBARRIER           | safety | !(double_take)"
  "steal BUG_NO_CHECK                         | steal.pml   | -DBUG_NO_CHECK                | safety | !(double_take)"
  "steal BUG_EXIT_EARLY                       | steal.pml   | -DBUG_EXIT_EARLY              | safety | !(double_take)"
  "steal REACH_STEAL (turns take threads)     | steal.pml   | -DREACH_STEAL                 | safety | !(stolen)"
  # A VP's sleep on its futex and in its I/O engine, the futex explicit: verifies, with no cycle;
  # session 27's lost wake-up (a waker that took the engine sleep wrote only the eventfd) is
  # caught; and the window it needs is reached (the check is not vacuous).
  "iosleep verified WK=2 P=2 E=2              | iosleep.pml | -DWK=2 -DP=2 -DE=2            | all | pass"
  "iosleep verified WK=2 P=3 E=1              | iosleep.pml | -DWK=2 -DP=3 -DE=1            | all | pass"
  "iosleep verified WK=1 P=4 E=3              | iosleep.pml | -DWK=1 -DP=4 -DE=3            | all | pass"
  "iosleep BUG_NO_TAKEN_WAIT (session 27)     | iosleep.pml | -DBUG_NO_TAKEN_WAIT           | all | !(stuck)"
  "iosleep REACH_WINDOW (the window is reached) | iosleep.pml | -DREACH_WINDOW              | all | !(window)"
)

# Up to $URSA_MODEL_JOBS checks at a time (default: the CPUs, at most 4); lines in order.
jobs=${URSA_MODEL_JOBS:-$(nproc 2>/dev/null || echo 1)}
[ "$jobs" -gt 4 ] && jobs=4
[ "$jobs" -lt 1 ] && jobs=1
trim() { local x=$1; x=${x#"${x%%[![:space:]]*}"}; printf '%s' "${x%"${x##*[![:space:]]}"}"; }
pids=(); shown=0
show_next() { wait "${pids[$shown]}"; cat "$tmp/$shown.out"; shown=$((shown + 1)); }
for i in "${!checks[@]}"; do
  IFS='|' read -r label model defs mode expect <<<"${checks[$i]}"
  while [ $((i - shown)) -ge "$jobs" ]; do show_next; done
  run "$i" "$(trim "$label")" "$(trim "$model")" "$(trim "$defs")" "$(trim "$mode")" "$(trim "$expect")" >"$tmp/$i.out" 2>&1 &
  pids[i]=$!
done
while [ "$shown" -lt "${#checks[@]}" ]; do show_next; done

fails=$(cat "$tmp"/*.out | grep -c '^model: FAILED')
if [ "$fails" -eq 0 ]; then echo "model: all ${#checks[@]} checks passed"; exit 0; fi
echo "model: $fails of ${#checks[@]} checks FAILED"
exit 1
