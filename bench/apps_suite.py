#!/usr/bin/env python3
"""apps_suite.py - the papers' applications (issue #5) in the papers' run matrix.

Runs the programs of bench/apps/ (dp, pc, rw, ji, mm, tsp and their *_native builds) under each
of ursa's execution models, the way Keen et al. ("A comparison of concurrent programming and
cooperative multithreading") and Ishihara et al. (Euro-Par 2000) ran their SR programs:

  one VP  (Keen et al. 4.1, Tables VI-IX): the CP-style program under cp-ic (SR_IC) and cp-ts
          (SR_TS), the CM-style program under cm (SR_CM); also the CP-style program under cm (Java's
          "CPonGreen", section 5) and on POSIX threads pinned to one CPU ("CPnatural").
  N VPs   (4.2, Tables X-XIII; N = the CPUs this process may use): CP-style under cp-ic and cp-ts
          at N VPs, PCM-style under pcm (DP: pure regions, DP1, DP2; PC; JI), the CP-style program
          under pcm (the journal paper's PCM PC and RW are "the same code" run by SR_CM on two
          CPUs), and POSIX threads on all CPUs.
  sweeps  (4.3, Tables XIV-XXI): DP and RW under cp-ic with switch counts 1,000 .. 1,000,000 and
          under cp-ts with quanta 10 ms, 20 ms, 1000 ms, "infinite" (10 s, the largest ursa takes:
          no time slice ends within these runs; the papers' fourth column is a quantum of infinity,
          printed "1 msec" by the text extraction, see its footnote), 1 ms and 100 us, on 1 and N VPs.
  plus    xPyCzS 2P2C1S with unnamed and named yield (section 6; Ishihara et al. Figure 2), MM and
          TSP (section 6), and Table XXII: a CM- or PCM-style program must refuse cp-ts and cp-ic.

Every run is checked (exit status and its ANSWER line; bench/apps/apps_common.h describes the
lines), and runs of one application with the same parameters must agree on its deterministic
answer (a digest of the work results, the PC checksum, the JI grid sum and iteration count, the
MM trace, the TSP length, tasks searched and its sequential lower bound on nodes) whatever the
model.  Every run must also be the one its label says
(model_check): the impl (style and model) and VP count of its RESULT and COUNTERS lines, and
counters that fit the model (cm, pcm: no preemption, no tick; cp-ts: no tick; cp-ic: ticks > 0).
The JI early-stop points (JI_STOP_EPS_E9) must stop on eps before their iteration limit.
The cp-ts probes (PROBE_THINK) must count preemptions > 0 in every run: the papers' programs
rarely run a whole 10 ms quantum without switching, so their cp-ts runs may preempt nothing.  A
wrong answer, a failed run or a run of another model than its label makes the exit status 1.  A
model that ursa_init refuses (cp-ts returns -ENOTSUP where its safe points cannot be told apart:
a TSan build, a static executable, a sanitizer runtime linked in) is shown as "refused" in every
cell and in the notes where refusal_policy() allows it (a sanitizer build, static executables);
in a plain dynamic build, such as make bench's, cp-ts must run and a refusal fails the run.

Ratios, as Keen et al. 3.2: CM/CP = T_CM / min(T_cp-ts, T_cp-ic) x 100%, PCM/CP likewise at N VPs;
the Java-style ratio of section 5 is T_CM / min(T_native, T_CPonGreen).

Sizes.  The papers' programs ran seconds to an hour on a 550 MHz Pentium III with fixed counts;
here each (application, work) point has its own count (meals, items, accesses, iterations),
the same for every model, chosen so that a run of the fastest model lasts about 0.1 s (default) or
0.2-0.3 s (full): compare ratios, not seconds.  The three sizes (one vocabulary with the other
suites and scripts/bench.sh):
  default  `make bench`: work 100, 10,000, 1,000,000, JI 128x8 and 256x2, MM 256, TSP 15 cities,
           5 runs per point
  full     `make bench FULL=1` (--full): work 100, 1,000, ... 1,000,000, JI 128x8, 256x2, 512x8,
           MM 512, TSP 16 cities, 5 runs per point, counts twice the default's
  quick    --quick, a smoke run by hand: work 100 and 1,000,000, JI 128x8, MM 256, TSP 15 cities,
           3 runs per point, the default's counts; its figures are indicative only
(--runs overrides the runs per point.)  Runs go round by round over all points (run 1 of every
point, then run 2, ...), so a noisy minute spreads over all of them; medians with min-max.

Usage: python3 bench/apps_suite.py --build <build dir> [--quick | --full] [--runs N]
                                   [--results DIR] [--json PATH] [--only dp,rw,...] [--no-sweeps]
Writes results/apps-<UTC stamp>.json (or --json PATH: machine, command, every run with its answer
and counters, the findings with their ids, and this Markdown) and results/apps-latest.md; prints
the Markdown on stdout and progress (runs done, round, elapsed, time left) on stderr.  Exit status:
0 when every run answered right (a finding that does not hold included), 1 when a run failed,
answered wrong or disagreed with the other models, 2 on a usage error, 130 when interrupted.
Other scripts may call run(build_dir, mode, runs, results_dir) -> (ok, markdown).
Python 3 standard library only.
"""

import argparse
import datetime
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import time

from suite_common import cmake_cache, cpu_model, fmt_time, machine_info, md_table, ncpus, phase_label, write_json

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
LINE_RE = re.compile(r"^(RESULT|ANSWER|COUNTERS|REFUSED)((?: [A-Za-z0-9_]+=\S*)+)\s*$")
APPS = ("dp", "pc", "rw", "ji", "mm", "tsp")
TIMEOUT = 120
COUNTER_KEYS = ("switches", "yields", "p_ops", "p_blocking", "blocks", "preemptions",
                "preempt_deferred", "ticks", "migrations")
# the deterministic part of each application's answer (the same for every style and model)
ANSWER_KEYS = {"dp": ("digest", "meals_eaten"), "pc": ("checksum", "consumed"),
               "rw": ("digest", "version"), "ji": ("iterations", "sum"), "mm": ("trace",),
               "tsp": ("length", "tasks_done", "nodes_lower_bound")}

# The cp-ts probe, one point per VP count: dp --style cp with PROBE_PHIL philosophers who think
# PROBE_THINK iterations of the work loop each (at ~1-2 ns an iteration, 3 to 6 quanta of 10 ms) and
# eat once.  They are all ready at once and never block while thinking, so under cp-ts each VP must
# switch some thinker out at the end of a whole quantum: every run must count preemptions > 0, or
# cp-ts did not run as labelled.  (The papers' programs here mostly switch or block well within a
# 10 ms quantum, so a cp-ts run of them may legitimately count no preemption at all.)
PROBE_PHIL = 4
PROBE_THINK = 30_000_000

# The JI early-stop points, one per VP count and barrier style: ji 128x8 with --eps-e9 JI_STOP_EPS_E9
# (the largest change falls below 5e-4 after 484 iterations, well within the 128x8 test's count).
# Every run must say stopped_early=1 and agree with the sequential reference on the iteration count
# and the grid: the other JI points run with eps 0, so their stopping rule never runs.
JI_STOP_EPS_E9 = 500_000

SWITCH_COUNTS = (1_000, 10_000, 100_000, 1_000_000)
QUANTA_US = (10_000, 20_000, 1_000_000, 10_000_000, 1_000, 100)
QUANTUM_NAME = {10_000: "10 ms", 20_000: "20 ms", 1_000_000: "1000 ms", 10_000_000: "inf (10 s)",
                1_000: "1 ms", 100: "100 us"}

