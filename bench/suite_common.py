#!/usr/bin/env python3
"""suite_common.py - what the benchmark suites of `make bench` share (Python 3 standard library only).

Imported by bench/run.py, bench/smp_suite.py, bench/models_suite.py, bench/apps_suite.py and
bench/report.py:

  ncpus()               the CPUs this process may use (ursa's default VP count)
  fmt_time(s)           m:ss
  md_table(head, rows)  a Markdown table ('|' in cells escaped)
  first_line(cmd)       the first line a command prints, or None
  machine_info()        CPU model, CPUs, memory, kernel, OS, uname
  git_info(repo)        {"commit", "dirty"}
  write_json(path, doc) writes a JSON document atomically (a reader never sees half a file)
  phase_label()         the phase of `make bench` this suite runs in ("bench 3/5 |"), from the
                        BENCH_PHASE environment variable the Makefile sets, or ""

Run as a program it prints the header of one phase of `make bench` on stderr:

    python3 bench/suite_common.py phase K N NAME --start EPOCH [--mode default|full]

"== make bench [K/N] NAME == elapsed m:ss, about m:ss left": the time left is the a priori
duration of the phases K..N, taken from results/.bench-times-<mode>.json (the phase durations of
the last complete `make bench` of that mode, written by bench/report.py) or, before any, from
built-in estimates for a 2-core machine.  Exit status 0 (2 on a usage error).
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The phases of `make bench`, in order, and their a priori seconds on the 2-core development VM
# (default sizes, FULL=1 sizes): used for the overall time left until a run has been timed here.
PHASES = ("setup+build", "micro", "models", "apps", "report")
PHASE_EST = {"default": {"setup+build": 10, "micro": 240, "models": 60, "apps": 150, "report": 15},
             "full": {"setup+build": 10, "micro": 320, "models": 120, "apps": 1200, "report": 20}}


def ncpus():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def fmt_time(seconds):
    seconds = max(0, int(round(seconds)))
    return f"{seconds // 60}:{seconds % 60:02d}"


def md_table(head, rows):
    esc = lambda s: str(s).replace("|", "\\|")
    out = ["| " + " | ".join(esc(h) for h in head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(esc(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def first_line(cmd):
    """The first line of a command's output, or None when it cannot run."""
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    text = (out.stdout or out.stderr).strip()
    return text.splitlines()[0] if out.returncode == 0 and text else None


def os_name():
    try:
        with open("/etc/os-release") as f:
            for line in f:
                if line.startswith("PRETTY_NAME="):
                    return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return None


def cpu_model():
    """The first "model name" of /proc/cpuinfo, or None."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def cpu_id():
    """The CPU's family, model, stepping and clock from /proc/cpuinfo (x86), e.g. "family 25
    model 17 stepping 1, 2596 MHz", or None.  The model name of a virtual machine is often only
    "AMD EPYC": two hosts of one name can differ by 1.7x in a context switch (session 17)."""
    want, got = ("cpu family", "model", "stepping", "cpu MHz"), {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if not line.strip():
                    break                              # the first CPU only
                key, _, value = line.partition(":")
                if key.strip() in want:
                    got[key.strip()] = value.strip()
    except OSError:
        return None
    if "cpu family" not in got:
        return None
    s = f"family {got['cpu family']} model {got.get('model', '?')} stepping {got.get('stepping', '?')}"
    if "cpu MHz" in got:
        s += f", {float(got['cpu MHz']):.0f} MHz"
    return s


def machine_info():
    cpu = cpu_model()
    mem_kib = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    mem_kib = int(line.split()[1])
    except (OSError, ValueError):
        pass
    u = platform.uname()
    return {"uname": first_line(["uname", "-a"]) or " ".join(u),
            "cpu_model": cpu or platform.processor() or None, "cpu_id": cpu_id(), "nproc": os.cpu_count(),
            "nproc_available": ncpus(), "kernel": u.release, "machine": u.machine,
            "mem_total_kib": mem_kib, "os": os_name(), "node": u.node,
            "python": platform.python_version()}


def git_info(repo=REPO):
    commit = first_line(["git", "-C", repo, "rev-parse", "HEAD"])
    dirty = None
    if commit:
        try:
            out = subprocess.run(["git", "-C", repo, "status", "--porcelain", "--untracked-files=no"],
                                 capture_output=True, text=True, timeout=20)
            dirty = bool(out.stdout.strip()) if out.returncode == 0 else None
        except (OSError, subprocess.SubprocessError):
            pass
    return {"commit": commit, "dirty": dirty}


def cmake_cache(build_dir, key):
    """The value of `key` in build_dir's CMakeCache.txt, or None (no cache, or no such entry)."""
    try:
        with open(os.path.join(build_dir, "CMakeCache.txt")) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return line.split("=", 1)[1].strip()
    except OSError:
        pass
    return None


def write_json(path, doc, indent=1):
    """Writes doc to path through a temporary file and a rename."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=indent)
        f.write("\n")
    os.replace(tmp, path)


def phase_label():
    return os.environ.get("BENCH_PHASE", "").strip()


def times_path(mode, results=None):
    return os.path.join(results or os.path.join(REPO, "results"), f".bench-times-{mode}.json")


def phase_estimates(mode, results=None):
    """{phase: a priori seconds}: the last complete run's durations where known."""
    est = dict(PHASE_EST["full" if mode == "full" else "default"])
    try:
        with open(times_path(mode, results)) as f:
            last = json.load(f).get("phases", {})
        for k, v in last.items():
            if k in est and isinstance(v, (int, float)) and v > 0:
                est[k] = v
    except (OSError, ValueError, AttributeError):
        pass
    return est


def main():
    ap = argparse.ArgumentParser(description="Print the header of one phase of make bench.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("phase")
    p.add_argument("k", type=int)
    p.add_argument("n", type=int)
    p.add_argument("name")
    p.add_argument("--start", type=float, required=True, help="the epoch second make bench started")
    p.add_argument("--mode", default="default", choices=("default", "full"))
    p.add_argument("--results", default=None)
    a = ap.parse_args()
    est = phase_estimates(a.mode, a.results)
    left = sum(est[ph] for ph in PHASES[max(0, a.k - 1):])
    elapsed = time.time() - a.start
    known = os.path.exists(times_path(a.mode, a.results))
    print(f"\n== make bench [{a.k}/{a.n}] {a.name} == elapsed {fmt_time(elapsed)}, about "
          f"{fmt_time(left)} left ({'as the last run here' if known else 'a priori'})",
          file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
