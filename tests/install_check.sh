#!/usr/bin/env bash
# tests/install_check.sh BUILD_DIR SOURCE_DIR - installs the build into a scratch prefix and checks
# that (1) libursa.so exports ursa_ symbols only, (2) a CMake project finds it with
# find_package(ursa), (3) pkg-config finds it; both consumers build and run examples/hello.c, and
# (4) both hand -fstack-clash-protection to the consumer when the build offers it
# (URSA_STACK_CLASH_PROTECTION and a compiler that knows the flag).
set -eu
build=$1; src=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
lib=$(ls "$tmp"/prefix/lib*/libursa.so | head -1)
bad=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | grep -v '^ursa_' || true)
if [ -n "$bad" ]; then echo "exported symbols without the ursa_ prefix:"; echo "$bad"; exit 1; fi
mkdir -p "$tmp/consumer"
cat > "$tmp/consumer/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.20)
project(consumer C)
find_package(ursa REQUIRED)
add_executable(hello_shared hello.c)
target_link_libraries(hello_shared PRIVATE ursa::ursa)
add_executable(hello_static hello.c)
target_link_libraries(hello_static PRIVATE ursa::ursa_static)
CM
cp "$src/examples/hello.c" "$tmp/consumer/"
cmake -S "$tmp/consumer" -B "$tmp/consumer/build" -G Ninja -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
ninja -C "$tmp/consumer/build" >/dev/null
expected=$'hello from thread 2\nworker returned 42'
[ "$("$tmp/consumer/build/hello_static")" = "$expected" ]
[ "$(LD_LIBRARY_PATH=$(dirname "$lib") "$tmp/consumer/build/hello_shared")" = "$expected" ]
# The header alone: strict C11, and C++ when a C++ compiler is there.
printf '#include <ursa.h>\nint main(void) { return ursa_self() != URSA_THREAD_NULL; }\n' > "$tmp/h.c"
cc -std=c11 -pedantic -Wall -Wextra -Werror -fsyntax-only -I"$tmp/prefix/include" "$tmp/h.c"
printf '#include <ursa/pt.h>\nstatic URSA_PT_THREAD(f(struct ursa_pt *pt)) { URSA_PT_BEGIN(pt); URSA_PT_YIELD(pt); URSA_PT_END(pt); }\nint main(void) { struct ursa_pt p; URSA_PT_INIT(&p); return f(&p) == URSA_PT_YIELDED ? 0 : 1; }\n' > "$tmp/pt.c"
cc -std=c11 -Wall -Wextra -Werror -I"$tmp/prefix/include" "$tmp/pt.c" -o "$tmp/pt" && "$tmp/pt"
if command -v c++ >/dev/null 2>&1; then
  cp "$tmp/h.c" "$tmp/h.cpp"
  c++ -std=c++11 -Wall -Wextra -Werror -fsyntax-only -I"$tmp/prefix/include" "$tmp/h.cpp"
fi
pc_dir=$(dirname "$lib")/pkgconfig
cc "$src/examples/hello.c" -o "$tmp/hello_pc" $(PKG_CONFIG_PATH="$pc_dir" pkg-config --cflags --libs ursa) \
   -Wl,-rpath,"$(dirname "$lib")"
[ "$("$tmp/hello_pc")" = "$expected" ]
ccomp=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")
if ! grep -q '^URSA_STACK_CLASH_PROTECTION:BOOL=OFF' "$build/CMakeCache.txt" &&
   echo 'int x;' | "${ccomp:-cc}" -fstack-clash-protection -Werror -x c -c -o /dev/null - 2>/dev/null; then
  PKG_CONFIG_PATH="$pc_dir" pkg-config --cflags ursa | grep -q -- -fstack-clash-protection ||
    { echo "pkg-config --cflags ursa lacks -fstack-clash-protection"; exit 1; }
  ninja -C "$tmp/consumer/build" -t commands hello_shared | grep -q -- -fstack-clash-protection ||
    { echo "find_package(ursa)'s ursa::ursa does not add -fstack-clash-protection"; exit 1; }
fi
echo "install check: exports, strict C11/C++ header, find_package(ursa) and pkg-config all good"
