# The two commands of README.  Both install what they need (scripts/setup.sh) on Debian.
#   make test          build and run every test, in the plain, ASan+UBSan, ucontext and TSan builds
#   make bench         the benchmark report (results/ and the terminal); FULL=1 for the papers' sizes
# Also: make test-quick (plain build only), make install PREFIX=..., make clean.
PREFIX ?= /usr/local

.PHONY: test test-quick bench install clean

test:
	@bash scripts/setup.sh test
	@bash scripts/run-tests.sh

test-quick:
	@bash scripts/setup.sh test
	@bash scripts/run-tests.sh plain

bench:
	@bash scripts/setup.sh bench
	@cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=Release -DURSA_BUILD_TESTS=OFF >build-release.configure.log 2>&1 || (cat build-release.configure.log; exit 1)
	@ninja -C build-release >build-release.build.log 2>&1 || (cat build-release.build.log; exit 1)
	@python3 bench/run.py --build build-release $(if $(FULL),--runs 10,)
	@python3 bench/models_suite.py --build build-release $(if $(FULL),--full,)
	@python3 bench/apps_suite.py --build build-release $(if $(FULL),--full,--quick)

install:
	@cmake -S . -B build-install -G Ninja -DCMAKE_BUILD_TYPE=Release -DURSA_BUILD_TESTS=OFF -DURSA_BUILD_BENCH=OFF -DCMAKE_INSTALL_PREFIX=$(PREFIX) >/dev/null
	@ninja -C build-install install

clean:
	rm -rf build build-* results/*.tmp
