#!/usr/bin/env bash
# scripts/setup.sh test|bench|posix-suite - installs what `make test`, `make bench` or
# `make posix-suite` needs on Debian, idempotently and quietly: only missing packages are
# installed, and apt's index is refreshed only when something is missing.  Says clearly what
# cannot be had.
# bench: the peers (Boost.Context, GNU Pth, Go, nginx) and wrk are optional: one that cannot be installed makes
# configure skip it and bench/run.py report it as "missing (<reason>)".  Go comes from golang-go
# only when no `go` is on PATH already (a newer toolchain installed by hand is used as it is).
# bench also makes the Python virtual environment .venv/ at the repository root with matplotlib
# (from PyPI, by pip) for bench/report.py's plots; it is skipped when .venv/bin/python already
# imports matplotlib.  Without it `make bench` still runs and its report says "plots missing:
# <reason>" (the reason is left in .venv.failed).  Exit status: 0, or 1 when a required package
# cannot be installed; an optional one (a peer, spin, python3-venv, matplotlib) never fails it.
set -u
what=${1:-test}
root=$(cd "$(dirname "$0")/.." && pwd)

need=(cmake ninja-build gcc make python3 pkg-config)
case "$what" in
  test)  need+=(binutils g++ valgrind clang libclang-rt-14-dev gdb spin libunwind-dev liburing-dev mpich libmpich-dev openmpi-bin libopenmpi-dev) ;;  # nm: symbols; g++: the pthread layer's C++ test; spin: model/; libunwind: dump backtraces; liburing: the io_uring engine; mpich: the MPI layer (src/dist/)
  posix-suite) need+=(binutils curl) ;;   # nm: which tests have a main; curl: the suite's tarball
  bench) need+=(g++ libboost-context-dev libboost-fiber-dev libpth-dev liburing-dev mpich libmpich-dev wrk nginx-light)  # wrk, nginx: the load phase
         command -v go >/dev/null 2>&1 || need+=(golang-go)
         # venv + ensurepip: in python3-venv on Debian's python3, built in elsewhere (pyenv, say)
         python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need+=(python3-venv) ;;
  *) echo "usage: $0 test|bench|posix-suite" >&2; exit 2 ;;
esac
optional=(libboost-context-dev libboost-fiber-dev libpth-dev golang-go spin python3-venv libunwind-dev liburing-dev mpich libmpich-dev openmpi-bin libopenmpi-dev wrk nginx-light)  # peers: the report says "missing";
                                          # liburing-dev: without it ursa builds with the epoll engine only (CMake says so);
                                          # spin: the model check skips; python3-venv: no plots

# Open MPI, the MPI layer's second stack (test only: tests/dist's Open MPI leg, built with
# mpicc.openmpi in build dir dist-openmpi/ of the build tree).  Debian's alternatives would make
# Open MPI the default mpicc/mpiexec (priority 50 against MPICH's 40): the groups mpi, mpirun and
# mpi-<multiarch> are set by hand to MPICH first (manual mode, so installing Open MPI switches
# nothing), and again after.  Optional: without it the leg is skipped with its reason.
pin_mpich() {
  local ma alt
  ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch 2>/dev/null)
  for alt in "mpi /usr/bin/mpicc.mpich" "mpirun /usr/bin/mpirun.mpich" "mpi-$ma /usr/include/$ma/mpich"; do
    set -- $alt
    [ -e "$2" ] || continue
    update-alternatives --query "$1" 2>/dev/null | grep -q "^Value: $2\$" && \
      update-alternatives --query "$1" 2>/dev/null | grep -q "^Status: manual" && continue
    $sudo update-alternatives --quiet --set "$1" "$2" >/dev/null 2>&1 || \
      echo "ursa setup: could not pin the alternative $1 to $2 (MPICH)" >&2
  done
}

# The virtual environment of bench/report.py: .venv/ with matplotlib (bench only; never fails).
bench_venv() {
  local py="$root/.venv/bin/python" log="$root/.venv.failed"
  if [ -x "$py" ] && "$py" -c 'import matplotlib' >/dev/null 2>&1; then rm -f "$log"; return 0; fi
  echo "ursa setup: installing matplotlib into .venv/ (for the plots of make bench)" >&2
  local out
  if [ ! -x "$py" ]; then
    rm -rf "$root/.venv"
    if ! out=$(python3 -m venv "$root/.venv" 2>&1); then
      echo "python3 -m venv failed: $(echo "$out" | tail -n 1) (on Debian: apt-get install python3-venv)" >"$log"
      echo "ursa setup: no matplotlib: $(cat "$log"); the report will have no plots" >&2
      rm -rf "$root/.venv"
      return 0
    fi
  fi
  if ! out=$("$py" -m pip install --quiet --disable-pip-version-check --retries 1 --timeout 60 matplotlib 2>&1) \
     || ! "$py" -c 'import matplotlib' >/dev/null 2>&1; then
    echo "pip install matplotlib into .venv failed: $(echo "$out" | grep -v '^ *$' | tail -n 1)" >"$log"
    echo "ursa setup: no matplotlib: $(cat "$log"); the report will have no plots" >&2
    return 0
  fi
  rm -f "$log"
  return 0
}

missing=()
for p in "${need[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
sudo=""
[ "$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1 && sudo="sudo -n"
if [ ${#missing[@]} -eq 0 ]; then
  [ "$what" = test ] && pin_mpich
  [ "$what" = bench ] && bench_venv
  exit 0
fi

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
pin_mpich                                   # before Open MPI comes: it must not become mpicc
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
        spin) echo "ursa setup: could not install spin: make test reports the model check NOT RUN and fails (URSA_TEST_ALLOW_NOT_RUN=model allows it)" >&2 ;;
        libunwind-dev) echo "ursa setup: could not install libunwind-dev: ursa_dump prints no backtraces" >&2 ;;
        openmpi-bin|libopenmpi-dev) echo "ursa setup: could not install $p: the MPI layer's Open MPI leg is skipped" >&2 ;;
        mpich|libmpich-dev) echo "ursa setup: could not install $p: ursa builds without its MPI layer (libursa-dist), whose tests and benchmarks do not run" >&2 ;;
        python3-venv) echo "ursa setup: could not install python3-venv: the bench report will have no plots" >&2 ;;
        wrk) echo "ursa setup: could not install wrk: the load phase of make bench is not run (reported missing)" >&2 ;;
        nginx-light) echo "ursa setup: could not install nginx-light: the load phase reports nginx as missing" >&2 ;;
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
[ "$what" = test ] && pin_mpich
[ "$what" = bench ] && bench_venv
exit 0
