#!/usr/bin/env bash
# scripts/check-layers.sh NM OBJECT... - the layering check of `make test` (issue #15 item 5).
#
# ursa's folders are layers, each calling only the ones below it (docs/ARCHITECTURE.md, "Layers"):
#     arch < core < sched < model < explore < sync < io < pt < runtime < pthread < dist
# From `nm` of the built objects (not from reading the sources) this fails when
#   1. an object of a folder references a symbol defined in an object of a higher folder;
#   2. a folder of src/ is not in the order above (a new folder must be placed first);
#   3. a public header (include/) names an ursa__ identifier that is not in PUBLIC_INTERNALS below
#      (the entry points that the protothread macros and ursa_tick expand to: they must be linkable
#      from user code, and the list says which are meant);
#   4. fewer objects than folders were given (a check that saw nothing would pass vacuously);
#   5. an object of an optional layer (OPTIONAL below: it uses only the public API and the waiter
#      interface) references an ursa__ symbol that is neither its own, nor declared in the waiter
#      interface (URSA__WAITER_API in src/sched/waiter.h, src/sync/waiter.h, src/io/waiter.h), nor one of the
#      out-of-line helpers of core/base.h's vocabulary (BASE_OUTOFLINE below).
# scripts/check-layers.sh --self-test NM OBJECT... plants an upward call, a new public ursa__
# name and an optional layer's use of an internal, and checks that each makes the check fail (run
# by CTest too).
set -u
LAYERS=(arch core sched model explore sync io pt runtime pthread dist)
OPTIONAL=" pt pthread dist "
# the spin lock's slow path, the panic, the debug lock tag, the hard build's failure injection,
# the clock's virtual time (exploration)
BASE_OUTOFLINE=" ursa__spin_lock_slow ursa__panic ursa__spin_me ursa__fail_now ursa__vclock "
# identifier: why a public header names it
PUBLIC_INTERNALS="
ursa__tick ursa__tick_flag
ursa__pts_exec ursa__pts_fast_magic ursa__pts_fifo_put ursa__pts_ivar_get ursa__pts_join
ursa__pts_join_thread ursa__pts_mvar_put ursa__pts_mvar_take ursa__pts_runq ursa__pts_sem_fast
ursa__pts_sem_post ursa__pts_sem_post_from ursa__pts_sem_post_slow ursa__pts_sem_wait
ursa__pts_sem_wait_fast ursa__pts_sem_wait_slow ursa__pts_sleep ursa__pts_timer_cancel
ursa__pts_ursa_sem_wait"
root=$(cd "$(dirname "$0")/.." && pwd)

self_test=0
if [ "${1:-}" = --self-test ]; then self_test=1; shift; fi
NM=${1:?usage: check-layers.sh [--self-test] NM OBJECT...}; shift
# CTest passes $<TARGET_OBJECTS:...> as one ;-separated argument
objs=()
for a in "$@"; do IFS=';' read -ra parts <<<"$a"; objs+=("${parts[@]}"); done
set -- "${objs[@]}"

declare -A RANK
for i in "${!LAYERS[@]}"; do RANK[${LAYERS[$i]}]=$i; done

# nm of an object, once per run (the self-test checks the same objects four times): nmc def|undef O
nm_cache=$(mktemp -d); trap 'rm -rf "$nm_cache"' EXIT
nmc() {
  local key
  key=$(printf '%s' "$2" | cksum | tr ' ' _)
  if [ ! -f "$nm_cache/$1.$key" ]; then
    if [ "$1" = def ]; then "$NM" --defined-only -g "$2" > "$nm_cache/$1.$key"
    else "$NM" -u "$2" > "$nm_cache/$1.$key"; fi
  fi
  cat "$nm_cache/$1.$key"
}

