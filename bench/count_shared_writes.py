#!/usr/bin/env python3
"""count_shared_writes.py - the scaling counters of issue #20: per operation, how many atomic
read-modify-writes (every lock acquisition is one) and how many wake-ups of a sleeping VP ursa
executes, at 2, 4, 8 and 16 VPs.  Neither depends on how many cores the machine has: an atomic
read-modify-write is a write to a cache line that other VPs may share (the cost that grows with
the core count), and a wake-up is a system call on another VP's behalf.  A per-operation count
that grows with the VP count is a scaling problem whatever the machine.

How: each benchmark runs under Valgrind's callgrind with per-instruction counts, at two sizes;
the counts of the instructions that matter, from the executable's disassembly (objdump), are
summed, and their difference is divided by the difference in operations, so start-up, teardown
and the idle VPs' spinning (which does no read-modify-write) cancel out:
  rmw      an instruction with a lock prefix, or xchg with a memory operand (implicitly locked),
           anywhere in the program (ursa is linked statically into the benchmarks)
  wakeups  a call from ursa__vp_kick (or another *_kick) into the kernel: syscall(SYS_futex),
           or the I/O engine's eventfd write (a VP taken out of its sleep)
Valgrind runs one kernel thread at a time, so these are the counts of one legal schedule: the
idle VPs sleep between operations more often than on real cores, which makes wake-ups an upper
bound.  --fair-sched=yes: with Valgrind's default lock the running VP kept the CPU, the other VPs
never ran, so never went to sleep, and the running VP was never solo (src/sched/vp.c): the ring's
hand-off counted 2.0 read-modify-writes at 4 VPs and 4.0 at 8 and 16 (session 22; -2.0 to 4.0
across pairs of runs), 0 with the fair lock at every VP count, as on real cores while the other
VPs sleep.  With the fair lock, how long the other VPs stay awake at the start varies from run to
run (each hand-off in that window makes 2 read-modify-writes), so the ring's two sizes are
100,000 and 200,000 passes: at 20,000 and 40,000 the median of 3 pairs came out -0.62 and -0.55
at 4 and 16 VPs, at these sizes within 0.1 of 0 (15 s of callgrind in all).
URSA_ROTATE_US=0: callgrind cannot follow the balancing tick's signal.

Usage: bench/count_shared_writes.py [--build DIR] [--vps 2,4,8,16] [--reps 3] [--json FILE]
  (DIR: a Release build with the benchmarks, default build-count; scripts/count-instructions.sh
   makes it)
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PIE_BASE = 0x108000          # where Valgrind loads a PIE executable (checked against the symbols)
WAKE_FUNCS = re.compile(r"^(ursa__vp_kick|futex_wake|.*_kick)$")   # what wakes a sleeping VP
WAKE_CALLS = re.compile(r"^(syscall|write|eventfd_write|io_uring_.*)$")   # ... through the kernel

# name, what one operation is, target, argv with {n}, the two sizes
BENCHES = [
    ("hand-off", "ring pass (semaphore post + wait)", "smp_ring",
     ["{vps}", "{n}", "100"], (100000, 200000)),
    ("yield", "ursa_yield (2 threads)", "smp_ring",
     ["{vps}", "100", "{n}"], (20000, 40000)),
    ("create+join", "thread created by main and joined", "ursa_create_join",
     ["{n}"], (10000, 20000)),
    ("distributed thread", "thread forked on VP 0 and spread (rotator; with the program's own counter and gate)", "smp_distribution",
     ["rotator", "{vps}", "{n}", "2000"], (10, 11)),
]


def disassemble(exe):
    """{addr: kind} for rmw and wake instructions, and {name: (start, end)} of the functions."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", exe], capture_output=True,
                         text=True, check=True).stdout
    kinds, funcs, fn, start = {}, {}, None, None
    last = None
    for line in out.splitlines():
        m = re.match(r"^([0-9a-f]+) <(.+)>:$", line)
        if m:
            if fn is not None and last is not None:
                funcs[fn] = (start, last + 1)
            fn, start, last = m.group(2), int(m.group(1), 16), None
            continue
        m = re.match(r"^\s+([0-9a-f]+):\s+(.*)$", line)
        if not m or fn is None:
            continue
        addr, ins = int(m.group(1), 16), m.group(2).strip()
        last = addr
        op = ins.split()[0] if ins else ""
        if op == "lock" or (op.startswith("xchg") and "(" in ins):
            kinds[addr] = "rmw"
        elif op == "syscall" and WAKE_FUNCS.match(fn.split(".")[0]):
            kinds[addr] = "wake"
    if fn is not None and last is not None:
        funcs[fn] = (start, last + 1)
    if max(hi for lo, hi in funcs.values()) >= PIE_BASE:
        sys.exit(f"count_shared_writes: {exe} is larger than 0x{PIE_BASE:x} bytes: its addresses "
                 "in callgrind's output would be ambiguous")
    return kinds, funcs


