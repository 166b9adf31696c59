#!/usr/bin/env python3
"""bench/dist_suite.py - the MPI layer's figures (issue #19), run by `make bench` in its phase 4
(printed, and in results/REPORT.md through the JSON's "markdown").

    python3 bench/dist_suite.py --build build-release [--runs 5] [--json FILE]

Runs `mpiexec -n 2 bench/dist_latency` --runs times (each prints its own medians beside MPI's
ping-pong of the same run) and prints the median of each figure over the runs with its ratio to the
ping-pong; then the adaptive mesh refinement (build/dist_amr 20 4, wildcard) at 1, 2, 3 and 4 ranks,
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
    keys = [k for k in out["latency_runs"][0] if k.endswith("_us") or k == "idle_cpu_fraction"]
    med = {k: statistics.median(r[k] for r in out["latency_runs"]) for k in keys}
    pp = med["mpi_pingpong_us"]
    head = f"2 ranks, URSA_VPS={env['URSA_VPS']}, medians of {a.runs} runs (each the median of 2000 operations)"
    print(f"dist_suite: {head}")
    md = [f"MPICH, {head}; `python3 bench/dist_suite.py --build build-release --runs {a.runs}`.", "",
          "| figure | value | / MPI's own ping-pong in the same run |", "|---|---|---|"]
    for k in keys:
        if k == "idle_cpu_fraction":
            print(f"  {k:28s} {med[k] * 100:8.1f} % of a core")
            md.append(f"| {k} (an idle rank) | {med[k] * 100:.1f} % of a core | |")
        else:
            print(f"  {k:28s} {med[k]:8.2f} us  {med[k] / pp:6.1f}x MPI ping-pong")
            md.append(f"| {k} | {med[k]:.2f} us | {med[k] / pp:.1f}x |")
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
    out["markdown"] = "\n".join(md)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