# ---- the papers' figures ------------------------------------------------------------------------
# Keen et al., SR on a 550 MHz Pentium III (single or dual): seconds and ratios as printed.
# VI-IX, XI-XIII: (SR_IC, SR_TS, SR_CM, CM/CP %); X: (IC, TS, DP1, DP1 PCM/CP, DP2, DP2 PCM/CP).
PAPER = {
    "VI": {100: (0.42, 2.00, 0.13, 30.95), 1000: (3.69, 3.18, 1.19, 37.42),
           10000: (33.41, 13.73, 11.73, 85.43), 100000: (318.39, 119.41, 117.13, 98.09),
           1000000: (3166.19, 1175.76, 1171.12, 99.60)},
    "VII": {100: (2.32, 2.27, 2.19, 96.47), 1000: (22.95, 21.72, 21.61, 99.49),
            10000: (229.09, 216.24, 215.76, 99.77), 100000: (2296.20, 2161.61, 2157.51, 99.81)},
    "VIII": {100: (0.85, 0.49, 0.44, 89.79), 1000: (0.93, 0.87, 0.49, 56.32),
             10000: (1.75, 2.19, 1.02, 58.28), 100000: (10.09, 14.61, 6.37, 63.13),
             1000000: (93.01, 141.20, 59.81, 64.30)},
    "IX": {"128x8": (3.72, 3.81, 3.71, 99.73), "256x2": (19.25, 18.80, 18.47, 98.24),
           "512x8": (77.59, 77.17, 73.11, 94.73)},
    "X": {100: (0.93, 3.49, 0.56, 60.21, 0.59, 63.44), 1000: (3.72, 4.59, 0.81, 21.77, 0.88, 23.65),
          10000: (31.60, 12.69, 6.09, 47.99, 6.26, 49.33),
          100000: (299.82, 63.56, 59.17, 93.09, 62.41, 98.19),
          1000000: (2977.32, 600.64, 590.49, 98.31, 595.61, 99.16)},
    "XI": {100: (1.43, 1.87, 1.25, 87.41), 1000: (12.04, 11.88, 10.91, 91.83),
           10000: (123.40, 110.59, 108.85, 98.42), 100000: (1163.44, 1094.92, 1080.14, 98.65)},
    "XII": {100: (1.35, 1.39, 0.60, 44.44), 1000: (1.49, 1.52, 0.65, 43.62),
            10000: (2.81, 3.30, 1.33, 47.33), 100000: (16.04, 19.95, 7.92, 49.38),
            1000000: (155.80, 186.20, 73.86, 47.41)},
    "XIII": {"128x8": (4.30, 4.21, 2.66, 63.18), "256x2": (13.79, 14.13, 13.68, 99.20),
             "512x8": (48.18, 47.95, 43.84, 91.42)},
    # 4.3: SR_IC at switch counts 1,000 / 10,000 / 100,000 / 1,000,000
    "XIV": {100: (0.43, 0.42, 0.41, 0.41), 1000: (3.52, 3.68, 3.68, 3.67),
            10000: (33.03, 33.41, 36.33, 36.33), 100000: (328.26, 318.31, 341.32, 356.61),
            1000000: (3271.07, 3165.20, 3203.71, 3385.04)},
    "XV": {100: (0.86, 0.84, 0.84, 0.84), 1000: (0.94, 0.93, 0.94, 0.92),
           10000: (1.78, 1.75, 1.75, 1.75), 100000: (10.16, 10.01, 10.00, 10.00),
           1000000: (94.01, 92.66, 92.53, 92.51)},
    "XVI": {100: (0.89, 0.93, 0.93, 0.94), 1000: (4.06, 3.68, 3.62, 3.56),
            10000: (33.55, 31.47, 31.70, 31.35), 100000: (328.75, 297.81, 305.47, 304.60),
            1000000: (3263.59, 2969.86, 2941.91, 2962.02)},
    "XVII": {100: (1.40, 1.35, 1.33, 1.34), 1000: (1.54, 1.48, 1.46, 1.47),
             10000: (2.89, 2.81, 2.79, 2.78), 100000: (16.33, 16.04, 16.00, 15.99),
             1000000: (150.76, 148.41, 148.08, 148.03)},
    # SR_TS at quanta 10 ms / 20 ms / 1,000 ms / infinity
    "XVIII": {100: (2.00, 1.56, 0.73, 0.75), 1000: (3.18, 3.13, 1.79, 1.80),
              10000: (13.73, 13.76, 12.33, 12.34), 100000: (119.41, 119.19, 119.14, 117.78),
              1000000: (1175.76, 1173.44, 1173.38, 1171.79)},
    "XIX": {100: (0.49, 0.50, 0.31, 0.31), 1000: (0.87, 0.79, 0.33, 0.33),
            10000: (2.19, 2.17, 0.60, 0.60), 100000: (14.61, 14.63, 3.31, 3.30),
            1000000: (141.20, 140.87, 136.29, 30.30)},
    "XX": {100: (3.49, 3.51, 3.53, 2.13), 1000: (4.59, 4.56, 4.56, 3.18),
           10000: (12.69, 12.81, 12.84, 12.90), 100000: (63.56, 63.06, 63.13, 62.72),
           1000000: (600.64, 597.48, 597.46, 596.74)},
    "XXI": {100: (1.39, 1.37, 1.38, 0.69), 1000: (1.52, 1.55, 1.73, 0.76),
            10000: (3.30, 3.29, 3.18, 1.54), 100000: (19.95, 20.07, 20.01, 9.36),
            1000000: (186.20, 186.59, 187.10, 87.74)},
}
# Ishihara et al. Table 1: CM/CP % on one processor (PC is 1P1C1S).
EUROPAR_T1 = {"dp": {100: 20.0, 1000: 44.3, 10000: 52.8, 100000: 53.8, 1000000: 52.9},
              "pc": {100: 92.7, 1000: 92.9, 10000: 93.1, 100000: 93.3, 1000000: 93.1},
              "rw": {100: 77.8, 1000: 74.8, 10000: 70.8, 100000: 69.8, 1000000: 70.2}}
# Keen et al. section 5, Java on one processor: CM / min(CPnatural, CPonGreen) %.
JAVA = {"dp": {100: 51.0, 1000: 89.3, 10000: 98.7, 100000: 99.7},
        "pc": {100: 74.9, 1000: 96.2, 10000: 99.6, 100000: 99.9},
        "rw": {100: 134.6, 1000: 125.0, 10000: 95.6, 100000: 67.5},
        "ji": {"128x8": 98.6, "256x2": 99.5}}
TABLES_1VP = {"dp": "VI", "pc": "VII", "rw": "VIII", "ji": "IX"}
TABLES_NVP = {"dp": "X", "pc": "XI", "rw": "XII", "ji": "XIII"}
SWEEP_TABLES = {("dp", "ic", 1): "XIV", ("rw", "ic", 1): "XV", ("dp", "ic", 2): "XVI",
                ("rw", "ic", 2): "XVII", ("dp", "ts", 1): "XVIII", ("rw", "ts", 1): "XIX",
                ("dp", "ts", 2): "XX", ("rw", "ts", 2): "XXI"}

# ---- implementations: (style arguments, model); None model = the native build -------------------
IMPLS = {
    "ic": (["--style", "cp"], "cp-ic", "CP style under cp-ic (SR_IC)"),
    "ts": (["--style", "cp"], "cp-ts", "CP style under cp-ts (SR_TS)"),
    "cpg": (["--style", "cp"], "cm", "CP style under cm (Java's CPonGreen)"),
    "cpp": (["--style", "cp"], "pcm", "CP style under pcm (the journal's PCM PC and RW: the same code)"),
    "nat": (["--style", "cp"], None, "CP style on POSIX threads (CPnatural)"),
    "cm": (["--style", "cm"], "cm", "CM style under cm (SR_CM)"),
    "cmn": (["--style", "cm", "--yield", "named"], "cm", "CM style, named yield, under cm"),
    "pcm": (["--style", "pcm"], "pcm", "PCM style under pcm (ursa regions)"),
    "dp1": (["--style", "pcm", "--variant", "dp1"], "pcm", "PCM DP1 under pcm"),
    "dp2": (["--style", "pcm", "--variant", "dp2"], "pcm", "PCM DP2 under pcm"),
}
IMPL_HEAD = {"ic": "cp-ic", "ts": "cp-ts", "cpg": "CPonGreen (CP on cm)", "cpp": "CP code on pcm",
             "nat": "native", "cm": "CM", "cmn": "CM named", "pcm": "PCM", "dp1": "DP1", "dp2": "DP2"}


def clamp(v, lo, hi):
    return max(lo, min(hi, int(v)))


def fs(v):
    """Seconds with 3 significant digits, no exponent."""
    if v is None:
        return "-"
    if v <= 0:
        return "0"
    digits = max(0, 2 - int(math.floor(math.log10(v))))
    return f"{v:.{digits}f}"


def fpct(v):
    return "-" if v is None else f"{v:.1f}%"


def fint(v):
    return "-" if v is None else f"{v:,.0f}"


# ---- the plan ---------------------------------------------------------------------------------

class Point:
    """One (program, arguments, environment, CPU set): its runs and their results."""

    def __init__(self, app, impl, vps, row, args, sweep=None):
        style_args, model, _ = IMPLS[impl]
        self.app, self.impl, self.vps, self.row, self.sweep = app, impl, vps, row, sweep
        self.native = model is None
        self.program = app + ("_native" if self.native else "")
        self.args = [str(a) for a in style_args + args]
        self.env = {}
        self.cpus = None
        if self.native:
            if vps == 1:
                self.cpus = [min(os.sched_getaffinity(0))] if hasattr(os, "sched_getaffinity") else None
        else:
            self.env["URSA_MODEL"] = model
            if model != "cm":
                self.env["URSA_VPS"] = str(vps)
        if sweep is not None:
            kind, value = sweep
            self.env["URSA_SWITCH_COUNT" if kind == "sc" else "URSA_QUANTUM_US"] = str(value)
        self.model = model                  # None: the native build
        self.must_preempt = False           # a cp-ts probe: every run must count preemptions
        self.must_stop_early = False        # a JI early-stop point: every run must stop on eps
        self.samples, self.runs = [], []
        self.status, self.reason = "pending", None
        self.est = 0.15

    def expected_impl(self):
        """The impl= its RESULT and COUNTERS lines must print (apps_common.h: <style>-<model>, the
        style with its variant after a dot, or cp-native)."""
        if self.native:
            return "cp-native"
        a = self.args
        style = a[a.index("--style") + 1]
        if "--yield" in a and a[a.index("--yield") + 1] != "unnamed":
            style += "." + a[a.index("--yield") + 1]
        if "--variant" in a and a[a.index("--variant") + 1] != "pure":
            style += "." + a[a.index("--variant") + 1]
        return f"{style}-{self.model}"

    def expected_vps(self):
        """ursa's VP count, or the CPUs the native build may use (1 when pinned)."""
        if self.native:
            return len(self.cpus) if self.cpus else ncpus()
        return 1 if self.model == "cm" else self.vps

    def key(self):
        return (self.program, tuple(self.args), tuple(sorted(self.env.items())),
                tuple(self.cpus) if self.cpus else None)

    def label(self):
        env = " ".join(f"{k}={v}" for k, v in sorted(self.env.items()))
        pin = f"taskset {self.cpus[0]} " if self.cpus else ""
        return f"{env + ' ' if env else ''}{pin}{self.program} {' '.join(self.args)}"

    def median(self):
        return statistics.median(self.samples) if self.status == "ok" and self.samples else None