def callgrind(exe, args, vps):
    """{'rmw': count, 'wake': count, 'ir': count} of one run."""
    with tempfile.NamedTemporaryFile(suffix=".cg", delete=False) as f:
        path = f.name
    env = dict(os.environ, URSA_VPS=str(vps), URSA_ROTATE_US="0")
    try:
        r = subprocess.run(["valgrind", "--tool=callgrind", "--fair-sched=yes", "--dump-instr=yes", "--compress-pos=no",
                            "--compress-strings=no", "--callgrind-out-file=" + path, exe] + args,
                           env=env, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"count_shared_writes: {os.path.basename(exe)} {' '.join(args)} failed "
                     f"under callgrind:\n{r.stderr[-2000:]}")
        with open(path) as f:
            return parse(f, exe)
    finally:
        os.unlink(path)


_dis = {}


def parse(f, exe):
    kinds, funcs = _dis[exe]
    counts = {"rmw": 0, "wake": 0, "ir": 0}
    ob, fn, cfn, skip, checked, missed = "", "", "", False, 0, 0
    for line in f:
        if line.startswith("ob="):
            ob = line[3:].strip()
        elif line.startswith("fn="):
            fn = line[3:].strip()
        elif line.startswith("cfn="):
            cfn = line[4:].strip()
        elif line.startswith("calls="):
            skip = True                        # the next cost line is the call's inclusive cost
            if WAKE_FUNCS.match(fn.split(".")[0]) and WAKE_CALLS.match(cfn):
                counts["wake"] += int(line[6:].split()[0])
        elif line.startswith("0x"):
            if skip:
                skip = False
                continue
            parts = line.split()
            addr, ir = int(parts[0], 16), int(parts[-1])
            if ob not in ("???", exe) and not ob.endswith(os.path.basename(exe)):
                continue
            # callgrind gives most addresses where Valgrind loads a PIE executable and a few at
            # the file's own; the file is smaller than that base (checked), so there is no doubt
            off = addr - PIE_BASE if addr >= PIE_BASE else addr
            if fn in funcs and not fn.startswith("ursa__ctx_"):   # after a context switch
                lo, hi = funcs[fn]                 # callgrind names code after the switch routine
                if lo <= off < hi:
                    checked += 1
                else:
                    missed += 1
            counts["ir"] += ir
            k = kinds.get(off)
            if k:
                counts[k] += ir
        else:
            skip = False if line.strip() == "" else skip
    # A wrong load address puts almost every line outside its function.  A few lines outside are
    # callgrind's naming, which follows calls, not stacks: a label named after its neighbour, code
    # resumed after a context switch named after the function that switched.  In some schedules a
    # few whole functions are named so (2026-11-27: 257 of ~6,300 lines, in 2 of 9 runs of this
    # script; the counts below go by address and do not depend on the names), hence a quarter.
    if checked == 0 or missed > checked // 4:
        sys.exit(f"count_shared_writes: {checked} cost lines inside the function callgrind names, "
                 f"{missed} outside: the executable was not loaded where this script assumes")
    return counts


