#!/usr/bin/env python3
"""trace_plot.py - draws a scheduler trace (URSA_TRACE=file, docs/TRACE.md) as a PNG timeline.

    python3 tools/trace_plot.py trace.json out.png [--start US] [--end US] [--width INCHES]

One row per VP (VP 0 at the top).  Each period a thread ran is a bar in that thread's colour
(labelled when wide enough); the VP's idle context looking for work is light grey, a sleep in the
kernel dark grey.  Wake-ups are small triangles on the waker's row, with an arrow to the woken
thread's next slice when that runs on another VP; migrations are red diamonds where the thread
starts on its new VP.  --start/--end cut a window (microseconds from the trace's start).

Needs matplotlib (python3 -m pip install matplotlib).
"""
import argparse
import json
import sys


def load(path):
    with open(path) as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    lanes = {}
    slices, wakes, migrations, flow_s, flow_f = [], [], [], {}, {}
    for e in events:
        ph, tid = e.get("ph"), e.get("tid", 0)
        if ph == "M" and e.get("name") == "thread_name":
            lanes[tid] = e["args"]["name"]
        elif ph == "X":
            slices.append((tid, float(e["ts"]), float(e["dur"]), e.get("cat", ""), e.get("name", ""),
                           e.get("args", {}).get("id")))
        elif ph == "i" and e.get("cat") == "wake":
            wakes.append((tid, float(e["ts"])))
        elif ph == "i" and e.get("cat") == "migrate":
            migrations.append((tid, float(e["ts"])))
        elif ph == "s":
            flow_s[e["id"]] = (tid, float(e["ts"]))
        elif ph == "f":
            flow_f[e["id"]] = (tid, float(e["ts"]))
    for tid, *_ in slices:
        lanes.setdefault(tid, "VP %d" % tid)
    flows = [(flow_s[k], flow_f[k]) for k in flow_s if k in flow_f]
    return lanes, slices, wakes, migrations, flows


def main():
    ap = argparse.ArgumentParser(description="Draw an ursa scheduler trace (URSA_TRACE) as a PNG timeline.")
    ap.add_argument("trace", help="the JSON file URSA_TRACE wrote")
    ap.add_argument("png", help="the picture to write")
    ap.add_argument("--start", type=float, default=None, help="window start, us from the trace's start")
    ap.add_argument("--end", type=float, default=None, help="window end, us from the trace's start")
    ap.add_argument("--width", type=float, default=14.0, help="picture width in inches (default 14)")
    ap.add_argument("--title", default=None, help="title (default: the trace file's name)")
    args = ap.parse_args()

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.lines import Line2D
        from matplotlib.patches import Patch
    except ImportError:
        sys.stderr.write("trace_plot.py needs matplotlib, which this Python does not have.\n"
                         "Install it with:   python3 -m pip install matplotlib\n"
                         "or in a virtual environment:   python3 -m venv .venv && "
                         ".venv/bin/pip install matplotlib && .venv/bin/python tools/trace_plot.py ...\n")
        return 2

    lanes, slices, wakes, migrations, flows = load(args.trace)
    if not slices:
        sys.stderr.write("trace_plot.py: %s has no slices\n" % args.trace)
        return 1
    t_lo = min(s[1] for s in slices) if args.start is None else args.start
    t_hi = max(s[1] + s[2] for s in slices) if args.end is None else args.end
    if t_hi <= t_lo:
        sys.stderr.write("trace_plot.py: empty window\n")
        return 1
    scale, unit = (1000.0, "ms") if t_hi - t_lo > 5000 else (1.0, "us")

    def x(t):
        return (t - t_lo) / scale

    def visible(t0, t1):
        return t1 >= t_lo and t0 <= t_hi

    vps = sorted(lanes)
    row = {tid: i for i, tid in enumerate(vps)}
    height = 0.6

    # one colour per thread, in order of first appearance: the ten strong colours of tab10, then
    # the light ones of tab20 (no greys: those mean idle)
    palette = [c for i, c in enumerate(plt.get_cmap("tab10").colors) if i != 7]
    palette += [c for i, c in enumerate(plt.get_cmap("tab20").colors) if i % 2 == 1 and i != 15]
    colour, order = {}, []
    for tid, ts, dur, cat, name, _ in sorted(slices, key=lambda s: s[1]):
        if cat == "run" and name not in colour:
            colour[name] = palette[len(order) % len(palette)]
            order.append(name)

    fig, ax = plt.subplots(figsize=(args.width, 1.2 + 0.9 * len(vps)))
    span = (t_hi - t_lo) / scale
    for tid, ts, dur, cat, name, _ in slices:
        if not visible(ts, ts + dur):
            continue
        y = row[tid]
        if cat == "idle":
            fc, ec = "0.45", "none"
        elif cat == "sched":
            fc, ec = "0.85", "none"
        else:
            fc, ec = colour[name], "white"
        x0, w = x(max(ts, t_lo)), (min(ts + dur, t_hi) - max(ts, t_lo)) / scale
        ax.broken_barh([(x0, w)], (y - height / 2, height), facecolors=fc, edgecolors=ec, linewidth=0.4)
        if cat == "run" and w > span / 45:
            ax.text(x0 + w / 2, y, name, ha="center", va="center", fontsize=7, clip_on=True)
    for (stid, sts), (ftid, fts) in flows:
        if stid == ftid or not visible(sts, fts):
            continue
        ax.annotate("", xy=(x(fts), row[ftid] - height / 2 if row[ftid] > row[stid] else row[ftid] + height / 2),
                    xytext=(x(sts), row[stid]),
                    arrowprops=dict(arrowstyle="->", color="0.25", lw=0.6, alpha=0.6))
    wx = [x(ts) for tid, ts in wakes if t_lo <= ts <= t_hi]
    wy = [row[tid] - height / 2 - 0.06 for tid, ts in wakes if t_lo <= ts <= t_hi]
    ax.plot(wx, wy, linestyle="none", marker="^", markersize=4, color="0.2")
    mx = [x(ts) for tid, ts in migrations if t_lo <= ts <= t_hi]
    my = [row[tid] + height / 2 + 0.08 for tid, ts in migrations if t_lo <= ts <= t_hi]
    ax.plot(mx, my, linestyle="none", marker="D", markersize=5, color="red")

    ax.set_yticks(range(len(vps)))
    ax.set_yticklabels([lanes[t] for t in vps])
    ax.set_ylim(len(vps) - 0.4, -0.6)
    ax.set_xlim(0, span)
    ax.set_xlabel("time (%s) from %.1f us" % (unit, t_lo))
    ax.set_title(args.title if args.title is not None else args.trace)
    ax.grid(axis="x", color="0.9", linewidth=0.5)
    handles = [Patch(facecolor=colour[n], label=n) for n in order[:16]]
    handles += [Patch(facecolor="0.85", label="idle context (polling)"),
                Patch(facecolor="0.45", label="idle (asleep in the kernel)"),
                Line2D([], [], linestyle="none", marker="^", color="0.2", label="wake-up (on the waker's VP)"),
                Line2D([], [], linestyle="none", marker="D", color="red", label="migration")]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize=7, frameon=False)
    fig.tight_layout()
    fig.savefig(args.png, dpi=130)
    return 0


if __name__ == "__main__":
    sys.exit(main())