class Plan:
    def __init__(self, mode, runs, n, only, sweeps):
        self.mode, self.runs, self.n, self.only, self.with_sweeps = mode, runs, n, only, sweeps
        self.points, self.by_key, self.index = [], {}, {}
        full = mode == "full"
        self.works = ([100, 1_000, 10_000, 100_000, 1_000_000] if full else
                      [100, 1_000_000] if mode == "quick" else [100, 10_000, 1_000_000])
        self.sweep_works = self.works
        self.ji_tests = ([(128, 8), (256, 2), (512, 8)] if full else [(128, 8)] if mode == "quick" else
                         [(128, 8), (256, 2)])
        self.mm_n = 512 if full else 256
        self.tsp_cities = 16 if full else 15
        self.pc2_works = [100, 1_000, 10_000, 100_000] if full else [100] if mode == "quick" else [100, 10_000]
        self.vps_list = [1] + ([n] if n > 1 else [])
        self._build()

    # Counts per work size: a run of the fastest model lasts about 0.1 s (default, quick) or 0.2-0.3 s
    # (full) on one CPU, i.e. 10 to 30 quanta of 10 ms.  The same count for every model.
    def budget(self, iterations):
        return int(iterations * (3 if self.mode == "full" else 1.5))

    def dp_meals(self, w):          # 16 philosophers, think + eat = 2 x work per meal
        return clamp(self.budget(48_000_000) // (32 * w), 2, self.budget(3000))

    # At least 24 items: with one producer and one consumer a perfect pipeline on 2 VPs takes
    # items + 1 item-times against 2 x items on one, so the speed-up can be at most
    # 2 items / (items + 1): 1.846x with the 12 items the budget gives work 1,000,000, which capped
    # POSIX threads and ursa alike below issue #20's 1.8 goal; 24 items: 1.92x.
    def pc_items(self, w):          # make + check = 2 x work rounds per item
        return clamp(self.budget(16_000_000) // (2 * w), 24, self.budget(10000))

    def rw_iters(self, w):          # 6 threads, work per access
        return clamp(self.budget(48_000_000) // (6 * w), 8, self.budget(2000))

    def ji_iters(self, n):
        return self.budget({128: 1000, 256: 300, 512: 80}[n])

    def args_for(self, app, row):
        if app == "dp":
            return ["--work", row, "--meals", self.dp_meals(row)]
        if app == "pc":
            return ["--work", row, "--items", self.pc_items(row)]
        if app == "pc2":
            return ["--work", row, "--items", self.pc_items(row) // 2 * 2,
                    "--producers", 2, "--consumers", 2, "--slots", 1]
        if app == "rw":
            return ["--work", row, "--iters", self.rw_iters(row)]
        if app == "ji":
            n, p = (int(x) for x in row.split("x"))
            return ["--n", n, "--procs", p, "--iters", self.ji_iters(n)]
        if app == "mm":
            return ["--n", row, "--procs", 8]
        if app == "tsp":
            return ["--cities", row, "--procs", 8]
        if app == "probe":
            return ["--phil", PROBE_PHIL, "--think", PROBE_THINK, "--eat", 1000, "--meals", 1]
        if app == "jistop":
            return ["--n", 128, "--procs", 8, "--iters", self.ji_iters(128), "--eps-e9", JI_STOP_EPS_E9]
        raise ValueError(app)

    def rows(self, app):
        return {"dp": self.works, "pc": self.works, "rw": self.works,
                "ji": [f"{n}x{p}" for n, p in self.ji_tests], "mm": [self.mm_n],
                "tsp": [self.tsp_cities], "pc2": self.pc2_works}[app]

    def impls(self, app, vps):
        if app == "pc2":
            return ["ic", "ts", "cm", "cmn", "cpg", "nat"]
        if vps == 1:
            extra = ["cmn"] if app == "pc" else []
            if app in ("dp", "pc", "ji"):
                extra = extra + ["pcm"]          # the PCM program with every region on the one VP
            return ["ic", "ts", "cm"] + extra + ["cpg", "nat"]
        extra = {"dp": ["pcm", "dp1", "dp2"], "pc": ["pcm"], "ji": ["pcm"]}.get(app, [])
        return ["ic", "ts"] + extra + ["cpp", "nat"]

    def add(self, app, impl, vps, row, sweep=None):
        real = {"pc2": "pc", "probe": "dp", "jistop": "ji"}.get(app, app)
        p = Point(real, impl, vps, row, self.args_for(app, row), sweep)
        p.est = self.estimate(app, impl, vps, row)
        k = p.key()
        if k in self.by_key:
            p = self.by_key[k]
        else:
            self.by_key[k] = p
            self.points.append(p)
        self.index[(app, impl, vps, row, sweep)] = p
        return p

    def estimate(self, app, impl, vps, row):
        """A priori seconds per run (the progress line corrects it with what it measures)."""
        base = {"dp": 0.09, "pc": 0.12, "pc2": 0.1, "rw": 0.09, "ji": 0.06, "mm": 0.02 if self.mm_n == 256 else 0.15,
                "probe": 0.25 / vps, "jistop": 0.03,
                "tsp": 0.1 if self.tsp_cities == 15 else 0.35}[app]
        if impl == "ic":
            base *= 2.2
        if impl == "nat" and app in ("pc", "pc2", "rw") and isinstance(row, int) and row <= 1000:
            base *= 1.5
        return base

    def _build(self):
        if not self.only or "dp" in self.only:
            for vps in self.vps_list:       # the cp-ts probes: preemption must happen (PROBE_THINK)
                self.add("probe", "ts", vps, "probe").must_preempt = True
        if not self.only or "ji" in self.only:
            for vps in self.vps_list:       # JI's stopping rule: one early stop per VP count and style
                for impl in (["ic", "cm"] if vps == 1 else ["ic", "pcm"]):
                    self.add("jistop", impl, vps, "128x8").must_stop_early = True
        for app in APPS + ("pc2",):
            if self.only and (app if app != "pc2" else "pc") not in self.only:
                continue
            for vps in ([1] if app == "pc2" else self.vps_list):
                for impl in self.impls(app, vps):
                    for row in self.rows(app):
                        self.add(app, impl, vps, row)
        if self.with_sweeps:
            for app in ("dp", "rw"):
                if self.only and app not in self.only:
                    continue
                for vps in self.vps_list:
                    for row in self.sweep_works:
                        for sc in SWITCH_COUNTS:
                            self.add(app, "ic", vps, row, None if sc == 10_000 else ("sc", sc))
                        for q in QUANTA_US:
                            self.add(app, "ts", vps, row, None if q == 10_000 else ("q", q))

    def get(self, app, impl, vps, row, sweep=None):
        if sweep in (("sc", 10_000), ("q", 10_000)):
            sweep = None
        return self.index.get((app, impl, vps, row, sweep))

    def med(self, app, impl, vps, row, sweep=None):
        p = self.get(app, impl, vps, row, sweep)
        return p.median() if p else None


# ---- running ---------------------------------------------------------------------------------

class Progress:
    def __init__(self, plan):
        self.t0 = time.monotonic()
        self.total_runs = len(plan.points) * plan.runs
        self.done_runs = 0
        self.tty = sys.stderr.isatty()
        self.phase = phase_label()      # "bench 4/5 |" under make bench
        self.shown = None               # not a terminal: when the last line was written

    def eta(self, plan, round_no):
        left = 0.0
        for p in plan.points:
            if p.status not in ("pending", "ok"):
                continue
            todo = plan.runs - len(p.runs)
            per = statistics.median([r["secs"] for r in p.runs]) if p.runs else p.est * self.scale(plan)
            left += todo * (per + 0.004)
        return left

    def scale(self, plan):
        est = sum(p.est for p in plan.points if p.runs)
        got = sum(statistics.median([r["secs"] for r in p.runs]) for p in plan.points if p.runs)
        return got / est if est > 0 and got > 0 else 1.0

    def show(self, msg, plan, round_no):
        el = time.monotonic() - self.t0
        left = self.eta(plan, round_no)
        line = (f"[apps {self.done_runs}/{self.total_runs} runs, round {round_no}/{plan.runs}] {msg} "
                f"| {fmt_time(el)} elapsed, ~{fmt_time(left)} left")
        if self.phase:
            line = f"{self.phase} {line}"
        if self.tty:
            sys.stderr.write("\r\033[K" + line[:200])
        elif self.shown is None or time.monotonic() - self.shown >= 10:   # a log: a line every 10 s
            self.shown = time.monotonic()
            sys.stderr.write(line + "\n")
        sys.stderr.flush()

    def note(self, msg):
        if self.tty:
            sys.stderr.write("\r\033[K")
        sys.stderr.write(msg + "\n")
        sys.stderr.flush()


def parse(stdout):
    out = {"RESULT": [], "ANSWER": [], "COUNTERS": [], "REFUSED": []}
    for line in stdout.splitlines():
        m = LINE_RE.match(line.strip())
        if m:
            out[m.group(1)].append(dict(kv.split("=", 1) for kv in m.group(2).split()))
    return out


def clean_env(extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("URSA_")}
    env.update(extra)
    return env


def run_once(path, args, env, cpus):
    pre = None
    if cpus:
        def pre():
            os.sched_setaffinity(0, set(cpus))
    t0 = time.monotonic()
    try:
        cp = subprocess.run([path] + args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, timeout=TIMEOUT, preexec_fn=pre)
        return cp.returncode, cp.stdout, cp.stderr, time.monotonic() - t0
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
        return None, out, err, time.monotonic() - t0


def elf_static(path):
    """True when the ELF executable at path has no program interpreter (PT_INTERP): a static
    executable, where ursa_init refuses cp-ts; False when it has one; None when unreadable."""
    import struct
    try:
        with open(path, "rb") as f:
            head = f.read(64)
            if head[:4] != b"\x7fELF":
                return None
            wide, order = head[4] == 2, "<" if head[5] == 1 else ">"
            if wide:
                phoff, = struct.unpack_from(order + "Q", head, 32)
                phentsize, phnum = struct.unpack_from(order + "HH", head, 54)
            else:
                phoff, = struct.unpack_from(order + "I", head, 28)
                phentsize, phnum = struct.unpack_from(order + "HH", head, 42)
            f.seek(phoff)
            table = f.read(phentsize * phnum)
    except (OSError, struct.error):
        return None
    types = [struct.unpack_from(order + "I", table, i * phentsize)[0] for i in range(phnum)
             if (i + 1) * phentsize <= len(table)]
    return 3 not in types            # PT_INTERP = 3


def refusal_policy(build_dir):
    """(allowed, why): whether ursa_init may refuse cp-ts in this build.  It refuses only where it
    cannot tell safe points (src/model/preempt.c): a ThreadSanitizer build, a static executable, a
    sanitizer runtime linked into the executable.  A plain dynamic build (make bench's Release
    build) must run cp-ts, so there a refusal fails the run."""
    sanitize = ""
    try:
        with open(os.path.join(build_dir, "bench", "bench-config.json")) as f:
            sanitize = json.load(f).get("sanitize") or ""
    except (OSError, ValueError, AttributeError):
        pass
    if sanitize:
        return True, f"a sanitizer build ({sanitize}): ursa_init may refuse cp-ts"
    static = elf_static(os.path.join(build_dir, "bench", "apps", "dp"))
    if static:
        return True, "static executables: ursa_init refuses cp-ts"
    return False, ("a plain build with dynamic executables, where cp-ts must run" if static is False
                   else "no sanitizer; the executables' linking could not be read, so cp-ts must run")


def counter(rec, key):
    try:
        return int((rec.get("counters") or {}).get(key, ""))
    except ValueError:
        return None


def model_check(p, rec):
    """None when the run is the one its label says, else why not: the impl (style and model) and VP
    count of its RESULT and COUNTERS lines, and its counters: cm and pcm never preempt or count
    ticks, cp-ts counts no ticks (and preempts in the probes), cp-ic counts ticks."""
    res, cnt = rec["result"] or {}, rec.get("counters")
    want = p.expected_impl()
    if res.get("impl") != want:
        return f"RESULT impl={res.get('impl')}, expected {want}"
    if res.get("vps") != str(p.expected_vps()):
        return f"RESULT vps={res.get('vps')}, expected {p.expected_vps()}"
    if cnt is None or cnt.get("impl") != want:
        return f"COUNTERS line {'missing' if cnt is None else 'with impl=' + str(cnt.get('impl'))}, expected impl={want}"
    if p.native:
        return None if cnt.get("native") == "1" else "COUNTERS without native=1 from the native build"
    got = {k: counter(rec, k) for k in ("preemptions", "ticks")}
    if None in got.values():
        return "COUNTERS without numeric preemptions and ticks"
    pre, ticks = got["preemptions"], got["ticks"]
    m = p.model
    if m in ("cm", "pcm") and (pre or ticks):
        return f"{m} is cooperative, but the run counted preemptions={pre} ticks={ticks}"
    if m == "cp-ts" and ticks:
        return f"cp-ts counts no ticks, but the run counted ticks={ticks}"
    if m == "cp-ts" and p.must_preempt and pre == 0:
        return ("cp-ts preemption probe: preemptions=0 (every thinker computes for several quanta "
                "while others are ready: cp-ts must switch them out)")
    if m == "cp-ic" and ticks == 0:
        return "cp-ic counted no ticks: iteration counting did not run"
    return None


def judge(p, rc, out, err, policy=(False, "")):
    """(status, reason, record) for one run.  policy: refusal_policy(); when it allows a refusal, a
    refused model is "refused" (reported), otherwise the run failed."""
    lines = parse(out)
    tail = " | ".join(err.strip().splitlines()[-2:])
    rec = {"rc": rc, "result": lines["RESULT"][0] if lines["RESULT"] else None,
           "answer": lines["ANSWER"][0] if lines["ANSWER"] else None,
           "counters": lines["COUNTERS"][0] if lines["COUNTERS"] else None}
    if rc == 4 and lines["REFUSED"]:
        why = f"ursa_init refused {p.env.get('URSA_MODEL')}: {tail}"
        if policy[0]:
            return "refused", why, rec
        return "failed", f"{why}; but this is {policy[1]}", rec
    if rc is None:
        return "failed", f"timed out after {TIMEOUT} s", rec
    if rec["answer"] is not None and rec["answer"].get("ok") == "0":
        return "wrong", f"wrong answer (exit {rc}): {' '.join(f'{k}={v}' for k, v in rec['answer'].items())}", rec
    if rc != 0:
        why = f"killed by signal {-rc}" if rc < 0 else f"exit status {rc}"
        return "failed", why + (f": {tail}" if tail else ""), rec
    if rec["result"] is None or rec["answer"] is None:
        return "failed", "no RESULT or ANSWER line", rec
    try:
        rec["value"] = float(rec["result"]["value"])
    except (KeyError, ValueError):
        return "failed", "RESULT without a numeric value", rec
    if rec["answer"].get("ok") != "1":
        return "wrong", "ANSWER without ok=1", rec
    why = model_check(p, rec)
    if why is not None:
        return "failed", f"not the model of its label: {why}", rec
    if p.must_stop_early and rec["answer"].get("stopped_early") != "1":
        return "wrong", (f"JI early-stop point: iterations={rec['answer'].get('iterations')} of "
                         f"{p.args[p.args.index('--iters') + 1]}, stopped_early="
                         f"{rec['answer'].get('stopped_early')}: the stopping rule did not run"), rec
    return "ok", None, rec


def execute(plan, build_dir, progress, policy=(False, "")):
    apps_dir = os.path.join(build_dir, "bench", "apps")
    refused_seen = set()
    for r in range(plan.runs):
        for p in plan.points:
            if p.status not in ("pending", "ok") or len(p.runs) > r:
                continue
            path = os.path.join(apps_dir, p.program)
            if not os.access(path, os.X_OK):
                p.status, p.reason = "failed", f"{path} not found (build bench/apps first)"
                progress.note(f"apps: FAILED: {p.label()}: {p.reason}")
                continue
            progress.show(f"{p.app} {IMPL_HEAD[p.impl]} {p.vps}vp {p.row}"
                          + (f" {p.sweep[0]}={p.sweep[1]}" if p.sweep else ""), plan, r + 1)
            rc, out, err, secs = run_once(path, p.args, clean_env(p.env), p.cpus)
            progress.done_runs += 1
            status, reason, rec = judge(p, rc, out, err, policy)
            rec["secs"] = secs
            p.runs.append(rec)
            if status == "ok":
                p.samples.append(rec["value"])
                p.status = "ok"
            else:
                p.status, p.reason = status, f"run {r + 1}: {reason}"
                model = p.env.get("URSA_MODEL")
                refusal = reason.startswith("ursa_init refused")
                if not refusal or model not in refused_seen:
                    progress.note(f"apps: {status.upper()}: {p.label()}: {reason}"
                                  + (" (every point of this model will say so)" if refusal else ""))
                if refusal:
                    refused_seen.add(model)
    for p in plan.points:
        if p.status == "ok" and len(p.samples) < plan.runs:
            p.status, p.reason = "failed", "fewer runs than asked"


def cross_check(plan):
    """Runs of one application with the same parameters must give the same deterministic answer."""
    groups, problems = {}, []
    for p in plan.points:
        if p.status != "ok":
            continue
        params = tuple(a for a in p.args)
        # drop the style arguments: they are what differs
        params = tuple(x for x in params if x not in ("cp", "cm", "pcm", "named", "dp1", "dp2", "--style",
                                                      "--yield", "--variant"))
        for rec in p.runs:
            ans = tuple((k, rec["answer"].get(k)) for k in ANSWER_KEYS[p.app])
            groups.setdefault((p.app, params), {}).setdefault(ans, []).append(p)
    for (app, params), answers in groups.items():
        if len(answers) > 1:
            desc = "; ".join(f"{dict(a)} from {', '.join(sorted({q.impl + '@' + str(q.vps) for q in ps}))}"
                             for a, ps in answers.items())
            problems.append(f"{app} {' '.join(params)}: answers differ: {desc}")
            for ps in answers.values():
                for q in ps:
                    q.status, q.reason = "wrong", f"answer differs from other models: {desc}"
    return problems, len(groups)


def table_xxii(build_dir, progress, policy=(False, "")):
    """CM- and PCM-style programs must stop (exit 2) under cp-ts and cp-ic.  A refused cp-ts (exit
    4) is "refused" where policy allows it, else a failure."""
    path = os.path.join(build_dir, "bench", "apps", "dp")
    checks = []
    for style, model, vps in (("cm", "cp-ic", 1), ("cm", "cp-ts", 1), ("pcm", "cp-ic", 2), ("pcm", "cp-ts", 2),
                              ("cm", "pcm", 2)):
        if not os.access(path, os.X_OK):
            checks.append({"style": style, "model": model, "vps": vps, "status": "failed", "detail": "dp not built"})
            continue
        env = {"URSA_MODEL": model, "URSA_VPS": str(vps)}
        rc, out, err, _ = run_once(path, ["--style", style, "--work", "100", "--meals", "10"], clean_env(env), None)
        if rc == 2 and ("cooperative" in err or "one VP" in err):
            st = "ok"
        elif rc == 4 and policy[0]:
            st = "refused"        # cp-ts refused by ursa_init: it never got as far as the check
        else:
            st = "failed"
        checks.append({"style": style, "model": model, "vps": vps, "status": st, "rc": rc,
                       "detail": " | ".join(err.strip().splitlines()[-2:])})
        if st == "failed":
            progress.note(f"apps: FAILED: Table XXII: dp --style {style} under {model} exited {rc}, expected 2"
                          + (f" (ursa_init refused {model}, but this is {policy[1]})" if rc == 4 else ""))
    return checks


# ---- the report ------------------------------------------------------------------------------

def cell(p):
    if p is None:
        return "-"
    if p.status == "ok":
        return f"{fs(p.median())} [{fs(min(p.samples))}–{fs(max(p.samples))}]"
    if p.status == "refused":
        return "refused"
    return f"**{p.status.upper()}**"


def ratio(a, b):
    return None if a is None or b is None or b <= 0 else 100.0 * a / b


def best_cp(plan, app, vps, row):
    ts, ic = plan.med(app, "ts", vps, row), plan.med(app, "ic", vps, row)
    vals = [v for v in (ts, ic) if v is not None]
    return min(vals) if vals else None


def cp_note(plan, app, vps, row):
    """'' when both CP models ran, else which one the ratio stands on (a refused cp-ts, say)."""
    ts, ic = plan.med(app, "ts", vps, row), plan.med(app, "ic", vps, row)
    if ts is not None and ic is not None:
        return ""
    if ts is None and ic is None:
        return ""
    return " (cp-ic only)" if ts is None else " (cp-ts only)"


def answer_median(p, key):
    if p is None or p.status != "ok":
        return None
    vals = [int(r["answer"][key]) for r in p.runs if r.get("answer") and str(r["answer"].get(key, "")).isdigit()]
    return statistics.median(vals) if vals else None


def tsp_nodes_note(plan, vps):
    """TSP's time follows the nodes it searched, which depend on the order the searches run in."""
    parts = []
    for i in plan.impls("tsp", vps):
        v = answer_median(plan.get("tsp", i, vps, plan.tsp_cities), "nodes")
        if v is not None:
            parts.append(f"{IMPL_HEAD[i]} {v / 1e6:.1f}M")
    return ("Nodes searched (median): " + ", ".join(parts) + ".  The order the searches run in decides how soon "
            "the shared bound tightens: run to completion (CM, CPonGreen on one VP) searches the cheapest prefixes "
            "first, one after another; time slices interleave them, which can tighten the bound later and make the "
            "search larger.") if parts else ""


def row_name(app, row):
    if app in ("dp", "pc", "rw", "pc2") and isinstance(row, int):
        return f"{row:,}"
    return str(row)


def count_of(plan, app, row):
    a = plan.args_for(app, row)
    names = {"dp": "meals", "pc": "items", "pc2": "items", "rw": "iters", "ji": "iters"}
    if app in names:
        return f"{a[a.index('--' + names[app]) + 1]:,}"
    return "-"


def tables_1vp(plan):
    out = []
    for app in ("dp", "pc", "rw", "ji", "mm", "tsp"):
        if (app, "cm", 1, plan.rows(app)[0], None) not in plan.index:
            continue
        t = TABLES_1VP.get(app)
        paper = PAPER.get(t, {})
        title = {"dp": "DP, 16 philosophers", "pc": "PC 1P1C1S", "rw": "RW, 4 readers and 2 writers",
                 "ji": "JI (test = n x workers)", "mm": "MM (8 workers)", "tsp": "TSP (8 workers)"}[app]
        src = f"Keen et al. Table {t}" if t else "Keen et al. section 6, Ishihara et al. 3.1 (no table)"
        head = ["work" if app in ("dp", "pc", "rw") else ("test" if app == "ji" else ("n" if app == "mm" else "cities")),
                {"dp": "meals", "pc": "items", "rw": "accesses/thread", "ji": "iterations"}.get(app, "-"),
                "cp-ic s", "cp-ts s", "CM s", "**CM/CP**", "paper CM/CP"]
        extra = [i for i in plan.impls(app, 1) if i not in ("ic", "ts", "cm")]
        head += [f"{IMPL_HEAD[i]} s" for i in extra]
        if "cmn" in extra:
            head += ["named/CP"]
        head += ["CM / min(native, CPonGreen)", "paper (Java)", "paper IC / TS / CM s"]
        rows = []
        for row in plan.rows(app):
            pr = paper.get(row)
            r_cm = ratio(plan.med(app, "cm", 1, row), best_cp(plan, app, 1, row))
            pc_ref = [pr[3]] if pr else []
            if app in EUROPAR_T1 and row in EUROPAR_T1[app]:
                pc_ref.append(EUROPAR_T1[app][row])
            if app in ("mm", "tsp"):
                pc_ref_s = "97–99% (Ishihara)"
            else:
                pc_ref_s = " / ".join(fpct(x) for x in pc_ref) if pc_ref else "-"
            line = [row_name(app, row), count_of(plan, app, row), cell(plan.get(app, "ic", 1, row)),
                    cell(plan.get(app, "ts", 1, row)), cell(plan.get(app, "cm", 1, row)),
                    f"**{fpct(r_cm)}**{cp_note(plan, app, 1, row)}", pc_ref_s]
            line += [cell(plan.get(app, i, 1, row)) for i in extra]
            if "cmn" in extra:
                line.append(fpct(ratio(plan.med(app, "cmn", 1, row), best_cp(plan, app, 1, row))))
            nat, cpg = plan.med(app, "nat", 1, row), plan.med(app, "cpg", 1, row)
            den = min([v for v in (nat, cpg) if v is not None], default=None)
            line.append(fpct(ratio(plan.med(app, "cm", 1, row), den)))
            line.append(fpct(JAVA.get(app, {}).get(row)))
            line.append(f"{pr[0]} / {pr[1]} / {pr[2]}" if pr else "-")
            rows.append(line)
        out.append(f"### {app.upper()} on one VP ({src}): {title}\n\n" + md_table(head, rows))
        if app == "tsp":
            out.append(tsp_nodes_note(plan, 1))
        if app == "dp":
            out.append("Paper CM/CP: Keen et al. / Ishihara et al. Table 1.")
    # 2P2C1S named yield
    if ("pc2", "cm", 1, plan.pc2_works[0], None) in plan.index:
        head = ["work", "items/producer", "cp-ic s", "cp-ts s", "CM unnamed s", "CM named s", "CPonGreen s",
                "native s", "CM unnamed/CP", "CM named/CP", "named / unnamed"]
        rows = []
        for row in plan.pc2_works:
            un, nm = plan.med("pc2", "cm", 1, row), plan.med("pc2", "cmn", 1, row)
            bc = best_cp(plan, "pc2", 1, row)
            rows.append([row_name("pc", row), count_of(plan, "pc2", row)] +
                        [cell(plan.get("pc2", i, 1, row)) for i in ("ic", "ts", "cm", "cmn", "cpg", "nat")] +
                        [fpct(ratio(un, bc)), fpct(ratio(nm, bc)), fpct(ratio(nm, un))])
        out.append("### PC 2P2C1S: unnamed and named yield (Keen et al. section 6, Ishihara et al. Figure 2: "
                   "named yield about 10% better at small work; their unnamed CM/CP ranged 90-120% there)\n\n"
                   + md_table(head, rows))
    return "\n\n".join(out)


def tables_nvp(plan):
    n = plan.n
    out = []
    for app in ("dp", "pc", "rw", "ji", "mm", "tsp"):
        if (app, "ic", n, plan.rows(app)[0], None) not in plan.index:
            continue
        t = TABLES_NVP.get(app)
        paper = PAPER.get(t, {})
        src = f"Keen et al. Table {t}" if t else "Keen et al. section 6 (no table)"
        pcm_impls = {"dp": ["pcm", "dp1", "dp2"], "pc": ["pcm", "cpp"], "rw": ["cpp"], "ji": ["pcm"],
                     "mm": ["cpp"], "tsp": ["cpp"]}[app]
        head = ["work" if app in ("dp", "pc", "rw") else "test", "cp-ic s", "cp-ts s"]
        for i in pcm_impls:
            head += [f"{IMPL_HEAD[i]} s", f"**{IMPL_HEAD[i]}/CP**"]
        if app == "dp":
            head += ["paper DP1/CP", "paper DP2/CP"]
        elif t:
            head += ["paper PCM/CP"]
        head += ["native s", "CP code on pcm s" if "cpp" not in pcm_impls else None,
                 f"best CP 1 VP / {n} VPs", "paper IC / TS / PCM s"]
        head = [h for h in head if h]
        rows = []
        for row in plan.rows(app):
            pr = paper.get(row)
            bc = best_cp(plan, app, n, row)
            line = [row_name(app, row), cell(plan.get(app, "ic", n, row)), cell(plan.get(app, "ts", n, row))]
            for i in pcm_impls:
                line += [cell(plan.get(app, i, n, row)),
                         f"**{fpct(ratio(plan.med(app, i, n, row), bc))}**{cp_note(plan, app, n, row)}"]
            if app == "dp":
                line += [fpct(pr[3]) if pr else "-", fpct(pr[5]) if pr else "-"]
            elif t:
                line += [fpct(pr[3]) if pr else "-"]
            line.append(cell(plan.get(app, "nat", n, row)))
            if "cpp" not in pcm_impls:
                line.append(cell(plan.get(app, "cpp", n, row)))
            b1 = best_cp(plan, app, 1, row)
            line.append(f"{b1 / bc:.2f}x" if b1 and bc else "-")
            if pr:
                line.append(f"{pr[0]} / {pr[1]} / {pr[2]}" + (f" (DP2 {pr[4]})" if app == "dp" else ""))
            else:
                line.append("-")
            rows.append(line)
        out.append(f"### {app.upper()} on {n} VPs ({src})\n\n" + md_table(head, rows))
        if app == "tsp":
            out.append(tsp_nodes_note(plan, n))
    return "\n\n".join(out)


def tables_sweeps(plan):
    out = []
    for (app, impl, vps_kind), t in SWEEP_TABLES.items():
        vps = 1 if vps_kind == 1 else plan.n
        if vps_kind == 2 and plan.n == 1:
            continue
        if plan.get(app, impl, vps, plan.sweep_works[0]) is None:
            continue
        values = SWITCH_COUNTS if impl == "ic" else QUANTA_US
        kind = "sc" if impl == "ic" else "q"
        names = [f"{v:,}" for v in values] if impl == "ic" else [QUANTUM_NAME[v] for v in values]
        head = ["work"]
        for j, nm in enumerate(names):
            head.append(f"{nm} s" + (" (paper)" if j < 4 else ""))
        head += ["max/min", "paper max/min"]
        rows = []
        for row in plan.sweep_works:
            pr = PAPER[t].get(row)
            line, meds = [row_name(app, row)], []
            for j, v in enumerate(values):
                p = plan.get(app, impl, vps, row, (kind, v))
                m = p.median() if p else None
                meds.append(m)
                c = cell(p)
                if j < 4 and pr:
                    c += f" ({pr[j]})"
                line.append(c)
            ok = [m for m in meds[:4] if m]
            line.append(f"{max(ok) / min(ok):.2f}" if len(ok) == 4 else "-")
            line.append(f"{max(pr) / min(pr):.2f}" if pr else "-")
            rows.append(line)
        what = "switch count" if impl == "ic" else "quantum"
        out.append(f"### Table {t}: {app.upper()} under {('cp-ic' if impl == 'ic' else 'cp-ts')} by {what}, "
                   f"{vps} VP{'s' if vps > 1 else ''}\n\n" + md_table(head, rows))
    return "\n\n".join(out)


def counters_table(plan):
    head = ["app", "VPs", "row", "impl", "s", "switches", "yields", "P ops", "blocking P", "blocking waits",
            "preemptions", "deferred", "ticks", "migrations"]
    rows = []
    for p in plan.points:
        if p.sweep is not None or p.status != "ok":
            continue
        if p.native:
            c = ["-"] * len(COUNTER_KEYS)
        else:
            def m(k):
                vals = [int(r["counters"][k]) for r in p.runs if r.get("counters") and k in r["counters"]]
                return fint(statistics.median(vals)) if vals else "-"
            c = [m(k) for k in COUNTER_KEYS]
        app = p.app
        if app == "pc" and "--producers" in p.args:
            app = "pc 2P2C1S"
        if p.must_preempt:
            app = "dp (cp-ts probe)"
        if p.must_stop_early:
            app = "ji (early stop)"
        rows.append([app, str(p.vps), row_name(p.app, p.row), IMPL_HEAD[p.impl], fs(p.median())] + c)
    return md_table(head, rows)


# Ids of the findings that issue #5's acceptance names (bench/report.py looks them up): the first
# pattern that matches the start of a finding's text gives its id.
FINDING_IDS = [
    (r"DP, 1 VP: CM beats CP at small work", "dp-cm-beats-cp-small-work"),
    (r"RW, 1 VP: CM beats CP", "rw-cm-beats-cp"),
    (r"PC 1P1C1S, 1 VP: CM and CP within", "pc-cm-close-to-cp"),
    (r"JI, 1 VP: CM/CP close to 100%", "ji-cm-close-to-cp"),
    (r"JI, \d+ VPs: PCM .* beats CP", "ji-pcm-beats-cp"),
    (r"DP, \d+ VPs: PCM DP1 beats CP", "dp-pcm-dp1-beats-cp"),
    (r"PC 2P2C1S, CM: named yield", "pc-named-yield"),
]


def finding_id(text):
    for pattern, fid in FINDING_IDS:
        if re.match(pattern, text):
            return fid
    return None


def findings(plan):
    """[(holds: True/False/None, text, numbers)]"""
    n, res = plan.n, []
    W = plan.works
    lo, hi = W[0], W[-1]

    def add(cond, text, nums):
        res.append((cond, text, nums))

    def r1(app, row, impl="cm"):
        return ratio(plan.med(app, impl, 1, row), best_cp(plan, app, 1, row))

    def rn(app, row, impl):
        return ratio(plan.med(app, impl, n, row), best_cp(plan, app, n, row))

    def have(*vals):
        return all(v is not None for v in vals)

    def pcts(vals):
        return ", ".join(f"{row_name('dp', w) if isinstance(w, int) else w}: {fpct(v)}" for w, v in vals)

    only = plan.only
    def on(app):
        return not only or app in only

    if on("dp"):
        v = r1("dp", lo)
        add(None if v is None else v < 97, f"DP, 1 VP: CM beats CP at small work (by more than 3%; paper: CM/CP {fpct(PAPER['VI'][100][3])} "
            f"at work 100, Ishihara et al. {fpct(EUROPAR_T1['dp'][100])})", f"ursa CM/CP at work {lo:,}: {fpct(v)}")
        cm, ts, ic = plan.med("dp", "cm", 1, hi), plan.med("dp", "ts", 1, hi), plan.med("dp", "ic", 1, hi)
        v = ratio(cm, ts)
        add(None if v is None else 90 <= v <= 110, f"DP, 1 VP: at large work CM and cp-ts take about the same time "
            f"(paper: {PAPER['VI'][1000000][2]} vs {PAPER['VI'][1000000][1]} s at 10^6)", f"ursa CM/cp-ts at {hi:,}: {fpct(v)}")
        v = None if not have(ic, ts) else ic / ts
        add(None if v is None else v >= 1.5, "DP, 1 VP: at large work cp-ic is much slower than cp-ts (paper: 2.7x at "
            "10^6, loop overhead and extra switching)", f"ursa cp-ic/cp-ts at {hi:,}: " + (f"{v:.2f}x" if v else "-"))
    if on("pc"):
        vals = [(w, r1("pc", w)) for w in W]
        ok = [x for _, x in vals if x is not None]
        add(None if not ok else all(90 <= x <= 110 for x in ok), "PC 1P1C1S, 1 VP: CM and CP within 10% of each other "
            "at every work (paper: CM/CP 96.5-99.8%, Ishihara et al. 92.7-93.3%)", pcts(vals))
    if on("rw"):
        vals = [(w, r1("rw", w)) for w in W]
        ok = [x for _, x in vals if x is not None]
        add(None if not ok else all(x < 97 for x in ok), "RW, 1 VP: CM beats CP (by more than 3%) at every work (paper: CM/CP 56-90%)",
            pcts(vals))
        a = (plan.med("rw", "ts", 1, lo), plan.med("rw", "ic", 1, lo), plan.med("rw", "ts", 1, hi), plan.med("rw", "ic", 1, hi))
        add(None if not have(*a) else (a[0] < a[1] and a[3] < a[2]), "RW, 1 VP: cp-ts beats cp-ic at small work, "
            "cp-ic beats cp-ts at large work (paper Table VIII)",
            f"work {lo:,}: ts {fs(a[0])} s, ic {fs(a[1])} s; work {hi:,}: ts {fs(a[2])} s, ic {fs(a[3])} s")
    if on("ji"):
        vals = [(t, r1("ji", t)) for t in plan.rows("ji")]
        ok = [x for _, x in vals if x is not None]
        add(None if not ok else all(90 <= x <= 105 for x in ok), "JI, 1 VP: CM/CP close to 100% (paper 94.7-99.7%; "
            "Ishihara et al. 98.5-100%)", pcts(vals))
    if on("mm") or on("tsp"):
        vals = [(a.upper(), r1(a, plan.rows(a)[0])) for a in ("mm", "tsp") if on(a)]
        ok = [x for _, x in vals if x is not None]
        add(None if not ok else all(90 <= x <= 105 for x in ok), "MM and TSP, 1 VP: CM/CP 97-99% (Ishihara et al. 3.1)",
            ", ".join(f"{a}: {fpct(x)}" for a, x in vals))
    # Java: CPonGreen never beats both
    exc, total = [], 0
    for app in APPS:
        if not on(app):
            continue
        for row in plan.rows(app):
            g, cm, nat = plan.med(app, "cpg", 1, row), plan.med(app, "cm", 1, row), plan.med(app, "nat", 1, row)
            if have(g, cm, nat):
                total += 1
                if g < 0.97 * min(cm, nat):
                    exc.append(f"{app} {row_name(app, row)}")
    add(None if total == 0 else not exc, "1 VP: the CP program on the cooperative model (CPonGreen) is never faster than "
        "both CM and native threads, by more than 3% (Keen et al. section 5)",
        f"{len(exc)} of {total} tests faster than both" + (f": {', '.join(exc)}" if exc else ""))
    if n > 1:
        if on("dp"):
            vals = [(w, rn("dp", w, "dp1")) for w in W]
            ok = [x for _, x in vals if x is not None]
            add(None if not ok else all(x < 97 for x in ok), f"DP, {n} VPs: PCM DP1 beats CP (by more than 3%) at every work "
                "(paper: DP1 PCM/CP 21.8-98.3%)", pcts(vals))
            pairs = [(w, plan.med("dp", "dp1", n, w), plan.med("dp", "dp2", n, w)) for w in W]
            pairs = [(w, a, b) for w, a, b in pairs if have(a, b)]
            add(None if not pairs else all(a <= b <= 1.15 * a for _, a, b in pairs),
                f"DP, {n} VPs: DP2 (region synchronization) costs a little more than DP1 (paper: 0.9-5.5% more)",
                ", ".join(f"{w:,}: DP2/DP1 {b / a:.2f}" for w, a, b in pairs))
            pairs = [(w, plan.med("dp", "pcm", n, w), plan.med("dp", "dp1", n, w)) for w in W]
            pairs = [(w, a, b) for w, a, b in pairs if have(a, b)]
            add(None if not pairs else all(a <= 1.03 * b for _, a, b in pairs),
                f"DP, {n} VPs: pure PCM (ursa regions, no protection or region synchronization) is at least as fast as "
                "DP1 (paper: DP1's costs are 'most likely higher than they would be for a pure PCM DP')",
                ", ".join(f"{w:,}: pure/DP1 {a / b:.2f}" for w, a, b in pairs))
            s = [(best_cp(plan, "dp", 1, hi), best_cp(plan, "dp", n, hi)),
                 (plan.med("dp", "cm", 1, hi), plan.med("dp", "dp1", n, hi)),
                 (plan.med("dp", "ic", 1, hi), plan.med("dp", "ic", n, hi)),
                 (plan.med("dp", "ts", 1, hi), plan.med("dp", "ts", n, hi))]
            sp = [a / b if have(a, b) else None for a, b in s]
            add(None if None in sp else (sp[3] >= 1.7 and sp[1] >= 1.7 and sp[2] < 1.4),
                f"DP at large work: {n} VPs make cp-ts and CM->PCM close to 2x faster, cp-ic only ~1.1x (paper 4.2)",
                f"work {hi:,}: cp-ts {sp[3] and f'{sp[3]:.2f}'}x, CM->DP1 {sp[1] and f'{sp[1]:.2f}'}x, "
                f"cp-ic {sp[2] and f'{sp[2]:.2f}'}x")
        if on("pc"):
            vals = [(w, rn("pc", w, "pcm")) for w in W]
            ok = [x for _, x in vals if x is not None]
            add(None if not ok else all(x < 97 for x in ok), f"PC, {n} VPs: PCM (producers' and consumers' regions) "
                "beats CP (by more than 3%) at every work (paper: PCM/CP 87.4-98.7%; Ishihara et al.'s PCM PC was 100.8-102.8%)", pcts(vals))
            vals = [(w, rn("pc", w, "cpp")) for w in W]
            ok = [x for _, x in vals if x is not None]
            add(None if not ok else all(x < 97 for x in ok), f"PC, {n} VPs: the CP code under pcm (the journal's PCM PC) "
                "beats CP under preemption (by more than 3%) (paper 87.4-98.7%)", pcts(vals))
            a, b = best_cp(plan, "pc", 1, hi), best_cp(plan, "pc", n, hi)
            others = []
            for i1, i2, nm in (("pcm", "pcm", "PCM"), ("nat", "nat", "native")):
                x, y = plan.med("pc", i1, 1, hi), plan.med("pc", i2, n, hi)
                if have(x, y):
                    others.append(f"{nm} {x / y:.2f}x")
            add(None if not have(a, b) else a / b >= 1.7, f"PC: CP about 2x faster on {n} VPs than on 1 (paper: speedups "
                "close to 2.0)", f"best CP at work {hi:,}: {fs(a)} s on 1 VP, {fs(b)} s on {n}: " +
                (f"{a / b:.2f}x" if have(a, b) else "-") + (f" (for comparison: {', '.join(others)})" if others else ""))
            if n == 2:
                items = plan.pc_items(hi)
                bound = f"the pipeline's bound with {items} items: {2 * items / (items + 1):.3f}x"
                sps = []
                # the CP code under pcm at 2 VPs against the same code at 1 VP, where pcm is cm
                for i1, i2, nm in (("ts", "ts", "cp-ts"), ("cpg", "cpp", "CP code on pcm"), ("ic", "ic", "cp-ic"),
                                   ("nat", "nat", "native")):
                    x, y = plan.med("pc", i1, 1, hi), plan.med("pc", i2, n, hi)
                    sps.append((nm, x / y if have(x, y) else None))
                ursa_sps = [v for nm, v in sps if nm != "native"]
                add(None if None in ursa_sps else all(v >= 1.8 for v in ursa_sps),
                    f"PC: every model's CP producer/consumer 2 VPs / 1 VP >= 1.8x at work {hi:,}, like POSIX threads "
                    "(issue #20)", ", ".join(f"{nm} {v:.2f}x" if v else f"{nm} -" for nm, v in sps) + f" ({bound})")
        if on("rw"):
            vals = [(w, rn("rw", w, "cpp")) for w in W]
            ok = [x for _, x in vals if x is not None]
            add(None if not ok else all(x < 75 for x in ok), f"RW, {n} VPs: PCM (the CP code under pcm, as the paper) "
                "takes about half the time of CP (paper: PCM/CP 43.6-49.4%)", pcts(vals))
            pairs = [(w, best_cp(plan, "rw", 1, w), best_cp(plan, "rw", n, w)) for w in W]
            pairs = [(w, a, b) for w, a, b in pairs if have(a, b)]
            add(None if not pairs else all(b > a for _, a, b in pairs), f"RW: slower on {n} VPs than on 1 at every work "
                "(paper: speedups below 1: much synchronization, costlier on the multiprocessor)",
                ", ".join(f"{w:,}: 1 VP {fs(a)} s, {n} VPs {fs(b)} s" for w, a, b in pairs))
        if on("ji"):
            vals = [(t, rn("ji", t, "pcm")) for t in plan.rows("ji")]
            ok = [x for _, x in vals if x is not None]
            add(None if not ok else all(x < 97 for x in ok), f"JI, {n} VPs: PCM (shared-variable group barriers) beats "
                "CP (semaphore barrier) by more than 3% (paper: 63.2-99.2%; Ishihara et al. 52.6-94.8%)", pcts(vals))
    if plan.with_sweeps and on("dp"):
        for vps in plan.vps_list:
            spreads = []
            for w in plan.sweep_works:
                ms = [plan.med("dp", "ic", vps, w, ("sc", s)) for s in SWITCH_COUNTS]
                if all(ms):
                    spreads.append((w, max(ms) / min(ms)))
            t = SWEEP_TABLES[("dp", "ic", 1 if vps == 1 else 2)]
            add(None if not spreads else all(s <= 1.15 for _, s in spreads), f"DP, cp-ic, {vps} VP{'s' if vps > 1 else ''}: "
                f"the switch count changes the time by about 11% or less (paper Table {t})",
                ", ".join(f"{w:,}: max/min {s:.2f}" for w, s in spreads))
        a, b = plan.med("dp", "ts", 1, lo, ("q", 1_000_000)), plan.med("dp", "ts", 1, lo)
        add(None if not have(a, b) else a <= 0.8 * b, "DP, cp-ts, 1 VP: at small work a 1000 ms quantum is much faster "
            "than 10 ms (paper Table XVIII: 0.73 s vs 2.00 s at work 100)",
            f"work {lo:,}: 1000 ms {fs(a)} s, 10 ms {fs(b)} s")
    if plan.with_sweeps and on("rw"):
        for vps in plan.vps_list:
            spreads = []
            for w in plan.sweep_works:
                ms = [plan.med("rw", "ic", vps, w, ("sc", s)) for s in SWITCH_COUNTS]
                if all(ms):
                    spreads.append((w, max(ms) / min(ms)))
            t = SWEEP_TABLES[("rw", "ic", 1 if vps == 1 else 2)]
            add(None if not spreads else all(s <= 1.05 for _, s in spreads), f"RW, cp-ic, {vps} VP{'s' if vps > 1 else ''}: "
                f"the switch count hardly matters (paper Table {t}: within 2%)",
                ", ".join(f"{w:,}: max/min {s:.2f}" for w, s in spreads))
        pairs = [(w, plan.med("rw", "ts", 1, w, ("q", 1_000_000)), plan.med("rw", "ts", 1, w)) for w in plan.sweep_works if w >= 1000]
        pairs = [(w, a, b) for w, a, b in pairs if have(a, b)]
        add(None if not pairs else all(a < 0.9 * b for _, a, b in pairs), "RW, cp-ts, 1 VP: a 1000 ms quantum is much "
            "faster than 10 ms from work 1,000 up (paper Table XIX: 3.31 s vs 14.61 s at 10^5)",
            ", ".join(f"{w:,}: 1000 ms {fs(a)} s, 10 ms {fs(b)} s" for w, a, b in pairs))
    if on("pc") and ("pc2", "cm", 1, plan.pc2_works[0], None) in plan.index:
        w = plan.pc2_works[0]
        a, b = plan.med("pc2", "cmn", 1, w), plan.med("pc2", "cm", 1, w)
        add(None if not have(a, b) else a <= 0.95 * b, "PC 2P2C1S, CM: named yield beats unnamed yield by 5% or more at small work "
            "(paper: about 10%)", f"work {w:,}: named {fs(a)} s, unnamed {fs(b)} s" + (f" ({a / b:.2f})" if have(a, b) else ""))
    return res


def model_lines(plan, policy):
    """The Checks section's lines on which model ran: the label check, the cp-ts probes, and how
    often cp-ts preempted at all in the papers' programs."""
    ursa = [p for p in plan.points if not p.native]
    checked = sum(len(p.samples) for p in plan.points if p.status == "ok")
    out = [f"- Models: every run's RESULT and COUNTERS lines must name the style and model of its label "
           f"(`impl=<style>-<model>`, `cp-native` for POSIX threads) and its VP count (`vps=`, 1 for a pinned "
           f"native run), and its counters must fit the model: cm and pcm count no preemption and no tick, "
           f"cp-ts counts no tick, cp-ic counts ticks (> 0); a run that does not is a failure.  {checked:,} runs "
           f"checked.  cp-ts refusal: {policy[1]}."]
    probes = [p for p in plan.points if p.must_preempt]
    if probes:
        parts = []
        for p in probes:
            pre = [counter(r, "preemptions") for r in p.runs if r.get("counters")]
            parts.append(f"{p.vps} VP{'s' if p.vps > 1 else ''}: {p.status}, preemptions per run "
                         f"{', '.join(str(x) for x in pre) or '-'}")
        out.append(f"- cp-ts preemption probe (`dp --style cp --phil {PROBE_PHIL} --think {PROBE_THINK:,} --eat "
                   f"1000 --meals 1`, quantum 10 ms: every thinker computes for several quanta while the others are "
                   f"ready, so every run must count preemptions > 0): " + "; ".join(parts) + ".")
    ts = [p for p in ursa if p.model == "cp-ts" and p.sweep is None and not p.must_preempt and p.status == "ok"]
    if ts:
        runs = [counter(r, "preemptions") or 0 for p in ts for r in p.runs]
        pts = sum(1 for p in ts if any(counter(r, "preemptions") for r in p.runs))
        out.append(f"- cp-ts at the default quantum (10 ms) preempted in {sum(1 for x in runs if x > 0)} of "
                   f"{len(runs)} runs of the papers' programs ({pts} of {len(ts)} points).  In the others no thread "
                   f"ran a whole quantum while another was ready (they block or switch sooner), so cp-ts had nothing "
                   f"to preempt and those runs went as a cooperative model's would: their CM/CP ratios compare CM "
                   f"with a CP program that ran unpreempted.")
    return out


def report(plan, t_start, t_end, problems, ngroups, xxii, build_dir, loads, policy=(False, "")):
    n = plan.n
    lines = []
    stamp = t_start.strftime("%Y-%m-%d %H:%M UTC")
    lines.append(f"# The papers' applications under ursa's execution models (issue #5)\n")
    lines.append(f"Run of {stamp} ({plan.mode} sizes, {plan.runs} runs per point"
                 + (" (fewer than the 5 the suite asks for by default)" if plan.runs < 5 else "")
                 + f"; {len(plan.points)} points, {sum(len(p.runs) for p in plan.points)} runs, "
                 f"{(t_end - t_start).total_seconds():.0f} s) on {machine()['cpu']} with {ncpus()} CPUs; build "
                 f"`{build_dir}`.  Command: `{' '.join(sys.argv)}`.\n")
    lines.append(
        "Cells: median seconds of the timed part of each program (creating, running and joining its threads) "
        "[min–max]; **CM/CP** = T_CM / min(T_cp-ts, T_cp-ic) × 100% and **PCM/CP** likewise at N VPs (Keen et al. "
        "3.2); below 100% the cooperative program is faster.  \"paper\" columns copy the SR figures of Keen et al. "
        "(a 550 MHz Pentium III; seconds of whole programs with their own, fixed counts) and, after a slash, "
        "Ishihara et al. Table 1: compare the ratios, not the seconds.  Here each work size has its own count "
        "(meals, items, accesses), the same for every model, so that a run of the fastest model lasts about "
        "0.1 s (default sizes) or 0.2–0.3 s (full): 10 to 30 quanta of 10 ms, where the papers' runs lasted hundreds to "
        "hundreds of thousands, so effects that build up over many time slices show less here.  Defaults as "
        "the paper: cp-ts quantum 10 ms, cp-ic switch count 10,000.  \"native\" is the same CP source on POSIX "
        "threads and semaphores (`*_native`, pinned to one CPU in the 1-VP tables); its loops have no "
        "ursa_tick at all, so the compiler may vectorize them (JI, MM), which ursa's builds cannot.\n")
    la0, other = loads
    if other is not None:
        busy = other > 0.10
        lines.append(f"Other processes used {100 * other:.0f}% of the {ncpus()} CPUs during this run"
                     + (f" (load average {la0[0]:.2f} at the start)" if la0 else "")
                     + (": **the machine was not idle**, so the N-VP figures (which need every CPU) and the "
                        "spreads are not reliable; rerun on an idle machine." if busy else ".") + "\n")
    refused = sorted({p.env.get("URSA_MODEL") for p in plan.points if p.status == "refused"})
    if refused:
        lines.append(f"**Refused models: {', '.join(refused)}** — ursa_init returned -ENOTSUP in this build "
                     f"({next(p.reason for p in plan.points if p.status == 'refused')}), which it may: {policy[1]}; "
                     f"those cells say \"refused\" and the ratios use the CP models that ran.\n")
    bad = [p for p in plan.points if p.status in ("wrong", "failed")]
    if bad:
        lines.append(f"**{len(bad)} points failed or answered wrong** (details at the end).\n")
    lines.append("## One VP: CP against CM (Keen et al. 4.1, Tables VI–IX; section 5's CPonGreen and native)\n")
    lines.append(tables_1vp(plan))
    if n > 1:
        lines.append(f"\n## {n} VPs: CP against PCM (Keen et al. 4.2, Tables X–XIII)\n")
        lines.append(
            f"PCM = the PCM-style program under pcm: DP \"PCM\" is the pure version (one ursa region per half of the "
            f"table, no protection synchronization), DP1/DP2 the paper's versions without regions; PC's PCM puts "
            f"producers and consumers in two regions; RW's PCM is the CP code under pcm, as the paper's.  \"best CP "
            f"1 VP / {n} VPs\" is the speed-up of min(cp-ts, cp-ic) from one VP to {n}.\n")
        lines.append(tables_nvp(plan))
    else:
        lines.append("\n## Several VPs\n\nThis machine lets the process use one CPU: the N-VP tables (X–XIII) are not run.\n")
    if plan.with_sweeps:
        lines.append("\n## Switch count and quantum (Keen et al. 4.3, Tables XIV–XXI)\n")
        lines.append("Each cell: ursa's median [min–max] (the paper's seconds).  The paper's fourth quantum is "
                     "infinity (\"no timer interrupts occur\", its footnote; the text extraction prints it as "
                     "\"1 msec\"); ursa's longest quantum, 10 s, means the same for runs this short.  1 ms and 100 us "
                     "are extra columns without a paper figure.  max/min: over the four paper columns.\n")
        lines.append(tables_sweeps(plan))
    lines.append("\n## Findings of the papers, checked here\n")
    for cond, text, nums in findings(plan):
        tag = "n/a" if cond is None else ("**holds**" if cond else "**does not hold**")
        lines.append(f"- {tag}: {text} — {nums}")
    lines.append("\n## Checks\n")
    lines.append(f"- Answers: every run checked its own result (DP: meals per philosopher, no fork held twice, every "
                 f"fork and semaphore back at 1 at the end; PC: exactly-once delivery; RW: database consistency; JI "
                 f"against a sequential reference; MM against a reference product; TSP: the known optimum, every task "
                 f"of the bag searched exactly once, and no task with fewer nodes than the sequential search with the "
                 f"bound fixed at the optimum expands in it); runs with the same parameters agreed across models in "
                 f"{ngroups - len(problems)} of {ngroups} groups.")
    stops = [p for p in plan.points if p.must_stop_early]
    if stops:
        lines.append(f"- JI early stop (`ji --n 128 --procs 8 --eps-e9 {JI_STOP_EPS_E9:,}`: every run must stop on "
                     f"the largest change before its iteration limit, at the reference's iteration): "
                     + "; ".join(f"{IMPL_HEAD[p.impl]} {p.vps} VP{'s' if p.vps > 1 else ''}: {p.status}, iterations "
                                 f"{answer_median(p, 'iterations')}" for p in stops) + ".")
    for pr in problems:
        lines.append(f"  - **differ**: {pr}")
    lines += model_lines(plan, policy)
    x_ok = all(c["status"] in ("ok", "refused") for c in xxii)
    lines.append(f"- Table XXII (a CM-style program must not run CP-style): `dp --style cm|pcm` under cp-ic and "
                 f"cp-ts, and `dp --style cm` on 2 VPs under pcm (CM code is not valid under PCM, Keen et al. 2), "
                 + ("**stop with status 2** as they should" if x_ok else "**did not all stop**") + ": "
                 + ", ".join(f"{c['style']}/{c['model']}/{c['vps']}vp: {c['status']}" for c in xxii) + ".")
    if bad:
        lines.append("\n### Failed or wrong points\n")
        for p in bad:
            lines.append(f"- `{p.label()}`: {p.status}: {p.reason}")
    lines.append("\n## Counters (Keen et al. section 4: context switches, P operations, P that blocked; medians per run)\n")
    lines.append("<details><summary>per point</summary>\n\n" + counters_table(plan) + "\n\n</details>\n")
    return "\n".join(lines) + "\n"


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return [float(x) for x in f.read().split()[:3]]
    except (OSError, ValueError):
        return None


def cpu_snapshot():
    """(CPU-seconds every CPU was busy, CPU-seconds of this process and its finished children, wall)."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        busy = (sum(v[:8]) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")   # all but idle and iowait
    except (OSError, ValueError, IndexError):
        busy = None
    t = os.times()
    return busy, t.user + t.system + t.children_user + t.children_system, time.monotonic()


def other_load(s0, s1):
    """The share of the machine (0..1) that processes other than this suite used between s0 and s1."""
    if s0[0] is None or s1[0] is None or s1[2] <= s0[2]:
        return None
    other = (s1[0] - s0[0]) - (s1[1] - s0[1])
    return max(0.0, other / ((s1[2] - s0[2]) * ncpus()))


def machine():
    cpu = cpu_model() or platform.processor() or "?"
    return {"cpu": cpu, "cpus": ncpus(), "kernel": platform.release(), "python": platform.python_version(),
            "node": platform.node()}


def git_commit():
    try:
        return subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None


def build_type(build_dir):
    return cmake_cache(build_dir, "CMAKE_BUILD_TYPE")


def run(build_dir, mode="default", runs=None, results_dir=None, only=None, sweeps=True, json_path=None):
    """Runs the matrix at the sizes of `mode` (default: make bench's; full: the papers' work sizes;
    quick: a smoke run) with `runs` runs per point (default 5, 3 when quick), writes
    <results_dir>/apps-<UTC stamp>.json (or json_path) and apps-latest.md (results_dir default: results/ at the repository root), shows progress on stderr.
    only: a list of applications to run (default all); sweeps=False leaves out Tables XIV-XXI.
    Returns (ok, markdown): ok is False when a run failed, answered wrong, or disagreed with the
    other models' answer (a refused model is reported, not a failure)."""
    if mode not in ("quick", "default", "full"):
        raise ValueError(f"mode {mode!r}: quick, default or full")
    if runs is None:
        runs = 3 if mode == "quick" else 5
    results_dir = results_dir or os.path.join(ROOT, "results")
    build_dir = os.path.abspath(build_dir)
    plan = Plan(mode, runs, ncpus(), only, sweeps)
    progress = Progress(plan)
    t_start = datetime.datetime.now(datetime.timezone.utc)
    progress.note(f"apps: {len(plan.points)} points x {runs} runs ({mode}), {plan.n} CPUs; "
                  f"a priori ~{sum(p.est for p in plan.points) * runs / 60:.1f} min")
    bt = build_type(build_dir)
    if bt and bt not in ("Release", "RelWithDebInfo"):
        progress.note(f"apps: warning: {build_dir} is a {bt} build: the times are not representative")
    policy = refusal_policy(build_dir)
    load0, snap0 = loadavg(), cpu_snapshot()
    xxii = table_xxii(build_dir, progress, policy)
    execute(plan, build_dir, progress, policy)
    other = other_load(snap0, cpu_snapshot())
    problems, ngroups = cross_check(plan)
    t_end = datetime.datetime.now(datetime.timezone.utc)
    if progress.tty:
        sys.stderr.write("\r\033[K")
    md = report(plan, t_start, t_end, problems, ngroups, xxii, build_dir, (load0, other), policy)
    ok = (not problems and all(p.status in ("ok", "refused") for p in plan.points)
          and all(c["status"] in ("ok", "refused") for c in xxii))
    os.makedirs(results_dir, exist_ok=True)
    stamp = t_start.strftime("%Y%m%dT%H%M%SZ")
    doc = {"suite": "apps", "issue": 5, "started": t_start.isoformat(), "finished": t_end.isoformat(),
           "seconds": (t_end - t_start).total_seconds(), "command": sys.argv, "machine": machine(),
           "machine_info": machine_info(), "markdown": md,
           "loadavg_start": load0, "other_processes_cpu_share": other,
           "git_commit": git_commit(), "build_dir": build_dir, "build_type": bt, "mode": mode, "runs": runs,
           "ok": ok, "cross_check_problems": problems, "table_xxii": xxii,
           "cp_ts_refusal": {"allowed": policy[0], "why": policy[1]},
           "findings": [{"id": finding_id(t), "holds": c, "text": t, "numbers": nums}
                        for c, t, nums in findings(plan)],
           "points": [{"app": p.app, "impl": p.impl, "impl_name": IMPLS[p.impl][2], "vps": p.vps, "row": p.row,
                       "sweep": list(p.sweep) if p.sweep else None, "program": p.program, "args": p.args,
                       "env": p.env, "cpus": p.cpus, "status": p.status, "reason": p.reason,
                       "expected_impl": p.expected_impl(), "expected_vps": p.expected_vps(),
                       "probe": p.must_preempt, "early_stop": p.must_stop_early,
                       "median": p.median(), "min": min(p.samples) if p.samples else None,
                       "max": max(p.samples) if p.samples else None, "samples": p.samples, "runs": p.runs}
                      for p in plan.points]}
    json_path = json_path or os.path.join(results_dir, f"apps-{stamp}.json")
    write_json(json_path, doc)
    with open(os.path.join(results_dir, "apps-latest.md"), "w") as f:
        f.write(md)
    progress.note(f"apps: {'every run verified' if ok else 'FAILED'} in {(t_end - t_start).total_seconds():.0f} s; wrote "
                  f"{os.path.relpath(json_path)} and apps-latest.md")
    return ok, md


def main():
    ap = argparse.ArgumentParser(description="The papers' applications (issue #5) in the papers' run matrix.")
    ap.add_argument("--build", required=True, help="the CMake build directory (with bench/apps built)")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--quick", action="store_true",
                   help="smoke run: work 100 and 1,000,000 only, 3 runs per point; figures indicative only")
    g.add_argument("--full", action="store_true",
                   help="the papers' work sizes 100 .. 1,000,000 (make bench FULL=1); without --quick or "
                        "--full: the default sizes (make bench)")
    ap.add_argument("--runs", type=int, help="runs per point (default 5; 3 with --quick)")
    ap.add_argument("--results", help="where to write the reports (default: results/ at the repository root)")
    ap.add_argument("--only", help="comma-separated applications: dp,pc,rw,ji,mm,tsp")
    ap.add_argument("--no-sweeps", action="store_true", help="leave out section 4.3's switch-count and quantum sweeps")
    ap.add_argument("--json", help="the JSON report's path (default: <results>/apps-<UTC stamp>.json)")
    a = ap.parse_args()
    if a.runs is not None and a.runs < 1:
        ap.error("--runs must be at least 1")
    only = None
    if a.only:
        only = [x.strip() for x in a.only.split(",") if x.strip()]
        bad = [x for x in only if x not in APPS]
        if bad:
            ap.error(f"unknown application(s): {', '.join(bad)}")
    if not os.path.isdir(a.build):
        ap.error(f"{a.build} is not a directory")
    try:
        mode = "quick" if a.quick else "full" if a.full else "default"
        ok, md = run(a.build, mode=mode, runs=a.runs, results_dir=a.results, only=only,
                     sweeps=not a.no_sweeps, json_path=a.json)
    except KeyboardInterrupt:
        print("\napps_suite.py: interrupted", file=sys.stderr)
        return 130
    sys.stdout.write(md)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
