#!/usr/bin/env bash
# scripts/run-tests.sh [config...] - builds ursa in each configuration and runs every test with
# CTest (each test in its own process, under a timeout).  Configurations:
#   model     Spin model check of the rotator's sleep/wake protocol (scripts/check-model.sh,
#             model/README.md); one test.  Skipped, and not counted, when spin cannot be had.
#   plain     gcc, asm context switch, -Werror
#   debug     -O0 with ursa's internal invariant checks (URSA_ASSERT, -DURSA_DEBUG) on
#   asan      AddressSanitizer + UndefinedBehaviorSanitizer
#   ucontext  the portable ucontext context switch
#   tsan      ThreadSanitizer
#   valgrind  the plain build, each test run under Valgrind memcheck (stacks registered)
#   hard      allocation-failure injection (-DURSA_TEST_HARD=ON): every allocation and mapping of
#             a scenario fails in turn; errors must be -ENOMEM/-EAGAIN and nothing may leak;
#             with several VPs also a random run-queue order and a migration at every yield and
#             wake-up (URSA_SEED, printed per test, replays the choices; src/sched/vp.c)
#   clang     the plain build with clang
#   clang-asan  ASan+UBSan with clang
#   clang-tsan, clang-valgrind, clang-hard   the tsan, valgrind and hard builds with clang
#   aarch64   cross-built for AArch64 and run under qemu-aarch64 (scripts/test-aarch64.sh; skipped
#             with a message when the cross tools cannot be installed)
# Default: all fourteen, model first (gcc and clang each in plain, ASan+UBSan, TSan, Valgrind
# and hard).  Exits non-zero if any build or test fails; the last line sums
# them up.
set -u
cd "$(dirname "$0")/.."
configs=("$@")
[ ${#configs[@]} -eq 0 ] && configs=(model plain debug asan ucontext tsan valgrind hard clang clang-asan clang-tsan clang-valgrind clang-hard aarch64)

total_pass=0; total_fail=0; bad=()
for c in "${configs[@]}"; do
  if [ "$c" = model ]; then
    echo "==== ursa tests: model configuration (spin, model/rotator.pml) ===="
    bash scripts/check-model.sh 2>&1 | tee build-model.log
    rc=${PIPESTATUS[0]}
    if [ "$rc" -ne 0 ]; then total_fail=$((total_fail + 1)); bad+=("model: scripts/check-model.sh failed")
    elif ! grep -q "^model check skipped" build-model.log; then total_pass=$((total_pass + 1)); fi
    continue
  fi
  if [ "$c" = aarch64 ]; then
    echo "==== ursa tests: aarch64 configuration (build-aarch64, under qemu) ===="
    log=build-aarch64.ctest.log
    bash scripts/test-aarch64.sh 2>&1 | tee "$log" | grep -vE "^ *[0-9]+/[0-9]+ Test +#[0-9]+: .* Passed"
    rc=${PIPESTATUS[0]}
    line=$(grep -E "tests passed, [0-9]+ tests? failed out of [0-9]+" "$log" | head -1)
    if [ -n "$line" ]; then
      n=$(echo "$line" | sed -E 's/.*out of ([0-9]+).*/\1/')
      f=$(echo "$line" | sed -E 's/.*passed, ([0-9]+) tests? failed.*/\1/')
      total_pass=$((total_pass + n - f)); total_fail=$((total_fail + f))
    fi
    if [ "$rc" -ne 0 ]; then bad+=("aarch64: scripts/test-aarch64.sh failed"); fi
    continue
  fi
  case "$c" in
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
                           -DURSA_VALGRIND=ON "-DURSA_TEST_WRAPPER=valgrind;--error-exitcode=9;-q") ;;
    clang-hard) flags=(-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DURSA_TEST_HARD=ON) ;;
    valgrind) flags=(-DURSA_VALGRIND=ON "-DURSA_TEST_WRAPPER=valgrind;--error-exitcode=9;-q") ;;
    *) echo "unknown configuration $c" >&2; exit 2 ;;
  esac
  dir="build-test-$c"
  echo "==== ursa tests: $c configuration ($dir) ===="
  if ! cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DURSA_WERROR=ON \
         -DURSA_BUILD_BENCH=OFF "${flags[@]}" >"$dir.configure.log" 2>&1; then
    cat "$dir.configure.log"; bad+=("$c: configure"); continue
  fi
  if ! ninja -C "$dir" >"$dir.build.log" 2>&1; then
    cat "$dir.build.log"; bad+=("$c: build"); continue
  fi
  log="$dir/ctest.log"
  (cd "$dir" && ctest --output-on-failure -j2 2>&1) | tee "$log" | grep -vE "^ *[0-9]+/[0-9]+ Test +#[0-9]+: .* Passed" 
  line=$(grep -E "tests passed, [0-9]+ tests? failed out of [0-9]+" "$log" | tail -1)
  n=$(echo "$line" | sed -E 's/.*out of ([0-9]+).*/\1/')
  f=$(echo "$line" | sed -E 's/.*passed, ([0-9]+) tests? failed.*/\1/')
  if [ -z "$line" ]; then bad+=("$c: ctest did not finish"); continue; fi
  total_pass=$((total_pass + n - f)); total_fail=$((total_fail + f))
  [ "$f" -eq 0 ] || bad+=("$c: $f failed")
done
echo "==== ursa tests: configurations ${configs[*]} ===="
for b in "${bad[@]}"; do echo "FAILED: $b"; done
echo "total: $total_pass passed, $total_fail failed"
[ ${#bad[@]} -eq 0 ]
