#!/usr/bin/env python3
"""run.py - the driver of ursa's micro-benchmarks (run by `make bench`).

    python3 bench/run.py --build <builddir> [--runs 5] [--quick | --full] [--no-smp | --smp-only]
                         [--results <dir>] [--json <path>]

Runs every benchmark program of <builddir>/bench (built from bench/CMakeLists.txt): one warm-up
run, whose result is discarded, then --runs timed runs (the 1M-thread RSS and 10M stackless-thread
runs are capped at 5).
Each program measures itself and prints one line

    RESULT bench=<name> impl=<impl> value=<float> unit=<unit> [answer=<n>] [n=<iterations>]

The driver checks every run (exit status, a RESULT line of the expected bench, impl and unit, the
thread-ring answer), shows progress on stderr, prints a table of medians and the acceptance
ratios, and writes results/micro-<UTC timestamp>.json (or --json <path>; it holds the machine,
every sample and the Markdown tables) and results/micro-latest.md at the repository root.

Exit status: 0 when every program ran and answered correctly, even if a performance target is
missed (the ratios are a report); 1 when a program failed or answered wrong; 2 on a usage error;
130 when interrupted.
A peer whose binary is absent (Boost.Context not found at configure time, say) is reported as
"missing (<reason>)", never silently dropped.

The peers: POSIX threads, Boost.Context (boost-fiber, boost-fcontext), Boost.Fiber, the fiber
library with its scheduler and channels (boost-fibers: boost_fibers_peers <mode>), GNU Pth (pth) and Go
goroutines (one binary, go_peers, run twice: GOMAXPROCS=1 as impl go1 and GOMAXPROCS=<CPUs> as
go<CPUs>).  After the acceptance targets a second table sets, per benchmark, ursa's median beside
the best peer's ("ursa against the best peer"; every figure there is lower-is-better).

--quick is a smoke run: smaller counts, 3 timed runs unless --runs is given, no 1M-thread run;
its figures are indicative only.

Then the SMP section (issue #3, bench/smp_suite.py): the distribution cost, the parallel radix
sort (ursa at 1 and N VPs, pthreads, hand-partitioned kernel threads), the thread-ring and yield
ping-pong at N VPs, two independent groups; its own table, acceptance checks and per-VP idle
table.  Programs of that section print several RESULT lines per run (and VPSTAT lines).  Its
sizes: --quick (small), default (`make bench`: radices 2^1 2^4 2^8 2^10), --full or FULL in the
environment (`make bench FULL=1`: every radix 2^1..2^10).  --no-smp skips it, --smp-only runs it
alone.

Python 3 standard library only.
"""

import argparse
import datetime
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

import smp_suite           # the SMP section (issue #3), bench/smp_suite.py
from suite_common import (first_line, fmt_time, git_info, machine_info, md_table, phase_label,
                          write_json)
from smp_suite import fmt as fmt_value   # one number format for both sections

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RING = 503
NCPU = smp_suite.ncpus()    # the CPUs this process may use: the Go peers' second GOMAXPROCS
GO_PROCS = sorted({1, NCPU})                                  # GOMAXPROCS values, impl go<P>
GO_ENV_DROP = ("GOMAXPROCS", "GOGC", "GODEBUG", "GOMEMLIMIT")  # the Go runtime runs with its defaults
RUN_TIMEOUT = 300           # seconds one run may take before it counts as failed
RSS_1M_MAX_RUNS = 5         # runs of the big runs (1M-thread RSS, 10M stackless threads: 4-12 s each; their
                            # figures barely vary, but every figure of the report is a median of 5)


class Bench:
    """One benchmark program and how to run and check it."""

    def __init__(self, bench, impl, program, unit, n, quick_n, est, what,
                 ring=False, answer=None, max_runs=None, quick_skip=False, args=(), env=None,
                 counts=True):
        self.bench = bench          # the bench= name the program prints (for n, quick_n: see name())
        self.impl = impl            # ursa, ursa-pt, ursa-<N>vp, pthread, boost-fcontext, boost-fiber,
                                    # pth, go<P>
        self.program = program      # executable name in <build>/bench
        self.args = tuple(args)     # arguments before the count (a program with several benchmarks)
        self.env = dict(env or {})  # added to the environment of its runs (GOMAXPROCS)
        self.counts = counts        # False: the last argument is a size, not the n of the table
        self.unit = unit
        self.n = n                  # count passed after args (argv[1] if none) in a full run
        self.quick_n = quick_n      # ... and in a --quick run
        self.est = est              # a priori seconds per full run on a 2-core VM (for the ETA)
        self.what = what            # a few words for the table
        self.ring = ring            # a thread-ring: the answer is checked
        self.answer = answer        # the answer the task states for the full count
        self.max_runs = max_runs
        self.quick_skip = quick_skip

    @property
    def peer(self):
        return not self.impl.startswith("ursa")

    @property
    def family(self):
        """The peer family whose configure-time result decides whether it was built, or None."""
        if self.impl == "boost-fibers":
            return "boostfibers"
        if self.impl.startswith("boost"):
            return "boost"
        if self.impl == "pth":
            return "pth"
        if re.fullmatch(r"go\d+", self.impl):
            return "go"
        return None

    def count(self, quick):
        return self.quick_n if quick else self.n

    def name(self, quick):
        """The bench= name expected from the program (RSS names carry the thread count)."""
        if not self.bench.endswith("-K"):
            return self.bench
        k = self.count(quick)
        label = (f"{k // 1000000}M" if k % 1000000 == 0 else
                 f"{k // 1000}k" if k % 1000 == 0 else str(k))
        return self.bench[:-1] + label

    def expected_answer(self, quick):
        if not self.ring:
            return None
        n = self.count(quick)
        expected = n % RING + 1
        if not quick and self.answer is not None and expected != self.answer:
            raise AssertionError(f"{self.program}: N={n} gives {expected}, the task says {self.answer}")
        return expected


def go_bench(bench, procs, what, n, quick_n, est, ring=False, answer=None, args=()):
    """A Go peer: go_peers <args> <count> with GOMAXPROCS=procs (impl go<procs>)."""
    return Bench(bench, f"go{procs}", "go_peers", GO_UNITS[args[0]], n, quick_n, est[procs > 1],
                 f"{what}, GOMAXPROCS={procs}", ring=ring, answer=answer, args=args,
                 env={"GOMAXPROCS": str(procs)}, counts=args[0] != "radix")


GO_UNITS = {"yield": "ns/switch", "chan": "ns/pass", "ring": "ns/pass", "create": "ns/op",
            "rss": "KiB/thread", "radix": "ms"}

# The radix sort of the SMP section (radix_sort.c) at one radix, 2^8: its peers' programs run here
# (the "count" of these entries is log2 of the number of keys, their 2nd argument), ursa at 1 and N
# VPs and POSIX threads run in the SMP section only, and the comparisons take those figures from
# there, so that each figure has one source.  Every radix program first sorts once untimed (radix
# list "8,8": the last RESULT line, the second sort, is the figure), as the SMP section's
# radix_sort processes do (smp_suite.RADIX_WARMUP): no timed sort pays a process's first thread
# creations.
RADIX_R = 8
RADIX_LIST = f"{smp_suite.RADIX_WARMUP},{RADIX_R}"