def shown(v):
    """A per-operation count as the table shows it: within 0.05 of 0 is the schedules' noise."""
    return 0.0 if abs(v) < 0.05 else v


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build-count"))
    ap.add_argument("--vps", default="2,4,8,16")
    ap.add_argument("--json")
    ap.add_argument("--reps", type=int, default=3, help="pairs of runs per figure (the median)")
    a = ap.parse_args()
    vps_list = [int(v) for v in a.vps.split(",")]
    targets = sorted({b[2] for b in BENCHES})
    subprocess.run(["ninja", "-C", a.build] + targets, check=True, stdout=subprocess.DEVNULL)
    rows = []
    for name, what, target, argv, (n1, n2) in BENCHES:
        exe = os.path.join(a.build, "bench", target)
        if exe not in _dis:
            _dis[exe] = disassemble(exe)
        row = {"op": name, "what": what, "per_vps": {}}
        for vps in vps_list:
            ops = (n2 - n1) if target != "smp_distribution" else (2 ** n2 - 2 ** n1)
            reps = []
            for _ in range(a.reps):      # the schedule decides whether the other VPs sleep (solo):
                c = [callgrind(exe, [x.format(vps=vps, n=n) for x in argv], vps) for n in (n1, n2)]
                reps.append({k: (c[1][k] - c[0][k]) / ops for k in ("rmw", "wake", "ir")})
            row["per_vps"][vps] = {k: statistics.median(r[k] for r in reps) for k in ("rmw", "wake", "ir")}
            print(f"  {name:<19} {vps:>2} VPs: {row['per_vps'][vps]['rmw']:6.2f} rmw/op, "
                  f"{row['per_vps'][vps]['wake']:6.3f} wake-ups/op", file=sys.stderr)
        rows.append(row)
    md = ["| operation | " + " | ".join(f"{v} VPs: rmw / wake-ups" for v in vps_list) + " | grows with the VPs? |",
          "|---|" + "---|" * (len(vps_list) + 1)]
    for r in rows:
        cells = [f"{shown(r['per_vps'][v]['rmw']):.2f} / {shown(r['per_vps'][v]['wake']):.2f}" for v in vps_list]
        first, last = r["per_vps"][vps_list[0]], r["per_vps"][vps_list[-1]]
        grows = ("rmw " if last["rmw"] > first["rmw"] * 1.1 + 0.05 else "") + \
                ("wake-ups" if last["wake"] > first["wake"] * 1.1 + 0.05 else "")
        md.append(f"| {r['op']}: {r['what']} | " + " | ".join(cells) + f" | {grows.strip() or 'no'} |")
    md.append("")
    md.append("Per operation, from callgrind's instruction counts at two sizes (bench/count_shared_writes.py): "
              "**rmw** = atomic read-modify-writes executed (lock-prefixed instructions and xchg with memory; "
              "every lock acquisition is one), **wake-ups** = calls into the kernel that take a sleeping VP out "
              "of its sleep. Neither depends on the number of cores. Valgrind runs one kernel thread at a "
              f"time, so these are counts of legal schedules: the median of {a.reps} pairs of runs; a figure "
              "within 0.05 of 0 is shown as 0 (the schedules' noise), and idle VPs sleep more often than on "
              "real cores, so wake-ups are an upper bound. A hand-off makes no read-modify-write while every "
              "other VP sleeps (solo, src/sched/vp.c) and 2 (the semaphore's lock twice) while another VP is "
              "awake.")
    print("\n".join(md))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"vps": vps_list, "rows": rows, "markdown": "\n".join(md)}, f, indent=1)


if __name__ == "__main__":
    main()