check() {   # check INCLUDE-DIR OBJECT...: prints each violation, returns 1 if any
  local inc=$1; shift
  local bad=0 o f s r d u n=0 api
  declare -A def
  api=" $(grep -ohE 'URSA__WAITER_API[^(]*\b(ursa__[A-Za-z0-9_]+)\(' "$root"/src/sched/waiter.h "$root"/src/sync/waiter.h "$root"/src/io/waiter.h |
           grep -oE 'ursa__[A-Za-z0-9_]+\($' | tr -d '(' | tr '\n' ' ') "
  case "$api" in *" ursa__park "*) ;; *) echo "layering: the waiter interface's declarations were not found"; return 1 ;; esac
  for o in "$@"; do
    case "$o" in */src/*) ;; *) continue ;; esac
    n=$((n + 1))
    f=${o##*/src/}; f=${f%%/*}             # .../src/<folder>/[CMakeFiles/<target>.dir/]<file>.o
    if [ -z "${RANK[$f]:-}" ]; then echo "layering: src/$f/ is not a layer (add it to LAYERS in $0 and to docs/ARCHITECTURE.md)"; bad=1; fi
    # ursa's own names only: src/pthread/ defines the POSIX names (pthread_create, ...) that the
    # lower layers call and that resolve to glibc's in every program not run through ursa-run
    while read -r s; do def[$s]=$f; done < <(nmc def "$o" | awk 'NF == 3 && $3 ~ /^ursa/ { print $3 }')
  done
  if [ "$n" -lt 5 ]; then echo "layering: only $n objects of src/ given: nothing was checked"; return 1; fi
  for o in "$@"; do
    case "$o" in */src/*) ;; *) continue ;; esac
    f=${o##*/src/}; f=${f%%/*}; r=${RANK[$f]:-0}
    while read -r s; do
      d=${def[$s]:-}
      case "$OPTIONAL" in
        *" $f "*)
          case "$s" in
            ursa__*) if [ "$d" != "$f" ] && [[ "$api$BASE_OUTOFLINE" != *" $s "* ]]; then
                       echo "layering: src/$f/${o##*/} (an optional layer) uses $s, which is not in the waiter interface"; bad=1
                     fi ;;
          esac ;;
      esac
      [ -n "$d" ] || continue
      if [ "${RANK[$d]:-0}" -gt "$r" ]; then
        echo "layering: src/$f/${o##*/} references $s, defined in src/$d/ (a higher layer)"; bad=1
      fi
    done < <(nmc undef "$o" | awk '{ print $NF }')
  done
  for u in $(grep -ohE '\bursa__[A-Za-z0-9_]+' "$inc"/ursa.h "$inc"/ursa/*.h | sort -u); do
    case " $(echo $PUBLIC_INTERNALS) " in
      *" $u "*) ;;
      *) echo "layering: a public header names $u (internal names stay in src/)"; bad=1 ;;
    esac
  done
  return $bad
}

if [ $self_test -eq 0 ]; then
  out=$(check "$root/include" "$@")
  rc=$?
  if [ $rc -ne 0 ]; then echo "$out"; echo "layering check FAILED (order: ${LAYERS[*]})"; exit 1; fi
  echo "layering check passed: $# objects, order ${LAYERS[*]}; public headers name only the listed ursa__ entry points; optional layers (${OPTIONAL# }) use only the public API and the waiter interface"
  exit 0
fi

# --self-test: the real objects must pass; an object of src/core/ that calls ursa_sem_post (sync)
# must fail; a header that names a new ursa__ identifier must fail.
tmp=$(mktemp -d); trap 'rm -rf "$tmp" "$nm_cache"' EXIT
fails=0
check "$root/include" "$@" >/dev/null || { echo "self-test: the real objects do not pass"; fails=1; }
mkdir -p "$tmp/src/core" "$tmp/include/ursa"
printf 'extern int ursa_sem_post(void *);\nint planted(void *s) { return ursa_sem_post(s); }\n' > "$tmp/planted.c"
${CC:-cc} -c "$tmp/planted.c" -o "$tmp/src/core/planted.c.o" 2>/dev/null || { echo "self-test: cannot compile (CC=${CC:-cc})"; exit 1; }
out=$(check "$root/include" "$@" "$tmp/src/core/planted.c.o")
case "$out" in *"src/core/planted.c.o references ursa_sem_post"*) ;; *) echo "self-test: an upward call was not found"; fails=1 ;; esac
cp "$root"/include/ursa.h "$tmp/include/"; cp "$root"/include/ursa/*.h "$tmp/include/ursa/"
echo 'void ursa__planted_internal(void);' >> "$tmp/include/ursa/pt.h"
out=$(check "$tmp/include" "$@")
case "$out" in *"names ursa__planted_internal"*) ;; *) echo "self-test: a new public ursa__ name was not found"; fails=1 ;; esac
mkdir -p "$tmp/src/pt"
printf 'extern int ursa__block(void *, int, void *, void *, unsigned long);\nint planted_pt(void *v) { return ursa__block(v, 0, 0, 0, 0); }\n' > "$tmp/planted_pt.c"
${CC:-cc} -c "$tmp/planted_pt.c" -o "$tmp/src/pt/planted_pt.c.o" 2>/dev/null || { echo "self-test: cannot compile (CC=${CC:-cc})"; exit 1; }
out=$(check "$root/include" "$@" "$tmp/src/pt/planted_pt.c.o")
case "$out" in *"src/pt/planted_pt.c.o (an optional layer) uses ursa__block"*) ;; *) echo "self-test: an optional layer's use of an internal was not found"; fails=1 ;; esac
[ $fails -eq 0 ] && echo "layering self-test passed: a planted upward call, a planted public internal name and a planted internal call from src/pt/ each fail the check"
exit $fails
