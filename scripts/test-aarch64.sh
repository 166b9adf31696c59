#!/usr/bin/env bash
# test-aarch64.sh - build ursa for AArch64 with Debian's cross toolchain and run every test under
# user-mode QEMU, on any (x86-64) Debian machine.
#
#   1. installs what is missing (gcc-aarch64-linux-gnu, qemu-user, cmake) with apt-get, quietly;
#      when they cannot be had (no apt-get, not root, no network) it prints
#      "test-aarch64: SKIP: <reason>" and exits 0 (scripts/run-tests.sh reports that as NOT RUN);
#   2. configures build-aarch64 with cmake/toolchain-aarch64-linux-gnu.cmake (tests under
#      qemu-aarch64 through CMAKE_CROSSCOMPILING_EMULATOR; URSA_TEST_TIMEOUT_FACTOR, when set,
#      multiplies the tests' timeouts), builds, runs ctest; the tests that cannot pass under
#      qemu-user are not run, each named with "test-aarch64: not run: <test>: <reason>";
#   3. builds tests/arch/arm64_regs.c with src/arch/switch_arm64_aapcs_elf_gas.S and runs it under
#      qemu: every callee-saved register and FPCR must survive ursa__ctx_jump ("test-aarch64: check
#      passed: <what>" or "check FAILED: <what>" for each of its three builds).
# Exits non-zero when a build or a test fails.
set -uo pipefail
cd "$(dirname "$0")/.."

TRIPLE=aarch64-linux-gnu
SYSROOT=/usr/$TRIPLE
BUILD=build-aarch64

log() { printf 'test-aarch64: %s\n' "$*"; }
skip() { log "SKIP: $*"; exit 0; }

# ---- 1. what is needed, installed only when missing -------------------------------------------
qemu_bin() { command -v qemu-aarch64 || command -v qemu-aarch64-static; }
missing=()
command -v cmake >/dev/null || missing+=(cmake)
command -v "$TRIPLE-gcc" >/dev/null || missing+=("gcc-$TRIPLE")
[ -e "$SYSROOT/include/stdio.h" ] && [ -e "$SYSROOT/lib/ld-linux-aarch64.so.1" ] \
  || missing+=(libc6-dev-arm64-cross)
qemu_bin >/dev/null || missing+=(qemu-user)

