# toolchain-aarch64-linux-gnu.cmake - cross-compile ursa for AArch64 Linux (glibc) on another host.
#
# Uses Debian's cross toolchain (gcc-aarch64-linux-gnu, libc6-dev-arm64-cross) and runs the test
# binaries under user-mode QEMU (qemu-user), so ctest works on an x86-64 machine:
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64-linux-gnu.cmake
#   cmake --build build-aarch64 && ctest --test-dir build-aarch64 --output-on-failure
# scripts/test-aarch64.sh does all of this, installing the packages when they are missing.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(URSA_CROSS_TRIPLE aarch64-linux-gnu)
set(URSA_CROSS_SYSROOT /usr/${URSA_CROSS_TRIPLE})

set(CMAKE_C_COMPILER ${URSA_CROSS_TRIPLE}-gcc)
set(CMAKE_ASM_COMPILER ${URSA_CROSS_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${URSA_CROSS_TRIPLE}-g++)

# Look for libraries and headers in the target's tree only; programs come from the host.
set(CMAKE_FIND_ROOT_PATH ${URSA_CROSS_SYSROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# add_test() commands that name an executable target are run through this (ctest, try_run).
find_program(URSA_QEMU_AARCH64 NAMES qemu-aarch64 qemu-aarch64-static)
if(NOT URSA_QEMU_AARCH64)
  set(URSA_QEMU_AARCH64 qemu-aarch64)
endif()
set(CMAKE_CROSSCOMPILING_EMULATOR ${URSA_QEMU_AARCH64} -L ${URSA_CROSS_SYSROOT})