# The suite, in table order.  Counts follow the task; est is measured on the development VM.
SUITE = [
    Bench("yield-pingpong", "ursa", "ursa_yield_pingpong", "ns/switch", 10_000_000, 1_000_000, 0.2,
          "2 threads alternating ursa_yield"),
    *[go_bench("yield-pingpong", p, "2 goroutines, shared turn + runtime.Gosched", 2_000_000, 200_000,
               (0.35, 1.0), args=("yield",)) for p in GO_PROCS],
    Bench("yield-pingpong", "pth", "pth_yield_pingpong", "ns/switch", 200_000, 20_000, 1.5,
          "2 Pth threads alternating pth_yield"),
    Bench("yield-pingpong", "boost-fibers", "boost_fibers_peers", "ns/switch", 5_000_000, 500_000, 0.8,
          "2 Boost.Fiber fibers alternating this_fiber::yield", args=("yield",)),
    Bench("raw-switch", "boost-fcontext", "boost_raw_switch", "ns/switch", 50_000_000, 5_000_000, 0.8,
          "jump_fcontext main <-> 1 context"),
    Bench("sem-pingpong", "ursa", "ursa_sem_pingpong", "ns/pass", 5_000_000, 500_000, 0.15,
          "2 threads, 2 semaphores"),
    Bench("sem-pingpong", "pthread", "pthread_sem_pingpong", "ns/pass", 100_000, 20_000, 1.4,
          "2 pthreads, 2 sem_t"),
    *[go_bench("sem-pingpong", p, "2 goroutines, 2 unbuffered channels", 1_000_000, 100_000,
               (0.35, 0.5), args=("chan",)) for p in GO_PROCS],
    Bench("ring-sem", "ursa", "ursa_ring_sem", "ns/pass", 10_000_000, 1_000_000, 0.2,
          "503 threads, semaphore each", ring=True, answer=361),
    Bench("ring-sem", "pthread", "pthread_ring_sem", "ns/pass", 1_000_000, 100_000, 7.5,
          "503 pthreads, sem_t each", ring=True, answer=37),
    *[go_bench("ring-sem", p, "503 goroutines, unbuffered channel each", 1_000_000, 100_000,
               (0.25, 0.4), ring=True, answer=37, args=("ring",)) for p in GO_PROCS],
    Bench("ring-sem", "boost-fibers", "boost_fibers_peers", "ns/pass", 1_000_000, 100_000, 0.3,
          "503 Boost.Fiber fibers, unbuffered channel each", ring=True, answer=37, args=("ring",)),
    Bench("ring-sem", "pth", "pth_ring", "ns/pass", 2_000, 500, 1.3,
          "503 Pth threads, condition each (Pth walks its 503 waiters per switch)", ring=True,
          answer=492),
    Bench("ring-mutex", "pthread", "pthread_ring_mutex", "ns/pass", 200_000, 20_000, 1.5,
          "the blog's ring: 503 POSIX threads, a default mutex each", ring=True, answer=310),
    Bench("ring-mutex", "ursa-run", "pthread_ring_mutex_ursa_run", "ns/pass", 10_000_000, 1_000_000,
          0.4, "the same binary under ursa-run -n 1 (libursa-pthread.so)", ring=True, answer=361),
    Bench("ring-sem", "ursa-run", "pthread_ring_sem_ursa_run", "ns/pass", 10_000_000, 1_000_000, 0.5,
          "the POSIX sem_t ring (pthread_ring_sem) under ursa-run -n 1 (libursa-pthread.so)", ring=True,
          answer=361),
    Bench("cond-pingpong", "pthread", "pthread_cond_pingpong", "ns/pass", 50_000, 10_000, 1.7,
          "2 POSIX threads, a mutex and a condition variable each way"),
    Bench("cond-pingpong", "ursa-run", "pthread_cond_pingpong_ursa_run", "ns/pass", 5_000_000, 500_000, 0.6,
          "the same binary under ursa-run -n 1 (libursa-pthread.so)"),
    Bench("socket-pingpong", "ursa", "ursa_socket_pingpong", "ns/pass", 100_000, 20_000, 1.0,
          "2 ursa threads of 1 VP, one byte each way over a socketpair, ursa_read and ursa_write"),
    Bench("socket-pingpong", "pthread", "pthread_socket_pingpong", "ns/pass", 100_000, 20_000, 1.5,
          "2 POSIX threads, one byte each way over a socketpair, blocking read and write"),
    Bench("socket-pingpong", "ursa-run", "pthread_socket_pingpong_ursa_run", "ns/pass", 100_000, 20_000, 1.5,
          "the same binary under ursa-run -n 1: its reads wait in the VP's I/O engine"),
    Bench("ring-direct", "ursa", "ursa_ring_yield_to", "ns/pass", 10_000_000, 1_000_000, 0.2,
          "503 threads, ursa_yield_to(next)", ring=True, answer=361),
    Bench("ring-direct", "boost-fiber", "boost_fiber_ring", "ns/pass", 10_000_000, 1_000_000, 0.12,
          "503 fibers, resume(next)", ring=True, answer=361),
    Bench("ring-direct", "pth", "pth_ring_yield_to", "ns/pass", 200_000, 20_000, 1.0,
          "503 Pth threads, pth_yield(next)", ring=True, answer=310),
    Bench("pt-ring-optimum", "ursa-pt", "pt_ring", "ns/pass", 10_000_000, 1_000_000, 0.03,
          "503 stackless threads (ursa/pt.h), polled 0..502", ring=True, answer=361,
          args=("optimum",)),
    Bench("pt-ring-pessimum", "ursa-pt", "pt_ring", "ns/pass", 1_000_000, 100_000, 1.0,
          "503 stackless threads (ursa/pt.h), polled 502..0", ring=True, answer=37,
          args=("pessimum",)),
    Bench("create-join", "ursa", "ursa_create_join", "ns/op", 1_000_000, 100_000, 0.07,
          "empty thread, warm stack pool"),
    Bench("create-join", "boost-fiber", "boost_fiber_create", "ns/op", 1_000_000, 100_000, 0.08,
          "create+resume+finish, 16 KiB stack"),
    Bench("create-join", "boost-fibers", "boost_fibers_peers", "ns/op", 1_000_000, 100_000, 0.6,
          "Boost.Fiber fiber + join, 16 KiB stack", args=("create",)),
    Bench("create-join", "pthread", "pthread_create_join", "ns/op", 50_000, 5_000, 1.8,
          "empty pthread, 16 KiB stack"),
    *[go_bench("create-join", p, "go + WaitGroup of an empty goroutine", 1_000_000, 100_000,
               (0.45, 0.5), args=("create",)) for p in GO_PROCS],
    Bench("create-join", "pth", "pth_create_join", "ns/op", 100_000, 10_000, 0.8,
          "pth_spawn + pth_join, 16 KiB stack"),
    # ursa at every count a peer is measured at (Pth 2k, POSIX threads 10k, the others 100k), so
    # that memory per thread is compared at a common count
    Bench("rss-blocked-K", "ursa", "ursa_rss_blocked", "KiB/thread", 2_000, 2_000, 0.05,
          "blocked on a semaphore, 64 KiB stacks"),
    Bench("rss-blocked-K", "ursa", "ursa_rss_blocked", "KiB/thread", 10_000, 10_000, 0.1,
          "blocked on a semaphore, 64 KiB stacks"),
    Bench("rss-blocked-K", "ursa", "ursa_rss_blocked", "KiB/thread", 100_000, 100_000, 0.9,
          "blocked on a semaphore, 64 KiB stacks"),
    Bench("rss-blocked-K", "ursa", "ursa_rss_blocked", "KiB/thread", 1_000_000, 1_000_000, 12.0,
          "blocked on a semaphore, 64 KiB stacks", max_runs=RSS_1M_MAX_RUNS, quick_skip=True),
    Bench("rss-blocked-K", "boost-fiber", "boost_fiber_rss", "KiB/thread", 100_000, 100_000, 0.5,
          "suspended fiber, 16 KiB stack"),
    Bench("rss-blocked-K", "boost-fibers", "boost_fibers_peers", "KiB/thread", 100_000, 100_000, 0.5,
          "Boost.Fiber fiber blocked on a channel, 16 KiB stack", args=("rss",)),
    Bench("rss-blocked-K", "pthread", "pthread_rss_blocked", "KiB/thread", 10_000, 10_000, 0.8,
          "blocked on a sem_t, 16 KiB stacks"),
    *[go_bench("rss-blocked-K", p, "goroutine blocked on a channel", 100_000, 100_000, (0.35, 0.35),
               args=("rss",)) for p in GO_PROCS],
    Bench("rss-blocked-K", "pth", "pth_rss_blocked", "KiB/thread", 2_000, 2_000, 0.7,
          "Pth thread waiting on a condition, 16 KiB stacks (start-up is quadratic in K)"),
    Bench("pt-bytes", "ursa-pt", "pt_ring", "bytes/thread", RING, RING, 0.01,
          "sizeof(struct ursa_pt): a stackless thread's whole state", args=("bytes",)),
    Bench("pts-ring", "ursa-pts", "pt_sched_ring", "ns/pass", 10_000_000, 1_000_000, 0.15,
          "503 stackless threads scheduled by ursa (ursa/pt_sched.h), 1 VP, semaphore each",
          ring=True, answer=361, args=("ring",)),
    Bench("pts-bytes", "ursa-pts", "pt_sched_ring", "bytes/thread", RING, RING, 0.01,
          "sizeof(struct ursa_pts): a scheduled stackless thread's whole state", args=("bytes",)),
    Bench("pts-live-K", "ursa-pts", "pt_sched_ring", "bytes/thread", 10_000_000, 10_000_000, 4.0,
          "RSS growth per live scheduled stackless thread (all waiting on one semaphore)",
          args=("live",), max_runs=RSS_1M_MAX_RUNS),
    Bench("pts-live-time-K", "ursa-pts", "pt_sched_ring", "ns/thread", 10_000_000, 10_000_000, 4.0,
          "10M stackless threads: spawn, run to a wait, post, join (per thread)",
          args=("live-time",), max_runs=RSS_1M_MAX_RUNS),
    *[go_bench(f"radix-2^{RADIX_R}", p, "2^8 goroutines + WaitGroup per phase", 22, 22, (0.5, 0.4),
               args=("radix", RADIX_LIST)) for p in GO_PROCS],
    # issue #20: Go at GOMAXPROCS=N at every radix of the SMP section runs there, interleaved with
    # ursa's and the kernel threads' radix sorts (smp_suite.run; radix_vs_go below)
    Bench(f"radix-2^{RADIX_R}", "boost-fiber", "boost_fiber_radix", "ms", 22, 22, 0.5,
          "2^8 fibers (64 KiB stacks) made, then each resumed to its end, per phase; 1 kernel thread",
          args=(RADIX_LIST,), counts=False),
    Bench(f"radix-2^{RADIX_R}", "boost-fibers", "boost_fibers_radix", "ms", 22, 22, 0.6,
          "2^8 Boost.Fiber fibers (64 KiB stacks) made + joined per phase; 1 kernel thread",
          args=(RADIX_LIST,), counts=False),
    Bench(f"radix-2^{RADIX_R}", "pth", "pth_radix", "ms", 22, 22, 0.6,
          "2^8 Pth threads (64 KiB stacks) spawned + joined per phase; 1 kernel thread",
          args=(RADIX_LIST,), counts=False),
]