if [ ${#missing[@]} -gt 0 ]; then
  command -v apt-get >/dev/null || skip "missing ${missing[*]} and no apt-get to install them"
  SUDO=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then SUDO=(sudo -n)
    else skip "missing ${missing[*]}; installing needs root (or password-less sudo)"; fi
  fi
  log "installing ${missing[*]}"
  apt_log=$(mktemp)
  if ! { "${SUDO[@]}" apt-get update -qq &&
         "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
           --no-install-recommends "${missing[@]}"; } >"$apt_log" 2>&1; then
    tail -n 5 "$apt_log" | sed 's/^/  apt: /'
    rm -f "$apt_log"
    skip "could not install ${missing[*]}"
  fi
  rm -f "$apt_log"
  command -v "$TRIPLE-gcc" >/dev/null && qemu_bin >/dev/null \
    || skip "installed, but $TRIPLE-gcc or qemu-aarch64 is still missing"
fi
QEMU=$(qemu_bin)
log "$("$TRIPLE-gcc" --version | head -n 1); $("$QEMU" --version | head -n 1)"

# ---- 2. the project's build and test suite under qemu ----------------------------------------
status=0
factor=()
[ -n "${URSA_TEST_TIMEOUT_FACTOR:-}" ] && factor=(-DURSA_TEST_TIMEOUT_FACTOR="$URSA_TEST_TIMEOUT_FACTOR")
if ! cmake -S . -B "$BUILD" -DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/toolchain-$TRIPLE.cmake" \
       -DURSA_BUILD_BENCH=OFF -DURSA_WERROR=ON "${factor[@]}" >"$BUILD.configure.log" 2>&1; then
  cat "$BUILD.configure.log"; log "FAILED: configure"; exit 1
fi
if ! cmake --build "$BUILD" -j "$(nproc)" >"$BUILD.build.log" 2>&1; then
  cat "$BUILD.build.log"; log "FAILED: build"; exit 1
fi

# Tests that cannot pass in this cross build under qemu-user (7.2, Debian 12) whatever ursa does:
# the emulator or the host, not the code, is what they would test.  They are not run, and each is
# named with its reason (run-tests.sh counts them as skipped).  URSA_QEMU_EXCLUDE='' runs them all
# the same; URSA_QEMU_EXCLUDE=REGEX leaves out the tests it matches instead.
#   stack_overflow_report, stack_guard_costs_no_vma: qemu's madvise() returns 0 for
#     MADV_GUARD_INSTALL without passing it to the kernel, so stacks get no guard page: the overflow
#     faults somewhere below the stack (uncaught SIGSEGV), and the VMA count passes vacuously.
#     stack_overflow_report is run again below with URSA_GUARD=mprotect, which qemu does emulate.
#   badinput_create_huge_stack, badinput_create_64tib_stack: qemu ignores setrlimit/prlimit
#     (RLIMIT_AS) (it would limit qemu itself), so the 1 TiB stack is mapped instead of failing
#     with -EAGAIN (30 s of page bookkeeping in qemu), and for the 64 TiB one qemu's bookkeeping
#     grows past 24 GB until the OOM killer ends it: never run that one under qemu-user.
#   stack_warm_pool_needs_no_mmap, hardening_init_under_rlimit_as: cap RLIMIT_AS, which qemu
#     ignores, so the creations or the init they expect to fail succeed.
#   hardening_large_frame_hits_guard: needs a guard page (see stack_overflow_report).
#   stack_vma_limit_is_an_error: qemu's own allocator fails (GSlice) before the guest's mappings
#     reach vm.max_map_count.
#   stack_huge_costs_what_it_touches: measures the process's RSS, which under qemu-user is the
#     emulator's (it maps and touches guest memory of its own).
#   install_find_package_pkgconfig (tests/install_check.sh): builds its consumers with the host's
#     cc and cmake, without the toolchain file, so they cannot link the AArch64 libursa.
NOT_RUN=(   # test | reason
  "stack_overflow_report|qemu-user ignores MADV_GUARD_INSTALL (no guard pages)"
  "stack_guard_costs_no_vma|qemu-user ignores MADV_GUARD_INSTALL (no guard pages)"
  "badinput_create_huge_stack|qemu-user ignores RLIMIT_AS"
  "badinput_create_64tib_stack|qemu-user ignores RLIMIT_AS"
  "stack_warm_pool_needs_no_mmap|qemu-user ignores RLIMIT_AS"
  "hardening_init_under_rlimit_as|qemu-user ignores RLIMIT_AS"
  "hardening_large_frame_hits_guard|qemu-user ignores MADV_GUARD_INSTALL (no guard pages)"
  "stack_vma_limit_is_an_error|qemu-user runs out of its own memory before the guest reaches vm.max_map_count"
  "stack_huge_costs_what_it_touches|under qemu-user the RSS is the emulator's, which maps guest memory itself"
  "install_find_package_pkgconfig|its consumers, built for the host, cannot link the AArch64 library"
)
EXCLUDE_DEFAULT=$(printf '%s\n' "${NOT_RUN[@]}" | cut -d'|' -f1 | paste -sd'|')
EXCLUDE_DEFAULT="^($EXCLUDE_DEFAULT)\$"
EXCLUDE=${URSA_QEMU_EXCLUDE-$EXCLUDE_DEFAULT}
ctest_args=(--test-dir "$BUILD" --output-on-failure -j "$(nproc)")
if [ -n "$EXCLUDE" ]; then
  ctest_args+=(-E "$EXCLUDE")
  # "  Test  #12: name" for each registered test the expression matches
  ctest --test-dir "$BUILD" -N -R "$EXCLUDE" | sed -nE 's/^ *Test +#[0-9]+: +([^ ]+).*/\1/p' |
  while read -r t; do
    why="excluded by URSA_QEMU_EXCLUDE"
    for e in "${NOT_RUN[@]}"; do [ "${e%%|*}" = "$t" ] && why=${e#*|}; done
    log "not run: $t: $why"
  done
fi
ctest "${ctest_args[@]}" || { status=1; log "FAILED: ctest"; }
# The rerun below replaces ctest's LastTest.log: keep the main run's (run-tests.sh reads the skipped
# tests' reasons from it).
cp "$BUILD/Testing/Temporary/LastTest.log" "$BUILD/Testing/Temporary/LastTest-main.log" 2>/dev/null
if [ -n "$EXCLUDE" ] &&
   ctest --test-dir "$BUILD" -N -R '^stack_overflow_report$' | grep -q 'Total Tests: 1'; then
  log "stack_overflow_report with URSA_GUARD=mprotect guard pages"
  URSA_GUARD=mprotect ctest --test-dir "$BUILD" --output-on-failure -R '^stack_overflow_report$' \
    || { status=1; log "FAILED: ctest stack_overflow_report (URSA_GUARD=mprotect)"; }
fi

# ---- 3. the register check, at two optimisation levels --------------------------------------
WARN=(-Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Werror)
for opt in -O0 -O2; do
  exe="$BUILD/arm64_regs$opt"
  if ! "$TRIPLE-gcc" -std=c11 -g "$opt" "${WARN[@]}" -o "$exe" tests/arch/arm64_regs.c \
         src/arch/switch_arm64_aapcs_elf_gas.S; then
    status=1; log "check FAILED: arm64_regs $opt (does not build)"; continue
  fi
  printf '%s ' "[$opt]"
  if "$QEMU" -L "$SYSROOT" "$exe"; then log "check passed: arm64_regs $opt"
  else status=1; log "check FAILED: arm64_regs $opt"; fi
done

# ---- 4. the same check with BTI enforced ---------------------------------------------------------
# With -mbranch-protection=standard the .S must carry BTI landing pads and the GNU property note.
# Debian 12's crt files have no BTI note, so the check goes into a shared library linked without
# them (only BTI-marked inputs: the library keeps the note) and a plain executable calls it; qemu
# then enforces BTI on the library's pages, as the kernel does on a BTI core.
bti_dir="$BUILD/arm64_regs_bti"
mkdir -p "$bti_dir"
if "$TRIPLE-gcc" -std=c11 -g -O2 -fPIC -mbranch-protection=standard -Dmain=arm64_regs_main \
     -shared -nostartfiles -o "$bti_dir/libarm64_regs.so" tests/arch/arm64_regs.c \
     src/arch/switch_arm64_aapcs_elf_gas.S &&
   printf 'int arm64_regs_main(void);\nint main(void) { return arm64_regs_main(); }\n' \
     >"$bti_dir/main.c" &&
   "$TRIPLE-gcc" -O2 -o "$bti_dir/arm64_regs" "$bti_dir/main.c" -L"$bti_dir" -larm64_regs \
     -Wl,-rpath,"$PWD/$bti_dir"; then
  if "$TRIPLE-readelf" -n "$bti_dir/libarm64_regs.so" | grep -q 'AArch64 feature: BTI'; then
    printf '%s ' "[BTI]"
    if "$QEMU" -L "$SYSROOT" "$bti_dir/arm64_regs"; then log "check passed: arm64_regs with BTI"
    else status=1; log "check FAILED: arm64_regs with BTI"; fi
  else
    status=1; log "check FAILED: arm64_regs with BTI: the library lost the BTI note (an input without it: the .S?)"
  fi
else
  status=1; log "check FAILED: arm64_regs with BTI (does not build)"
fi

if [ "$status" -eq 0 ]; then log "all passed under $(basename "$QEMU")"; else log "FAILED"; fi
exit "$status"
