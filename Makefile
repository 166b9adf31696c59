# The two commands of README.  Both install what they need (scripts/setup.sh) on Debian.
#   make test          build and run every test in 14 configurations (scripts/run-tests.sh)
#   make bench         the benchmark report (results/REPORT.md, results/plots/, the terminal); FULL=1
#                      for the papers' sizes
# Also: make readme-figures RUN=<run> (README's benchmark tables from that make bench run), make test-quick (plain build only), make fuzz (the API fuzzer: URSA_FUZZ_OPS operations,
# default 1,000,000, in the ASan+UBSan build; URSA_FUZZ_SEED replays a seed), make install
# PREFIX=..., make clean, make posix-suite (the Open POSIX Test Suite against the pthread layer:
# scripts/posix-suite.sh; not part of make test: it downloads the suite and takes about 31 minutes).
PREFIX ?= /usr/local

.PHONY: test test-quick fuzz bench readme-figures posix-suite install clean

test:
	@bash scripts/setup.sh test
	@bash scripts/run-tests.sh

test-quick:
	@bash scripts/setup.sh test
	@bash scripts/run-tests.sh plain

# make fuzz: tests/test_fuzz.c's fuzz_api_long in the ASan+UBSan build; it prints its seed first.
fuzz:
	@cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DURSA_SANITIZE=address -DURSA_BUILD_BENCH=OFF >/dev/null
	@ninja -C build-fuzz ursa_tests >/dev/null
	@URSA_FUZZ_OPS=$${URSA_FUZZ_OPS:-1000000} build-fuzz/tests/ursa_tests fuzz_api_long

# make bench: scripts/bench.sh (five phases with progress; results/REPORT.md and results/plots/).
bench:
	@FULL=$(FULL) bash scripts/bench.sh

# make readme-figures RUN=<run> [NOTE="the machine's load, in a few words"]: README's benchmark
# tables and their met/missed labels from results/micro-<RUN>.json (a make bench run; its name is
# the UTC stamp in the file names), through bench/readme_table.py, which also keeps a trimmed copy
# of that report in bench/readme-run/ for the test readme_bench_tables.
readme-figures:
	@if [ -z "$(RUN)" ]; then echo "usage: make readme-figures RUN=<run> [NOTE=...]; runs in results/:" >&2; \
	  ls results/ 2>/dev/null | sed -n 's/^micro-\(.*\)\.json$$/  \1/p' >&2; exit 2; fi
	@python3 bench/readme_table.py --run "$(RUN)" $(if $(NOTE),--note "$(NOTE)")

# make posix-suite: the suite natively and under ursa-run at 1 and 2 VPs, cm and cp-ts
# (build-posix-suite/); exit status 1 when a test passes natively and fails under ursa for a reason
# the script does not list.
posix-suite:
	@bash scripts/setup.sh posix-suite
	@bash scripts/posix-suite.sh

install:
	@cmake -S . -B build-install -G Ninja -DCMAKE_BUILD_TYPE=Release -DURSA_BUILD_TESTS=OFF -DURSA_BUILD_BENCH=OFF -DCMAKE_INSTALL_PREFIX=$(PREFIX) >/dev/null
	@ninja -C build-install install

clean:
	rm -rf build build-* results/*.tmp