# The acceptance ratios: (label, numerator, denominator or None for an absolute figure, op, target).
# Operands are (bench name for a full run, impl); the medians are used.
TARGETS = [
    ("ursa yield ping-pong / Boost.Context raw switch",
     ("yield-pingpong", "ursa"), ("raw-switch", "boost-fcontext"), "<=", 1.5),
    ("pthread sem ping-pong / ursa sem ping-pong",       # the same blocking hand-off, both sides
     ("sem-pingpong", "pthread"), ("sem-pingpong", "ursa"), ">=", 200),
    ("ursa sem ring, ns/pass",
     ("ring-sem", "ursa"), None, "<=", 12),
    ("socketpair ping-pong: POSIX threads / ursa threads (issue #18)",
     ("socket-pingpong", "pthread"), ("socket-pingpong", "ursa"), ">=", 2),
    ("POSIX mutex ring: native / the same binary under ursa-run (1 VP)",
     ("ring-mutex", "pthread"), ("ring-mutex", "ursa-run"), ">=", 300),
    ("POSIX mutex ring under ursa-run / ursa's own sem ring",
     ("ring-mutex", "ursa-run"), ("ring-sem", "ursa"), "<=", 1.5),
    ("POSIX semaphore ring: native / the same binary under ursa-run (1 VP)",
     ("ring-sem", "pthread"), ("ring-sem", "ursa-run"), ">=", 300),
    ("POSIX semaphore ring under ursa-run / ursa's own sem ring",
     ("ring-sem", "ursa-run"), ("ring-sem", "ursa"), "<=", 1.5),
    ("ursa named-yield ring / Boost.Context fiber ring",
     ("ring-direct", "ursa"), ("ring-direct", "boost-fiber"), "<=", 1.3),
    ("ursa create+join, ns",
     ("create-join", "ursa"), None, "<=", 40),
    ("ursa KiB per blocked thread, 100k threads",
     ("rss-blocked-100k", "ursa"), None, "<=", 4.5),
    ("ursa KiB per blocked thread, 1M threads",
     ("rss-blocked-1M", "ursa"), None, "<=", 4.5),
    ("ursa-scheduled stackless ring / hand-written optimum visit order",
     ("pts-ring", "ursa-pts"), ("pt-ring-optimum", "ursa-pt"), "<=", 2),
    ("hand-written pessimum visit order / ursa-scheduled stackless ring",
     ("pt-ring-pessimum", "ursa-pt"), ("pts-ring", "ursa-pts"), ">=", 100),
    ("bytes per scheduled stackless thread (sizeof)",
     ("pts-bytes", "ursa-pts"), None, "<=", 64),
    ("bytes of RSS per live stackless thread, 10M threads",
     ("pts-live-10M", "ursa-pts"), None, "<=", 64),
]

# "ursa against the best peer": per benchmark, ursa's entry and its peers' (bench, impl); every
# figure is lower-is-better, so the best peer is the one with the lowest median.  The RSS peers run
# at different thread counts, so memory has a row per count, each with ursa at that count.  raw-switch is not a scheduler, so it is not a
# peer of the yield ping-pong (the acceptance targets compare them).
def go_impls(bench):
    return [(bench, f"go{p}") for p in GO_PROCS]


