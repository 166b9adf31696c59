#!/usr/bin/env python3
"""bench/dist_suite.py - the MPI layer's figures (issue #19), run by `make bench` in its phase 4
(printed, and in results/REPORT.md through the JSON's "markdown").

    python3 bench/dist_suite.py --build build-release [--runs 5] [--json FILE]

Runs `mpiexec -n 2 bench/dist_latency` --runs times (each prints its own medians beside MPI's
ping-pong of the same run) and prints the median of each figure over the runs with its ratio to the
ping-pong and, where SplitThreads section 6 timed the same operation on the CM-5, the paper's figure
(PAPER below: what it measured, beside what ours measures); then the adaptive mesh refinement (build/dist_amr 20 4, wildcard) at 1, 2, 3 and 4 ranks,
--runs times each, with the median time and the speedup over 1 rank (3 and 4 ranks on a 2-core
machine are oversubscribed).  Exit status 1 when a run fails or an answer is not verified.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

import suite_common

# SplitThreads (../shared/papers/003_*, section 6), on the CM-5 (33 MHz SPARC nodes, active messages
# of about 13 us one way): figure -> (paper's us, what the paper timed).  Its create calls return once
# the thread exists on its node (the stack preallocated; no join), as ursa_dist_create does; its
# release waits for the home's completion message, where ursa's unlock is one message with no answer
# (the next lock's request follows it in FIFO order), so that row compares unlike costs.
PAPER = {
    "local_create_us": (31, "local create, non-blocking arbiter update (40 with a blocking one)"),
    "remote_create_us": (58, "remote create, until the creator gets the completion message"),
    "any_create_us": (76, "arbitrated (wildcard) create through node 0"),
    "remote_lock_us": (40, "remote mutex lock, free mutex: request and grant"),
    "remote_unlock_us": (31, "remote mutex release, until its completion message (ursa's: no answer)"),
    "yield_us": (35, "context switch (QuickThreads 32 + 3)"),
}
ORDER = ["local_create_us", "remote_create_us", "any_create_us", "remote_lock_us", "remote_unlock_us", "yield_us",
         "local_create_join_us", "remote_create_join_us", "any_create_join_us", "remote_lock_unlock_us",
         "remote_mvar_put_take_us", "lock_after_quiet_us", "idle_cpu_fraction"]


def run(cmd, env):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    if p.returncode != 0:
        sys.stderr.write(p.stdout + p.stderr)
        raise SystemExit(f"dist_suite: {' '.join(cmd)} exited {p.returncode}")
    return p.stdout


def mpiexec(build):
    """The build's mpiexec (CMake's FindMPI), not whatever `mpiexec` is first on PATH (Debian's
    alternatives prefer Open MPI's, which refuses to run as root without flags)."""
    return suite_common.cmake_cache(build, "MPIEXEC_EXECUTABLE") or "mpiexec"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build-release")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json")
    a = ap.parse_args()
    env = dict(os.environ, URSA_VPS=os.environ.get("URSA_VPS", "1"))
    lat = os.path.join(a.build, "bench", "dist_latency")
    amr = os.path.join(a.build, "dist_amr")
    mx = mpiexec(a.build)
    out = {"latency_runs": [], "amr": {}}
    for i in range(a.runs):
        o = run([mx, "-n", "2", lat, "2000"], env)
        m = re.search(r"^DIST_JSON (.*)$", o, re.M)
        out["latency_runs"].append(json.loads(m.group(1)))
    have = out["latency_runs"][0]
    keys = [k for k in ORDER if k in have] + [k for k in have if (k.endswith("_us") or k == "idle_cpu_fraction")
                                               and k not in ORDER and k != "mpi_pingpong_us"]
    med = {k: statistics.median(r[k] for r in out["latency_runs"]) for k in keys}
    pp = statistics.median(r["mpi_pingpong_us"] for r in out["latency_runs"])
    head = f"2 ranks, URSA_VPS={env['URSA_VPS']}, medians of {a.runs} runs (each the median of 2000 operations)"
    print(f"dist_suite: {head}")
    md = [f"MPICH, {head}; `python3 bench/dist_suite.py --build build-release --runs {a.runs}`.  "
          f"MPI's own 8-byte ping-pong (MPI_Send/MPI_Recv) in the same runs: **{pp:.2f} us**.  The paper's "
          "column: SplitThreads on the CM-5 (section 6), for the operations it timed; the create rows time the "
          "create call alone (it returns once the thread exists on its rank), as the paper did; the "
          "*_join rows add the join.", "",
          "| figure | ursa, median | / MPI ping-pong | paper (CM-5) | paper / ursa | what the paper timed |",
          "|---|---|---|---|---|---|"]
    for k in keys:
        if k == "idle_cpu_fraction":
            print(f"  {k:28s} {med[k] * 100:8.1f} % of a core")
            md.append(f"| {k} (an idle rank while its peer computes) | {med[k] * 100:.1f} % of a core | | | | |")
            continue
        pv, what = PAPER.get(k, (None, ""))
        paper = f"{pv} us" if pv else ""
        speed = f"{pv / med[k]:.0f}x" if pv and med[k] > 0 else ""
        print(f"  {k:28s} {med[k]:8.2f} us  {med[k] / pp:6.1f}x MPI ping-pong" + (f"   paper (CM-5): {pv} us" if pv else ""))
        md.append(f"| {k} | {med[k]:.2f} us | {med[k] / pp:.1f}x | {paper} | {speed} | {what} |")

    md += ["", "| adaptive mesh refinement (x^4+y^4 over the disk, maxdepth 20, 256 wildcard threads) | "
           "median s | speed-up over 1 rank |", "|---|---|---|"]
    ok = True
    t1 = None
    for np_ in (1, 2, 3, 4):
        times = []
        for i in range(a.runs):
            o = run([mx, "-n", str(np_), amr, "20", "4"], env)
            if "sequential check equal, accuracy ok" not in o:
                ok = False
                sys.stderr.write(o)
            times.append(float(re.search(r", ([0-9.]+) s;", o).group(1)))
        t = statistics.median(times)
        t1 = t if np_ == 1 else t1
        out["amr"][np_] = times
        print(f"  amr (x^4+y^4 over the disk, maxdepth 20, 256 wildcard threads) {np_} ranks: {t:.3f} s, "
              f"speedup {t1 / t:.2f}x{' (oversubscribed)' if np_ > 2 else ''}")
        md.append(f"| {np_} ranks{' (oversubscribed)' if np_ > 2 else ''} | {t:.3f} | {t1 / t:.2f}x |")
    out["medians"] = med
    out["mpi_pingpong_us"] = pp
    out["paper"] = {k: v[0] for k, v in PAPER.items()}
    out["markdown"] = "\n".join(md)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
