#!/usr/bin/env bash
# scripts/setup.sh test|bench - installs what `make test` or `make bench` needs on Debian,
# idempotently and quietly: only missing packages are installed, and apt's index is refreshed only
# when something is missing.  Says clearly what cannot be had.
# bench: the peers (Boost.Context, GNU Pth, Go) are optional: one that cannot be installed makes
# configure skip it and bench/run.py report it as "missing (<reason>)".  Go comes from golang-go
# only when no `go` is on PATH already (a newer toolchain installed by hand is used as it is).
set -u
what=${1:-test}

need=(cmake ninja-build gcc make python3 pkg-config)
case "$what" in
  test)  need+=(binutils valgrind clang libclang-rt-14-dev gdb spin libunwind-dev) ;;  # nm: symbols; spin: model/; libunwind: dump backtraces
  bench) need+=(g++ libboost-context-dev libpth-dev)
         command -v go >/dev/null 2>&1 || need+=(golang-go) ;;
  *) echo "usage: $0 test|bench" >&2; exit 2 ;;
esac
optional=(libboost-context-dev libpth-dev golang-go spin libunwind-dev)  # peers: the report says "missing"; spin: model check skips

missing=()
for p in "${need[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
  echo "ursa setup: cannot install ${missing[*]}: apt-get not found (not Debian?); install them by hand" >&2
  exit 1
fi
sudo=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then sudo="sudo -n"; else
    echo "ursa setup: need root to install ${missing[*]} (run as root or install them by hand)" >&2
    exit 1
  fi
fi
echo "ursa setup: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >/dev/null 2>&1 || echo "ursa setup: apt-get update failed; trying the cached index" >&2
if ! $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1; then
  # Install one by one, so that one package that cannot be had does not block the others.
  failed=()
  for p in "${missing[@]}"; do
    $sudo apt-get install -y -qq --no-install-recommends "$p" >/dev/null 2>&1 || failed+=("$p")
  done
  hard=()
  for p in "${failed[@]}"; do
    if [[ " ${optional[*]} " == *" $p "* ]]; then
      case $p in
        spin) echo "ursa setup: could not install spin: the model check will be skipped" >&2 ;;
        libunwind-dev) echo "ursa setup: could not install libunwind-dev: ursa_dump prints no backtraces" >&2 ;;
        *)    echo "ursa setup: could not install $p: the benchmarks that need it will show as missing" >&2 ;;
      esac
    else
      hard+=("$p")
    fi
  done
  if [ ${#hard[@]} -gt 0 ]; then
    echo "ursa setup: could not install ${hard[*]}; install them by hand and retry" >&2
    exit 1
  fi
fi
exit 0