COMPARISONS = [
    ("thread-ring, blocking hand-off", ("ring-sem", "ursa"),
     [("ring-sem", "pthread"), *go_impls("ring-sem"), ("ring-sem", "boost-fibers"), ("ring-sem", "pth")]),
    ("thread-ring, direct switch", ("ring-direct", "ursa"),
     [("ring-direct", "boost-fiber"), ("ring-direct", "pth")]),
    ("yield ping-pong", ("yield-pingpong", "ursa"),
     [*go_impls("yield-pingpong"), ("yield-pingpong", "boost-fibers"), ("yield-pingpong", "pth")]),
    ("blocking ping-pong (semaphores, channels)", ("sem-pingpong", "ursa"),
     [("sem-pingpong", "pthread"), *go_impls("sem-pingpong")]),
    ("create + join", ("create-join", "ursa"),
     [("create-join", "boost-fiber"), ("create-join", "boost-fibers"), ("create-join", "pthread"), *go_impls("create-join"),
      ("create-join", "pth")]),
    # memory per thread at a common count: ursa is measured at each peer's
    ("memory per blocked thread, 100k threads", ("rss-blocked-100k", "ursa"),
     [("rss-blocked-100k", "boost-fiber"), ("rss-blocked-100k", "boost-fibers"), *go_impls("rss-blocked-100k")]),
    ("memory per blocked thread, 10k threads", ("rss-blocked-10k", "ursa"), [("rss-blocked-10k", "pthread")]),
    ("memory per blocked thread, 2k threads", ("rss-blocked-2k", "ursa"), [("rss-blocked-2k", "pth")]),
    # ursa-1vp, ursa-<N>vp and pthread: the SMP section's figures (see RADIX_R)
    (f"radix sort 2^{RADIX_R}, one CPU", (f"radix-2^{RADIX_R}", "ursa-1vp"),
     [(f"radix-2^{RADIX_R}", "go1"), (f"radix-2^{RADIX_R}", "boost-fiber"), (f"radix-2^{RADIX_R}", "boost-fibers"),
      (f"radix-2^{RADIX_R}", "pth")]),
]
if NCPU > 1:
    COMPARISONS.append(
        (f"radix sort 2^{RADIX_R}, {NCPU} CPUs", (f"radix-2^{RADIX_R}", f"ursa-{NCPU}vp"),
         [(f"radix-2^{RADIX_R}", "pthread"), (f"radix-2^{RADIX_R}", f"go{NCPU}")]))

# The POSIX-threads layer (issue #17): each unmodified POSIX program natively, under ursa-run, and
# ursa's own program for the same work, with the targets (TARGETS above; the radix sort's is
# an SMP check).  (row, unit, native, under ursa-run, ursa's own or None, what ursa's own is,
# goals): operands are (bench, impl, from the SMP section?); goals name TARGETS labels, or SMP
# checks by the start of their name.
PTHREAD_LAYER = [
    ("thread-ring 503, a default mutex per thread (the blog's [4])", "ns/pass",
     ("ring-mutex", "pthread", False), ("ring-mutex", "ursa-run", False), ("ring-sem", "ursa", False),
     "semaphore ring", ["POSIX mutex ring: native / the same binary under ursa-run (1 VP)",
                        "POSIX mutex ring under ursa-run / ursa's own sem ring"]),
    ("thread-ring 503, a sem_t per thread", "ns/pass",
     ("ring-sem", "pthread", False), ("ring-sem", "ursa-run", False), ("ring-sem", "ursa", False),
     "semaphore ring", ["POSIX semaphore ring: native / the same binary under ursa-run (1 VP)",
                        "POSIX semaphore ring under ursa-run / ursa's own sem ring"]),
    ("mutex + condition-variable ping-pong, 2 threads", "ns/pass",
     ("cond-pingpong", "pthread", False), ("cond-pingpong", "ursa-run", False), None, None, []),
    ("socketpair ping-pong, blocking read and write, 2 threads", "ns/pass",
     ("socket-pingpong", "pthread", False), ("socket-pingpong", "ursa-run", False), None, None, []),
    (f"radix sort 2^{RADIX_R}, 2^22 keys, 2^8 threads created + joined per phase, {NCPU} VPs", "ms",
     (f"radix-2^{RADIX_R}", "posix-native", True), (f"radix-2^{RADIX_R}", f"ursa-run-{NCPU}vp", True),
     (f"radix-2^{RADIX_R}", f"ursa-{NCPU}vp", True), f"radix_sort at {NCPU} VPs",
     ["radix sort: unmodified POSIX program under ursa-run"]),
]

RESULT_RE = re.compile(r"^RESULT((?: [a-z_]+=\S+)+)\s*$")


# ---- helpers ----------------------------------------------------------------------------------

def cpu_busy(seconds=0.5):
    """The share (0..1) of all CPUs' time spent busy over `seconds`, from /proc/stat; None when
    unknown.  Taken before and after the run: other work on the machine makes the figures noisy."""
    def sample():
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)       # idle + iowait
        return sum(fields[:8]), idle                                     # guest time is in user
    try:
        total0, idle0 = sample()
        time.sleep(seconds)
        total1, idle1 = sample()
    except (OSError, ValueError, IndexError):
        return None
    return round(1.0 - (idle1 - idle0) / (total1 - total0), 3) if total1 > total0 else None


def fmt_busy(busy):
    return "?" if busy is None else f"{busy:.0%}"


def parse_result(stdout):
    """The fields of the last RESULT line of a program's output, or None."""
    found = None
    for line in stdout.splitlines():
        m = RESULT_RE.match(line.strip())
        if m:
            found = dict(kv.split("=", 1) for kv in m.group(1).split())
    return found


class Progress:
    """One status line on stderr: which benchmark, run k of n, elapsed, estimated time left.
    On a terminal the line is rewritten in place; otherwise each update is a line of its own,
    written only when a run starts."""

    def __init__(self, plan):
        self.tty = sys.stderr.isatty()
        self.start = time.monotonic()
        self.total_est = sum(est * runs for _, _, est, runs in plan)
        self.done_est = 0.0          # a priori estimate of the runs finished so far
        self.done_real = 0.0         # ... and what they really took
        self.width = 0
        self.phase = phase_label()   # "bench 2/5 |" under make bench

    def left(self, running_est=0.0, running_for=0.0):
        scale = self.done_real / self.done_est if self.done_est > 0 else 1.0
        remaining = (self.total_est - self.done_est) * scale
        # The run under way: what is left of its scaled estimate (never below zero).
        return max(0.0, remaining - min(running_for, running_est * scale))

    def show(self, text, fresh, running_est=0.0, running_for=0.0):
        elapsed = time.monotonic() - self.start
        line = f"{text}  elapsed {fmt_time(elapsed)}  left ~{fmt_time(self.left(running_est, running_for))}"
        if self.phase:
            line = f"{self.phase} {line}"
        if self.tty:
            pad = max(0, self.width - len(line))
            sys.stderr.write("\r" + line + " " * pad)
            self.width = len(line)
            sys.stderr.flush()
        elif fresh:
            print(line, file=sys.stderr, flush=True)

    def run_done(self, est, real):
        self.done_est += est
        self.done_real += real

    def drop(self, est):
        """Removes runs that will not happen (after a failure) from the estimate."""
        self.total_est -= est

    def note(self, text):
        """A line that stays (a finished benchmark, a failure)."""
        if self.tty:
            sys.stderr.write("\r" + " " * self.width + "\r")
            self.width = 0
        print(text, file=sys.stderr, flush=True)

    def elapsed(self):
        return time.monotonic() - self.start


def run_program(path, args, env, on_tick):
    """Runs one program with its arguments; returns (returncode or None on timeout, stdout,
    stderr, seconds)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.monotonic()
        proc = subprocess.Popen([path] + [str(a) for a in args], stdout=out, stderr=err, env=env)
        rc = None
        try:
            while True:
                try:
                    rc = proc.wait(timeout=0.5)
                    break
                except subprocess.TimeoutExpired:
                    if time.monotonic() - t0 > RUN_TIMEOUT:
                        proc.kill()
                        proc.wait()
                        rc = None
                        break
                    on_tick(time.monotonic() - t0)
        except KeyboardInterrupt:
            proc.kill()
            proc.wait()
            raise
        seconds = time.monotonic() - t0
        out.seek(0)
        err.seek(0)
        return (rc, out.read().decode(errors="replace"), err.read().decode(errors="replace"), seconds)


# ---- the run ----------------------------------------------------------------------------------

def check_run(b, quick, rc, stdout, stderr):
    """(result dict, None) for a good run, or (None, reason) for a failed one."""
    if rc is None:
        return None, f"timed out after {RUN_TIMEOUT} s"
    res = parse_result(stdout)
    expected = b.expected_answer(quick)
    if rc != 0:
        why = f"killed by signal {-rc}" if rc < 0 else f"exit status {rc}"
        if res is not None and expected is not None and res.get("answer") != str(expected):
            why += f", answer {res.get('answer')} (expected {expected})"
        tail = " | ".join(stderr.strip().splitlines()[-3:])
        return None, why + (f": {tail}" if tail else "")
    if res is None:
        return None, "no RESULT line in its output"
    want = {"bench": b.name(quick), "impl": b.impl, "unit": b.unit}
    for key, value in want.items():
        if res.get(key) != value:
            return None, f"RESULT {key}={res.get(key)}, expected {value}"
    try:
        res["value"] = float(res["value"])
    except (KeyError, ValueError):
        return None, "RESULT line without a numeric value"
    if expected is not None:
        got = res.get("answer")
        if got != str(expected):
            return None, f"wrong answer {got}, expected {expected}"
        res["answer"] = int(got)
    return res, None


PEER_NOT_FOUND = {"boost": "Boost.Context not found at configure time",
                  "boostfibers": "Boost.Fiber not found at configure time",
                  "pth": "GNU Pth not found at configure time",
                  "go": "go not found at configure time"}


def build_failure(path):
    """Why a peer built by a tolerant build step (the Go peers: peers/go/build.cmake) is absent:
    the first 300 characters of <path>.failed, or None."""
    try:
        with open(path + ".failed") as f:
            text = " ".join(f.read().split())
    except OSError:
        return None
    return "go build failed: " + (text[:300] + " ..." if len(text) > 300 else text or "no output")


def plan_suite(args, build_bench, config):
    """The micro-benchmark entries (suite order) and the plan of their runs."""
    quick = args.quick
    entries = []       # one dict per benchmark, in suite order: what goes into the JSON
    plan = []          # (bench, entry, est seconds per run, runs incl. warm-up): what to run
    for b in SUITE:
        e = {"bench": b.name(quick), "impl": b.impl, "program": b.program,
             "args": [str(a) for a in b.args], "env": dict(b.env), "arg_is_n": b.counts,
             "unit": b.unit, "what": b.what, "arg": b.count(quick), "n": None, "status": "pending",
             "reason": None,
             "samples": [], "warmup": None, "run_seconds": [], "answer": None,
             "expected_answer": b.expected_answer(quick), "median": None, "min": None, "max": None}
        path = os.path.join(build_bench, b.program)
        family = b.family
        if quick and b.quick_skip:
            e["status"], e["reason"] = "skipped", "not run with --quick"
        elif family and config.get(f"{family}_found") is False:
            # Not built by this configuration (a binary left from an earlier one would be stale).
            e["status"] = "missing"
            e["reason"] = config.get(f"{family}_reason") or PEER_NOT_FOUND[family]
        elif not os.access(path, os.X_OK):
            if b.peer:
                e["status"], e["reason"] = "missing", (build_failure(path) or
                                                       f"{b.program} not built in {build_bench}")
            else:
                e["status"], e["reason"] = "failed", f"{path} not found: build the project first"
        entries.append((b, e))
        if e["status"] == "pending":
            runs = min(args.runs, b.max_runs) if b.max_runs else args.runs
            est = b.est * (b.count(quick) / b.n)
            plan.append((b, e, est + 0.01, runs + 1))
    return [e for _, e in entries], plan


def run_suite(args, build_bench, env, plan, progress):
    """Runs the micro-benchmarks of plan (plan_suite), filling in their entries."""
    quick = args.quick
    total = len(plan)
    for index, (b, e, est, runs) in enumerate(plan, 1):
        path = os.path.join(build_bench, b.program)
        label = f"[{index}/{total}] {e['bench']} ({e['impl']})"
        run_env = env
        if b.family == "go":
            run_env = {k: v for k, v in env.items() if k not in GO_ENV_DROP}
        run_env = dict(run_env, **b.env)
        for r in range(runs):
            kind = "warm-up" if r == 0 else f"run {r}/{runs - 1}"
            progress.show(f"{label} {kind}", True, est, 0.0)
            rc, out, err, secs = run_program(
                path, list(b.args) + [e["arg"]], run_env,
                lambda t, k=kind: progress.show(f"{label} {k}", False, est, t))
            progress.run_done(est, secs)
            res, why = check_run(b, quick, rc, out, err)
            if why is not None:
                e["status"], e["reason"] = "failed", f"{kind}: {why}"
                progress.note(f"{label}: FAILED: {e['reason']}")
                progress.drop(est * (runs - r - 1))     # the runs left out of this benchmark
                break
            if r == 0:
                e["warmup"] = res["value"]
            else:
                e["samples"].append(res["value"])
                e["run_seconds"].append(round(secs, 3))
            e["answer"] = res.get("answer")
            e["n"] = int(res["n"]) if res.get("n", "").isdigit() else None
        if e["status"] == "pending":
            e["status"] = "ok"
            e["median"] = statistics.median(e["samples"])
            e["min"], e["max"] = min(e["samples"]), max(e["samples"])
            progress.note(f"{label}: median {fmt_value(e['median'])} {e['unit']}"
                          f" (min {fmt_value(e['min'])}, max {fmt_value(e['max'])}, {len(e['samples'])} runs)")


def evaluate_targets(entries):
    by_key = {(e["bench"], e["impl"]): e for e in entries}
    out = []
    for label, num, den, op, target in TARGETS:
        r = {"name": label, "op": op, "target": target, "value": None, "status": None, "reason": None}
        operands = [num] + ([den] if den else [])
        for key in operands:
            e = by_key.get(key)
            if e is None:
                r["status"], r["reason"] = "n/a", f"{key[0]} ({key[1]}) not run"
            elif e["status"] != "ok":
                r["status"], r["reason"] = "n/a", f"{key[0]} ({key[1]}) {e['status']}" + \
                    (f": {e['reason']}" if e["reason"] else "")
            if r["status"]:
                break
        if r["status"] is None:
            v = by_key[num]["median"]
            if den:
                v = v / by_key[den]["median"]
            r["value"] = v
            ok = v <= target if op == "<=" else v >= target
            r["status"] = "met" if ok else "missed"     # a result, not a failure of the run
        out.append(r)
    return out


def radix_vs_go(entries, smp_entries):
    """Issue #20: the radix sort with ursa at N VPs (the SMP section's) against Go at GOMAXPROCS=N,
    at every radix both ran: a target row (the worst ratio, < 1.0), or none on one CPU."""
    if NCPU < 2:
        return []
    micro = {(e["bench"], e["impl"]): e for e in entries}
    smp = {(e["bench"], e["impl"]): e for e in smp_entries}
    ratios = []
    for (bench, impl), e in sorted(smp.items(), key=lambda kv: int(kv[0][0].split("^")[1])
                                   if kv[0][0].startswith("radix-2^") else 0):
        g = smp.get((bench, f"go{NCPU}")) or micro.get((bench, f"go{NCPU}"))   # the same rounds first
        if impl == f"ursa-{NCPU}vp" and g and e["status"] == "ok" and g["status"] == "ok":
            ratios.append((bench[len("radix-"):], e["median"] / g["median"]))
    r = {"name": f"radix sort: ursa {NCPU} VPs / Go GOMAXPROCS={NCPU}, every radix (worst; issue #20)",
         "op": "<", "target": 1.0, "value": None, "status": "n/a", "reason": "no radix with both figures"}
    if ratios:
        worst = max(ratios, key=lambda x: x[1])
        r.update(value=worst[1], status="met" if worst[1] < 1.0 else "missed",
                 reason=f"worst at {worst[0]}; " + ", ".join(f"{b}: {v:.3f}" for b, v in ratios))
    return [r]


def evaluate_pthread_layer(entries, smp_entries, targets, smp_checks):
    """The rows of PTHREAD_LAYER: each operand's median, min and max (or its status), the speed-up
    native / ursa-run, the ratio ursa-run / ursa's own, and the goals with their results (copied
    from the evaluated targets and SMP checks, so that each verdict is computed once)."""
    micro = {(e["bench"], e["impl"]): e for e in entries}
    smp = {(e["bench"], e["impl"]): e for e in smp_entries}

    def operand(key):
        if key is None:
            return None
        bench, impl, in_smp = key
        e = (smp if in_smp else micro).get((bench, impl))
        if e is None:
            return {"bench": bench, "impl": impl, "median": None, "status": "not run"}
        return {"bench": bench, "impl": impl, "median": e["median"], "min": e["min"], "max": e["max"],
                "status": e["status"] + (f": {e['reason']}" if e.get("reason") else "")}

    def ratio(a, b):
        return a["median"] / b["median"] if a and b and a["median"] and b["median"] else None

    out = []
    for name, unit, native, under, own, own_what, goals in PTHREAD_LAYER:
        row = {"name": name, "unit": unit, "native": operand(native), "ursa_run": operand(under),
               "own": operand(own), "own_what": own_what, "goals": []}
        row["speedup"] = ratio(row["native"], row["ursa_run"])
        row["vs_own"] = ratio(row["ursa_run"], row["own"])
        for g in goals:
            found = [t for t in targets if t["name"] == g] + [c for c in smp_checks if c["name"].startswith(g)]
            for t in found:
                row["goals"].append({k: t[k] for k in ("name", "op", "target", "value", "status", "reason")})
            if not found:
                row["goals"].append({"name": g, "op": None, "target": None, "value": None,
                                     "status": "n/a", "reason": "not evaluated in this run"})
        out.append(row)
    return out


PTHREAD_TITLE = "POSIX-threads programs on ursa (issue #17): the same binary natively and under ursa-run"
PTHREAD_NOTE = ("Medians (min-max).  Each program is plain POSIX C (bench/peers/pthread_*.c) and runs unmodified: "
                "natively on kernel threads, then under `ursa-run` (libursa-pthread.so by LD_PRELOAD) at 1 VP, "
                "the radix sort at N VPs (its figures are the SMP section's runs).  *ursa's own* is the program "
                "written for ursa's API doing the same work in the same run; a met/missed verdict is the "
                "acceptance target's or SMP check's above.")
PTHREAD_HEAD = ["POSIX program (unmodified)", "natively", "under ursa-run", "native / ursa-run",
                "ursa's own", "ursa-run / ursa's own", "issue #17's targets"]


def pthread_layer_rows(layer):
    def fig(o):
        if o is None:
            return "-"
        if o["median"] is None:
            return f"- ({o['status']})"
        return f"{fmt_value(o['median'])} ({fmt_value(o['min'])}-{fmt_value(o['max'])})"

    rows = []
    for r in layer:
        goals = []
        for g in r["goals"]:
            if g["op"] is None:
                goals.append(f"{g['name']}: n/a ({g['reason']})")
                continue
            what = "native / ursa-run" if "native /" in g["name"] else "ursa-run / ursa's own"
            if g["name"].startswith("radix sort"):
                what = "ursa-run / ursa's own, worst radix"
            goals.append(f"{what} {g['op']} {g['target']}: {g['status']}"
                         + (f" ({fmt_value(g['value'])})" if g["value"] is not None else f" ({g['reason']})"))
        own = "-" if r["own"] is None else f"{r['own_what']} {fig(r['own'])}"
        rows.append([f"{r['name']}, {r['unit']}", fig(r["native"]), fig(r["ursa_run"]),
                     f"{fmt_value(r['speedup'])}x" if r["speedup"] else "-", own,
                     fmt_value(r["vs_own"]) if r["vs_own"] else "-", "; ".join(goals) or "(none)"])
    return rows


def evaluate_comparisons(entries, smp_entries=()):
    """ursa against the best peer, per COMPARISONS row: dicts with the ursa entry's figure, the
    best peer's, their ratio (ursa / best: below 1, ursa is better) and the other peers.  The
    radix sort's ursa and pthread figures are the SMP section's entries (smp_entries)."""
    by_key = {(e["bench"], e["impl"]): e for e in smp_entries}
    by_key.update({(e["bench"], e["impl"]): e for e in entries})
    out = []

    def why(e):
        if e is None:
            return "not run"
        return e["status"] + (f": {e['reason']}" if e["reason"] else "")

    for label, ursa_key, peer_keys in COMPARISONS:
        u = by_key.get(ursa_key)
        r = {"name": label, "ursa": {"bench": ursa_key[0], "impl": ursa_key[1], "median": None,
                                     "unit": u["unit"] if u else None},
             "best": None, "ratio": None, "peers": [], "status": None, "reason": None}
        peers = []
        for key in peer_keys:
            e = by_key.get(key)
            ok = e is not None and e["status"] == "ok"
            r["peers"].append({"bench": key[0], "impl": key[1], "median": e["median"] if ok else None,
                               "unit": e["unit"] if e else None, "status": e["status"] if e else "not run",
                               "reason": None if ok else why(e)})
            if ok:
                peers.append(r["peers"][-1])
        if u is None or u["status"] != "ok":
            r["status"], r["reason"] = "n/a", f"{ursa_key[0]} ({ursa_key[1]}) {why(u)}"
        else:
            r["ursa"]["median"] = u["median"]
        if not peers:
            r["status"] = r["status"] or "n/a"
            r["reason"] = r["reason"] or "no peer measured"
        else:
            r["best"] = min(peers, key=lambda x: x["median"])
        if r["status"] is None:
            r["ratio"] = r["ursa"]["median"] / r["best"]["median"] if r["best"]["median"] else None
            r["status"] = "ok" if r["ratio"] is not None else "n/a"
            if r["ratio"] is None:
                r["reason"] = "the best peer's median is 0"
        out.append(r)
    return out


# ---- the report -------------------------------------------------------------------------------

def table_rows(entries):
    rows = []
    for e in entries:
        if e["status"] == "ok":
            median, spread = fmt_value(e["median"]), f"{fmt_value(e['min'])} - {fmt_value(e['max'])}"
            note = e["what"]
            if e["answer"] is not None:
                note += f"; answer {e['answer']} ok"
        else:
            median = spread = "-"
            note = f"{e['status']}" + (f" ({e['reason']})" if e["reason"] else "")
        n = e["n"] if e["n"] is not None else e["arg"] if e.get("arg_is_n", True) else None
        rows.append([e["bench"], e["impl"], median, spread, e["unit"], f"{n:,}" if n is not None else "-",
                     str(len(e["samples"])), note])
    return rows


TABLE_HEAD = ["benchmark", "implementation", "median", "min - max", "unit", "n", "runs", "notes"]
TARGET_HEAD = ["target", "value", "goal", "result"]


def target_rows(targets):
    rows = []
    for t in targets:
        value = fmt_value(t["value"]) if t["value"] is not None else "-"
        result = t["status"] + (f" ({t['reason']})" if t["reason"] else "")
        rows.append([t["name"], value, f"{t['op']} {t['target']}", result])
    return rows


COMPARE_HEAD = ["benchmark", "ursa", "best peer", "ursa / best", "reading", "other peers"]


def comparison_rows(comparisons):
    rows = []
    for c in comparisons:
        unit = c["ursa"]["unit"] or ""
        ursa = (f"{fmt_value(c['ursa']['median'])} {unit}" if c["ursa"]["median"] is not None
                else f"- ({c['ursa']['impl']})")
        best = c["best"]
        best_s = (f"{best['impl']} {fmt_value(best['median'])} {best['unit']}"
                  + (f" ({best['bench']})" if best["bench"] != c["ursa"]["bench"] else "")) if best else "-"
        if c["status"] == "ok":
            ratio = fmt_value(c["ratio"])
            if c["ratio"] <= 1:
                reading = f"ursa better, {fmt_value(1 / c['ratio'])}x" if c["ratio"] > 0 else "ursa better"
            else:
                reading = f"{best['impl']} better, {fmt_value(c['ratio'])}x"
        else:
            ratio, reading = "-", f"n/a ({c['reason']})"
        others = []
        for p in c["peers"]:
            if best is not None and p is best:
                continue
            name = p["impl"] + (f" ({p['bench']})" if p["bench"] != c["ursa"]["bench"] else "")
            others.append(f"{name} {fmt_value(p['median'])}" if p["median"] is not None
                          else f"{name} {p['status']}")
        rows.append([c["name"], f"{c['ursa']['impl']} {ursa}", best_s, ratio, reading, "; ".join(others)])
    return rows


def text_table(head, rows):
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()
    return "\n".join([line(head), line(["-" * w for w in widths])] + [line(r) for r in rows])


def boost_version(config):
    if config.get("boost_version"):
        return config["boost_version"]
    try:
        with open("/usr/include/boost/version.hpp") as f:
            m = re.search(r'#define BOOST_LIB_VERSION "([^"]+)"', f.read())
            return m.group(1).replace("_", ".") + " (header, not used by the build)" if m else None
    except OSError:
        return None


def size_mode(args):
    """The sizes of this run, in the words every suite and scripts/bench.sh use: quick (--quick, a
    smoke run), full (--full or FULL in the environment, as `make bench FULL=1` sets it) or
    default (`make bench`)."""
    if args.quick:
        return "quick"
    if args.full or os.environ.get("FULL", "") not in ("", "0"):
        return "full"
    return "default"


def main():
    ap = argparse.ArgumentParser(description="Run ursa's micro-benchmarks and their peers.")
    ap.add_argument("--build", required=True, help="the CMake build directory (holds bench/)")
    ap.add_argument("--runs", type=int, default=None,
                    help="timed runs per benchmark after one warm-up (default 5; 3 with --quick)")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: smaller counts, no 1M-thread run, figures indicative only")
    ap.add_argument("--full", action="store_true",
                    help="SMP section at the paper's sizes (every radix 2^1..2^10); also when FULL "
                         "is set in the environment (make bench FULL=1)")
    which = ap.add_mutually_exclusive_group()
    which.add_argument("--no-smp", action="store_true", help="skip the SMP section (issue #3)")
    which.add_argument("--smp-only", action="store_true", help="run only the SMP section (issue #3)")
    ap.add_argument("--results", default=os.path.join(REPO, "results"),
                    help="where the JSON and Markdown reports go (default: results/ at the repository root)")
    ap.add_argument("--json", default=None,
                    help="the JSON report's path (default: <results>/micro-<UTC timestamp>.json); "
                         "make bench names it after its run so that bench/report.py reads this run's")
    args = ap.parse_args()
    if args.quick and args.full:
        ap.error("--quick and --full exclude each other")
    if args.runs is None:
        args.runs = 3 if args.quick else 5
    if args.runs < 1:
        ap.error("--runs must be at least 1")

    build = os.path.abspath(args.build)
    build_bench = os.path.join(build, "bench")
    if not os.path.isdir(build_bench):
        print(f"run.py: {build_bench} does not exist: configure and build first "
              f"(cmake -S . -B {args.build} -DURSA_BUILD_BENCH=ON && cmake --build {args.build})",
              file=sys.stderr)
        return 2
    config = {}
    try:
        with open(os.path.join(build_bench, "bench-config.json")) as f:
            config = json.load(f)
    except (OSError, ValueError) as exc:
        print(f"run.py: warning: no usable bench-config.json in {build_bench} ({exc})", file=sys.stderr)
    if config.get("build_type") and config["build_type"] not in ("Release", "RelWithDebInfo"):
        print(f"run.py: warning: build type {config['build_type']}: figures are not representative",
              file=sys.stderr)
    if config.get("sanitize"):
        print(f"run.py: warning: sanitizer build ({config['sanitize']}): figures are not representative",
              file=sys.stderr)

    stamp = datetime.datetime.now(datetime.timezone.utc)
    mode = size_mode(args)
    run_micro, run_smp = not args.smp_only, not args.no_smp
    env = {k: v for k, v in os.environ.items() if not k.startswith("URSA_")}   # library defaults
    load_start, busy_start = os.getloadavg(), cpu_busy()
    if busy_start is not None and busy_start > 0.10:
        print(f"run.py: warning: the CPUs are {busy_start:.0%} busy before the run: other work is "
              f"running, figures will be noisy", file=sys.stderr)
    entries, plan = plan_suite(args, build_bench, config) if run_micro else ([], [])
    smp_jobs, smp_settings, smp_plan = [], None, []
    if run_smp:
        go_ok = (os.access(os.path.join(build_bench, "go_peers"), os.X_OK) and
                 config.get("go_found") is not False)
        smp_jobs, smp_settings = smp_suite.plan(mode, args.runs, go=go_ok)
        smp_plan = [(job, None, job.est + 0.01, max(args.runs, job.min_runs) + 1) for job in smp_jobs]
        if smp_settings["vps"] < 2:
            print(f"run.py: warning: this process may use {smp_settings['vps']} CPU: the SMP section "
                  f"runs every figure on 1 VP and its checks mean nothing", file=sys.stderr)
    what = " + ".join(x for x, on in (("micro-benchmarks", run_micro),
                                       ("SMP section", run_smp)) if on)
    print(f"ursa {what}: {mode} sizes, 1 warm-up + {args.runs} runs each, build {build}", file=sys.stderr)
    progress = Progress(plan + smp_plan)
    smp_entries, smp_vpstats = [], []
    try:
        # the core's micro-benchmarks (issue #2) measure one VP: the cooperative core
        run_suite(args, build_bench, dict(env, URSA_VPS="1"), plan, progress)
        if run_smp:
            smp_entries, smp_vpstats = smp_suite.run(smp_jobs, smp_settings, build_bench, env, progress,
                                                     smp_plan, run_program, RUN_TIMEOUT)
    except KeyboardInterrupt:
        print("\nrun.py: interrupted", file=sys.stderr)
        return 130
    wall = progress.elapsed()
    targets = evaluate_targets(entries) if run_micro else []
    if run_micro and run_smp:
        targets += radix_vs_go(entries, smp_entries)
    comparisons = evaluate_comparisons(entries, smp_entries) if run_micro else []
    smp_checks = smp_suite.checks(smp_entries, smp_settings) if run_smp else []
    pthread_layer = evaluate_pthread_layer(entries, smp_entries, targets, smp_checks) if run_micro else []
    load_end, busy_end = os.getloadavg(), cpu_busy()

    failures = [e for e in entries + smp_entries if e["status"] == "failed"]
    rows, trows = table_rows(entries), target_rows(targets)
    crows_peer = comparison_rows(comparisons)
    prows = pthread_layer_rows(pthread_layer)
    print()
    print(f"ursa benchmarks: {mode} sizes, medians of {args.runs} runs (after 1 warm-up), "
          f"wall time {fmt_time(wall)}; CPUs {fmt_busy(busy_start)} busy before, {fmt_busy(busy_end)} after")
    if run_micro:
        print(text_table(TABLE_HEAD, rows))
        print()
        print("acceptance targets" + (" (--quick: indicative only)" if args.quick else ""))
        print(text_table(TARGET_HEAD, trows))
        print()
        print("ursa against the best peer (medians; lower is better; ursa / best < 1: ursa better; "
              "radix sort: ursa's and pthread's figures are the SMP section's)"
              + (" (--quick: indicative only)" if args.quick else ""))
        print(text_table(COMPARE_HEAD, crows_peer))
        print()
        print(PTHREAD_TITLE + (" (--quick: indicative only)" if args.quick else ""))
        print(text_table(PTHREAD_HEAD, prows))
    if run_smp:
        srows = smp_suite.table_rows(smp_entries)
        crows = smp_suite.check_rows(smp_checks)
        vrows = smp_suite.vp_rows(smp_vpstats, smp_settings)
        n = smp_settings["vps"]
        print()
        print(f"SMP (issue #3): {n} VPs, {smp_settings['mode']} sizes, radices "
              + " ".join(f"2^{r}" for r in smp_settings["radices"]))
        print(text_table(TABLE_HEAD, srows))
        print()
        print(f"SMP acceptance checks" + (" (--quick: indicative only)" if args.quick else ""))
        print(text_table(smp_suite.CHECK_HEAD, crows))
        print()
        print(f"idle time per VP, radix sort with ursa at {n} VPs (Table 3; medians): asleep = wall - on "
              f"CPU - runq of the VP's kernel thread (schedstat), independent of ursa's own idle_ns counter")
        print(text_table(smp_suite.VP_HEAD, vrows) if vrows else "(no VPSTAT lines)")

    machine = machine_info()
    cc = config.get("c_compiler") or "cc"
    cxx = config.get("cxx_compiler") or "c++"
    report = {
        "schema": 1,
        "timestamp_utc": stamp.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": shlex.join(getattr(sys, "orig_argv", [sys.executable] + sys.argv)),
        "cwd": os.getcwd(),
        "mode": mode,
        "runs": args.runs,
        "warmup_runs": 1,
        "wall_seconds": round(wall, 1),
        "machine": machine,
        "loadavg_start": [round(x, 2) for x in load_start],
        "loadavg_end": [round(x, 2) for x in load_end],
        "cpu_busy_start": busy_start,      # share of all CPUs busy over 0.5 s before the run
        "cpu_busy_end": busy_end,          # ... and after it (other work = noise)
        "compilers": {"cc": first_line([cc, "--version"]), "cxx": first_line([cxx, "--version"]),
                      "cc_path": cc, "cxx_path": cxx},
        "boost_version": boost_version(config),
        "git": git_info(),
        "build": {"dir": build, **config},
        "benchmarks": entries,
        "targets": targets,
        "comparisons": comparisons,
        "pthread_layer": pthread_layer,
        "peers": {"boost_version": boost_version(config),
                  "go_version": config.get("go_version") or None,
                  "pth_version": config.get("pth_version") or None,
                  "go_procs": GO_PROCS},
        "smp": ({**smp_settings, "benchmarks": smp_entries, "checks": smp_checks,
                 "vpstats": smp_vpstats} if run_smp else None),
        "failures": len(failures),
    }
    results = os.path.abspath(args.results)
    os.makedirs(results, exist_ok=True)
    json_path = (os.path.abspath(args.json) if args.json else
                 os.path.join(results, f"micro-{stamp.strftime('%Y%m%dT%H%M%SZ')}.json"))
    md_path = os.path.join(results, "micro-latest.md")
    g = report["git"]
    md = [f"# ursa micro-benchmarks ({report['timestamp_utc']})\n",
          f"- command: `{report['command']}`",
          f"- sizes: {mode}, 1 warm-up + {args.runs} timed runs per benchmark "
          f"(1M-thread RSS: at most {RSS_1M_MAX_RUNS}), wall time {fmt_time(wall)}",
          f"- machine: {machine['cpu_model']}, {machine['nproc']} CPUs, kernel {machine['kernel']}; "
          f"CPUs {fmt_busy(busy_start)} busy before the run, {fmt_busy(busy_end)} after",
          f"- compilers: {report['compilers']['cc']}; {report['compilers']['cxx']}; "
          f"Boost {report['boost_version'] or 'not found'}; "
          f"Go {config.get('go_version') or 'not found'}; "
          f"GNU Pth {config.get('pth_version') or 'not found'}",
          f"- git: {g['commit'] or 'unknown'}{' (dirty tree)' if g['dirty'] else ''}",
          f"- raw samples: `{os.path.relpath(json_path, REPO)}`\n"]
    if run_micro:
        md += [md_table(TABLE_HEAD, rows) + "\n",
               "## Acceptance targets" + (" (--quick: indicative only)" if args.quick else "") + "\n",
               md_table(TARGET_HEAD, trows) + "\n",
               "## ursa against the best peer" + (" (--quick: indicative only)" if args.quick else "") + "\n",
               "Medians; every figure is lower-is-better; ursa / best < 1: ursa is better.  The radix-sort "
               "rows take ursa's and POSIX threads' figures from the SMP section's runs below (each figure "
               "is measured once); every radix program sorts once untimed before the sort it reports.\n",
               md_table(COMPARE_HEAD, crows_peer) + "\n",
               "## " + PTHREAD_TITLE + (" (--quick: indicative only)" if args.quick else "") + "\n",
               PTHREAD_NOTE + "\n",
               md_table(PTHREAD_HEAD, prows)]
    if run_smp:
        md += [f"\n## SMP (issue #3): {n} VPs, {smp_settings['mode']} sizes\n",
               md_table(TABLE_HEAD, srows) + "\n",
               "### SMP acceptance checks" + (" (--quick: indicative only)" if args.quick else "") + "\n",
               md_table(smp_suite.CHECK_HEAD, crows) + "\n",
               f"### Idle time per VP, radix sort with ursa at {n} VPs (medians)\n",
               "*asleep* is the wall time minus the time the VP's kernel thread was on a CPU or waiting for "
               "one (`/proc/self/task/<tid>/schedstat`): measured from outside ursa, beside its own "
               "`ursa_stats_vp().idle_ns`.\n",
               md_table(smp_suite.VP_HEAD, vrows) if vrows else "(no VPSTAT lines)"]
    report["markdown"] = "\n".join(md) + "\n"     # bench/report.py embeds this run's tables
    write_json(json_path, report, indent=2)
    with open(md_path, "w") as f:
        f.write(report["markdown"])
    print()
    print(f"results: {os.path.relpath(json_path)}, {os.path.relpath(md_path)}")
    if failures:
        print(f"run.py: {len(failures)} benchmark(s) FAILED:", file=sys.stderr)
        for e in failures:
            print(f"  {e['bench']} ({e['impl']}): {e['reason']}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
