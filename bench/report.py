#!/usr/bin/env python3
"""report.py - the report of one `make bench` run: results/REPORT.md and PNG plots in results/plots/.

    .venv/bin/python bench/report.py --micro results/micro-<RUN>.json --models results/models-<RUN>.json
        --apps results/apps-<RUN>.json [--run RUN] [--mode quick|default|full] [--command "make bench"]
        [--started EPOCH] [--status micro=0,models=0,apps=0] [--phase-times setup+build=9,micro=250,...]
        [--build build-release] [--out results/REPORT.md] [--plots results/plots] [--results results]
        [--no-plots]

Inputs: the JSON files the three suites of `make bench` wrote in this run (bench/run.py with its SMP
section, bench/models_suite.py, bench/apps_suite.py), named explicitly, so that the report combines
exactly this run's files and never an older one.  A file that is absent (its suite failed before it
wrote it, or was not run) makes its sections say so.  --status gives the suites' exit statuses and
--phase-times the seconds each phase took (the Makefile passes both); <build>/bench/bench-config.json
supplies the peers' versions when the micro JSON is absent.

Outputs: --out (default results/REPORT.md): the machine, the command, the date; the papers' findings
that issue #5's acceptance names and whether each holds here, with the numbers; every other finding
the suites check; the Lesser Bear and protothreads comparisons in the papers' layout; the plots; and
each suite's own tables (embedded from its JSON).  --plots (default results/plots/): ratio_vs_work.png,
radix_sort.png, peers.png, sweeps.png, each figure a median with min-max error bars.  Plots need
matplotlib (run with .venv/bin/python, which scripts/setup.sh bench makes); without it REPORT.md is
still written and says "plots missing: <reason>".  When every suite succeeded and --phase-times is
given it also records the phases' durations in <results>/.bench-times-<mode>.json, from which the
next `make bench` estimates its time left.  On stdout: where REPORT.md and the plots are.

On stdout, last, the run's summary (the closing lines of make bench): "answers: every answer
verified (...)" or "answers: NOT all verified" with each failure (a suite's non-zero exit status,
a missing JSON file, a failed or wrong run, a model other than the label, answers that differ);
then "targets missed: k of n" and "findings that do not hold: k of n", each with its list: those
two are results, never failures.  REPORT.md's header says the same.

Exit status: 0 when REPORT.md was written and every answer was verified; 3 when it was written but
something failed verification (make bench then exits 1); 1 when it could not be written; 2 on a
usage error.
"""

import argparse
import datetime
import json
import math
import os
import re
import statistics
import sys
import time

import apps_suite                      # the papers' figures (PAPER, EUROPAR_T1) and names
from suite_common import REPO, fmt_time, machine_info, md_table, write_json, times_path

# The size modes, in the words of scripts/bench.sh and every suite (--quick / none / --full).
SIZE_WORDS = {"quick": "quick (a smoke run by hand: smaller counts, fewer runs; indicative only)",
              "default": "default (`make bench`)",
              "full": "full (`make bench FULL=1`: the papers' sizes)"}
MIN_RUNS = 5             # every plotted figure should be a median of at least this many runs
PEER_FAMILY_NAMES = {"pthread": "POSIX threads", "go": "Go goroutines", "pth": "GNU Pth",
                     "boost": "Boost.Context / Boost.Fiber", "ursa": "ursa"}
# Lesser Bear (Oguma, Nakayama): Table 2 and the text of 4.3, 4.4 about Figures 9 and 10.
LB_TABLE2 = {"LB2": 131.6, "LB3": 30.8}
LB_RADIX1 = {"Solaris threads": 0.77, "LinuxThreads": 0.86}   # LB3 turnaround / theirs at radix 2^1
# The protothreads blog (paper 004): thread-ring of 503 threads, seconds of whole programs.
BLOG = {"pthreads": 28.7, "pt-optimum": 0.076, "pt-pessimum": 18.6}


# ---- reading ---------------------------------------------------------------------------------

def load(path):
    """(document, None) or (None, why)."""
    if not path:
        return None, "not run"
    try:
        with open(path) as f:
            return json.load(f), None
    except FileNotFoundError:
        return None, f"{os.path.relpath(path)} was not written (the suite failed before the end, or was not run)"
    except (OSError, ValueError) as exc:
        return None, f"{os.path.relpath(path)} unreadable: {exc}"


def parse_pairs(text, conv=str):
    out = {}
    for part in (text or "").split(","):
        if "=" in part:
            k, v = part.split("=", 1)
            try:
                out[k.strip()] = conv(v.strip())
            except ValueError:
                pass
    return out


def fnum(v, unit=""):
    if v is None:
        return "-"
    a = abs(v)
    s = (f"{v:,.0f}" if a >= 1000 else f"{v:.1f}" if a >= 100 else f"{v:.2f}" if a >= 10
         else f"{v:.3f}" if a >= 0.01 else f"{v:.2g}")
    return s + (f" {unit}" if unit else "")


def fpct(v):
    return "-" if v is None else f"{v:.1f}%"


def span(e, unit=""):
    """'median [min-max] unit' of an entry with median/min/max."""
    if not e or e.get("median") is None:
        return "-"
    return f"{fnum(e['median'])} [{fnum(e['min'])}–{fnum(e['max'])}]" + (f" {unit}" if unit else "")


class Micro:
    """The micro JSON: entries of the micro-benchmarks and of the SMP section by (bench, impl)."""

    def __init__(self, doc):
        self.doc = doc or {}
        self.entries = {(e["bench"], e["impl"]): e for e in self.doc.get("benchmarks") or []}
        smp = self.doc.get("smp") or {}
        self.smp = smp
        self.smp_entries = {(e["bench"], e["impl"]): e for e in smp.get("benchmarks") or []}
        self.vps = smp.get("vps") or self.doc.get("machine", {}).get("nproc_available") or 1

    def get(self, bench, impl, smp=False):
        return (self.smp_entries if smp else self.entries).get((bench, impl))


class Apps:
    """The apps JSON: points by (app, impl, vps, row, sweep); app 'pc2' is PC 2P2C1S."""

    def __init__(self, doc):
        self.doc = doc or {}
        self.points = {}
        for p in self.doc.get("points") or []:
            if p.get("probe"):          # the cp-ts probes: a check, in no table or plot
                continue
            app = "pc2" if p["app"] == "pc" and "--producers" in p["args"] else p["app"]
            sweep = tuple(p["sweep"]) if p.get("sweep") else None
            self.points[(app, p["impl"], p["vps"], p["row"], sweep)] = p
        self.n = max([p["vps"] for p in self.points.values()] or [1])
        self.findings = self.doc.get("findings") or []

    def get(self, app, impl, vps, row, sweep=None):
        if sweep in (("sc", 10_000), ("q", 10_000)):
            sweep = None
        p = self.points.get((app, impl, vps, row, sweep))
        return p if p and p.get("status") == "ok" and p.get("samples") else None

    def rows(self, app):
        seen = []
        for (a, _, _, row, sweep) in self.points:
            if a == app and sweep is None and row not in seen:
                seen.append(row)
        return sorted(seen, key=lambda r: (isinstance(r, str), r if isinstance(r, int) else str(r)))

    def ratio(self, app, impl, vps, row):
        """(median ratio %, low %, high %) of T_impl / min(T_cp-ts, T_cp-ic) at vps, or None.
        The median is the ratio of the medians (as the tables); the bar spans the extreme ratios of
        the runs' minima and maxima."""
        num = self.get(app, impl, vps, row)
        cps = [p for p in (self.get(app, "ts", vps, row), self.get(app, "ic", vps, row)) if p]
        if not num or not cps:
            return None
        den_med = min(p["median"] for p in cps)
        den_lo = min(p["min"] for p in cps)
        den_hi = min(p["max"] for p in cps)
        return (100 * num["median"] / den_med, 100 * num["min"] / den_hi, 100 * num["max"] / den_lo)

    def finding(self, fid):
        for f in self.findings:
            if (f.get("id") or apps_suite.finding_id(f.get("text", ""))) == fid:   # an older JSON has no id
                return f
        return None


# ---- findings ----------------------------------------------------------------------------------

def holds_word(cond):
    return "n/a" if cond is None else ("**holds**" if cond else "**does not hold**")


def radix_finding(micro):
    """User-level fork-join beats kernel threads, most at small radix (Lesser Bear 4.3, 4.4)."""
    n = micro.vps
    radices = micro.smp.get("radices") or []
    pts = []
    for r in radices:
        u, k = micro.get(f"radix-2^{r}", f"ursa-{n}vp", True), micro.get(f"radix-2^{r}", "pthread", True)
        if u and k and u.get("median") and k.get("median"):
            pts.append((r, k["median"] / u["median"]))
    if len(pts) < 2:
        return None, "radix sort not measured at two radices or more"
    small, large = pts[0], pts[-1]
    best = max(pts, key=lambda x: x[1])
    cond = all(s > 1 for _, s in pts) and small[1] >= large[1]
    nums = (f"pthread / ursa {n} VPs: " + ", ".join(f"2^{r}: {s:.2f}x" for r, s in pts)
            + f"; largest at 2^{best[0]}")
    return cond, nums


def goal_met(value, op, target):
    return {"<=": value <= target, "<": value < target, ">=": value >= target, ">": value > target}[op]


def distribution_finding(micro):
    """The rotator distributes a fork faster than LB2: held to the SMP suite's own goal for the
    same ratio (rotator / lb2 <= 0.5), not merely below 1."""
    for c in micro.smp.get("checks") or []:
        if c["name"].startswith("distribution cost"):
            if c["value"] is None:
                return None, c.get("reason") or "not measured"
            return (goal_met(c["value"], c["op"], c["target"]),
                    f"rotator / lb2 = {c['value']:.2f}, goal (the SMP suite's) {c['op']} {c['target']} "
                    f"({c.get('detail') or ''})")
    return None, "not measured"


def status_word(status):
    """A target's or check's result: met, missed, n/a (older JSON files said PASS and FAIL)."""
    return {"PASS": "met", "FAIL": "missed"}.get(status, status)


def model_check_status(c):
    if c.get("status"):
        return c["status"]
    if "(reported)" in c.get("check", ""):          # an older JSON: no goal, shown as "ok"
        return "reported"
    return "met" if c.get("ok") else "missed"


def short_finding(text, n=110):
    """A finding's claim without the papers' figures: parenthesized parts naming a paper go."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            if depth == 0:
                out.append(text[start:i])
                start = i
            depth += 1
        elif ch == ")" and depth:
            depth -= 1
            if depth == 0:
                part = text[start:i + 1]
                if not re.search(r"paper|Keen|Ishihara|Lesser", part):
                    out.append(part)
                start = i + 1
    out.append(text[start:])
    return short(re.sub(r" +([,.;])", r"\1", " ".join("".join(out).split())), n)


def summary(a, micro, models, apps, errors):
    """What the run verified and what it found, for the closing lines of make bench and the top of
    REPORT.md: {"failed": [what failed verification], "verified": [what was checked],
    "missed": [target lines], "targets": n, "not_measured": n, "not_hold": [finding lines],
    "findings": n, "findings_na": n}.  A failure of verification (a run that failed, answered
    wrong, ran another model than its label, or a suite that failed or wrote nothing) makes
    make bench's exit status 1; a missed target or a finding that does not hold is a result."""
    status = parse_pairs(a.status, int)
    out = {"failed": [], "verified": [], "missed": [], "targets": 0, "not_measured": 0,
           "not_hold": [], "findings": 0, "findings_na": 0}
    given = {"micro": a.micro, "models": a.models, "apps": a.apps}
    for k in ("micro", "models", "apps"):
        if status.get(k, 0) == 130:
            out["failed"].append(f"{k}: interrupted")
        elif status.get(k, 0) != 0:
            out["failed"].append(f"{k}: exit status {status[k]} (its lines above say why)")
        if given[k] and errors.get(k):
            out["failed"].append(f"{k}: {errors[k]}")
    # micro and SMP
    if micro.doc:
        for label, entries in (("micro", micro.entries.values()), ("SMP", micro.smp_entries.values())):
            ok = [e for e in entries if e.get("status") == "ok"]
            for e in entries:
                if e.get("status") == "failed":
                    out["failed"].append(f"{label}: {e['bench']} ({e['impl']}): {e.get('reason')}")
            if entries:
                out["verified"].append(f"{label} {len(ok)} figures")
        for where, items in (("micro", micro.doc.get("targets")), ("SMP", micro.smp.get("checks"))):
            for t in items or []:
                out["targets"] += 1
                st = status_word(t["status"])
                if st == "missed":
                    out["missed"].append(f"{where}: {t['name']} = {fnum(t['value'])} (goal {t['op']} {t['target']})")
                elif st != "met":
                    out["not_measured"] += 1
    # models
    if models:
        runs = sum(len(x.get("values") or []) for x in models.get("samples") or [])
        out["verified"].append(f"models {runs:,} runs")
        for f in models.get("failures") or []:
            out["failed"].append(f"models: {f}")
        for c in models.get("checks") or []:
            st = model_check_status(c)
            if st == "reported":
                continue
            out["targets"] += 1
            if st == "missed":
                out["missed"].append(f"models: {c['check']} = {c['value']} (goal {c['target']})")
    # apps
    if apps.doc:
        pts = apps.doc.get("points") or []
        runs = sum(len(p.get("samples") or []) for p in pts)
        out["verified"].append(f"apps {runs:,} runs of {len(pts)} points")
        for p in pts:
            # "refused": ursa_init refused the model where the suite allows it (a TSan build or a
            # static executable); where the model must run, the suite records the point as failed
            if p.get("status") not in ("ok", "refused"):
                out["failed"].append(f"apps: {p['status']}: {p['app']} {p['impl']} {p['vps']} VP {p['row']}"
                                     + (f" {p['sweep'][0]}={p['sweep'][1]}" if p.get("sweep") else "")
                                     + f": {p.get('reason')}")
        for pr in apps.doc.get("cross_check_problems") or []:
            out["failed"].append(f"apps: answers differ: {pr}")
        for c in apps.doc.get("table_xxii") or []:
            if c.get("status") not in ("ok", "refused"):
                out["failed"].append(f"apps: Table XXII: dp --style {c['style']} under {c['model']} "
                                     f"({c['vps']} VP): {c['status']}")
        for f in apps.findings:
            out["findings"] += 1
            if f["holds"] is None:
                out["findings_na"] += 1
            elif not f["holds"]:
                out["not_hold"].append(f"apps: {short_finding(f['text'])}")
    if micro.smp:
        for name, (cond, _) in (("the rotator distributes a fork faster than LB2 (Lesser Bear Table 2)",
                                 distribution_finding(micro)),
                                ("user-level fork-join beats kernel threads, most at small radix (Lesser Bear "
                                 "Figures 9, 10)", radix_finding(micro))):
            out["findings"] += 1
            if cond is None:
                out["findings_na"] += 1
            elif not cond:
                out["not_hold"].append(f"SMP: {name}")
    return out


def summary_lines(sm, limit=None):
    """The closing lines of make bench (plain text): answers, targets missed, findings that do
    not hold; each list in full unless limit."""
    L = []
    if sm["failed"]:
        L.append(f"answers: NOT all verified: {len(sm['failed'])} failure(s) (exit status 1):")
        L += [f"  {x}" for x in sm["failed"][:limit]]
        if limit and len(sm["failed"]) > limit:
            L.append(f"  ... and {len(sm['failed']) - limit} more (results/REPORT.md)")
    else:
        L.append("answers: every answer verified (" + ", ".join(sm["verified"]) + ")")
    met = sm["targets"] - len(sm["missed"]) - sm["not_measured"]
    L.append(f"targets missed: {len(sm['missed'])} of {sm['targets']}"
             + (f" ({met} met" + (f", {sm['not_measured']} not measured" if sm["not_measured"] else "") + ")")
             + (": a result, not a failure" if sm["missed"] else ""))
    L += [f"  {x}" for x in sm["missed"][:limit]]
    held = sm["findings"] - len(sm["not_hold"]) - sm["findings_na"]
    L.append(f"findings that do not hold: {len(sm['not_hold'])} of {sm['findings']} ({held} hold"
             + (f", {sm['findings_na']} not measured" if sm["findings_na"] else "") + ")"
             + (": a result, not a failure" if sm["not_hold"] else ""))
    L += [f"  {x}" for x in sm["not_hold"][:limit]]
    return L


def acceptance_rows(micro, apps):
    """[(finding, paper, here, cond)] for the findings issue #5's acceptance names."""
    rows = []
    spec = [("CM beats CP on DP at small work (1 VP)", "CM/CP 31.0% (Keen VI), 20.0% (Ishihara T1) at work 100",
             "dp-cm-beats-cp-small-work"),
            ("CM beats CP on RW (1 VP)", "CM/CP 56–90%", "rw-cm-beats-cp"),
            ("CM close to CP on PC (1 VP)", "CM/CP 93–100%", "pc-cm-close-to-cp"),
            ("CM close to CP on JI (1 VP)", "CM/CP 94.7–99.7%", "ji-cm-close-to-cp"),
            (f"PCM beats CP on JI with {apps.n} VPs", "PCM/CP 52.6–94.8% (Ishihara), 63.2–99.2% (Keen XIII)",
             "ji-pcm-beats-cp"),
            ("named yield improves PC 2P2C1S at small work", "about 10% faster", "pc-named-yield")]
    for name, paper, fid in spec:
        f = apps.finding(fid) if apps.doc else None
        if f is None:
            rows.append((name, paper, "not measured (apps suite " + ("did not report it)" if apps.doc else "missing)"), None))
        else:
            rows.append((name, paper, f["numbers"], f["holds"]))
    if micro.smp:
        cond, nums = distribution_finding(micro)
        rows.append(("the rotator distributes a fork faster than LB2", "LB3 / LB2 = 30.8 / 131.6 ms = 0.23x (Table 2)",
                     nums, cond))
        cond, nums = radix_finding(micro)
        rows.append(("user-level fork-join beats kernel threads, most at small radix",
                     "LB3 23% faster than Solaris threads, 14% than LinuxThreads at 2^1, less at large radices "
                     "(Figures 9, 10)", nums, cond))
    else:
        rows.append(("the rotator distributes a fork faster than LB2", "0.23x", "not measured (micro/SMP suite missing)", None))
        rows.append(("user-level fork-join beats kernel threads, most at small radix", "23% / 14% at 2^1",
                     "not measured (micro/SMP suite missing)", None))
    return rows


# ---- the papers' layout: Lesser Bear and the protothreads blog ------------------------------------

def lesser_bear_md(micro):
    n = micro.vps
    out = []
    dist = {p: micro.get("smp-distribution", f"ursa-{p}-{n}vp", True) for p in ("lb2", "rotator", "global", "steal")}
    rot, lb2 = dist["rotator"], dist["lb2"]
    r = (rot["median"] / lb2["median"]) if rot and lb2 and rot.get("median") and lb2.get("median") else None
    out.append(f"**Table 2: cost of distribution (ms)**: 2^{micro.smp.get('dist_k', 12)} threads forked on VP 0 "
               f"until every VP started 7/8 of its share; the paper's on the 8 VPs of a SPARCserver 1000 (LB3 = "
               f"ursa's rotator ring), ursa's on {n} VPs.\n")
    out.append(md_table(["", "LB2 / lb2", "LB3 / rotator", "LB3/LB2", "global", "steal"],
                        [["paper (Lesser Bear)", LB_TABLE2["LB2"], LB_TABLE2["LB3"],
                          f"{LB_TABLE2['LB3'] / LB_TABLE2['LB2']:.2f}", "-", "-"],
                         ["ursa (median [min–max])", span(lb2), span(rot), f"{r:.2f}" if r else "-",
                          span(dist["global"]), span(dist["steal"])]]))
    radices = micro.smp.get("radices") or []
    rows = []
    for rx in radices:
        b = f"radix-2^{rx}"
        u1, un = micro.get(b, "ursa-1vp", True), micro.get(b, f"ursa-{n}vp", True)
        pt, fx = micro.get(b, "pthread", True), micro.get(b, f"fixed-{n}kt", True)
        ratio = (un["median"] / pt["median"]) if un and pt and un.get("median") and pt.get("median") else None
        rows.append([f"2^{rx}", span(u1), span(un), span(pt), span(fx), f"{ratio:.2f}" if ratio else "-",
                     "0.77 / 0.86" if rx == 1 else "-"])
    out.append(f"\n**Figures 8–10: radix sort of 2^22 keys, 2^8 threads created and joined per phase, turnaround "
               f"(ms)**: ursa at 1 and {n} VPs, {n} kernel threads made once (\"fixed\", no creation), and POSIX "
               f"threads created per phase (the paper's Solaris threads and LinuxThreads).  The paper gives its "
               f"ratio only in words: LB3's turnaround is about 23% below Solaris threads' and 14% below "
               f"LinuxThreads' at radix 2^1, and the gap narrows as the radix grows.\n")
    out.append(md_table(["radix", "ursa 1 VP", f"ursa {n} VPs", "pthread", f"fixed {n} kernel threads",
                         f"ursa {n} VPs / pthread", "paper LB3 / Solaris, / LinuxThreads"], rows))
    return "\n".join(out)


def blog_md(micro):
    pt_ring = micro.get("ring-sem", "pthread")
    opt, pes = micro.get("pt-ring-optimum", "ursa-pt"), micro.get("pt-ring-pessimum", "ursa-pt")
    us, ud = micro.get("ring-sem", "ursa"), micro.get("ring-direct", "ursa")

    def ratio(a, b):
        return f"{a['median'] / b['median']:,.0f}x" if a and b and a.get("median") and b.get("median") else "-"
    head = ["", "POSIX threads", "protothreads, optimum order", "protothreads, pessimum order",
            "pthreads / optimum", "pessimum / optimum", "ursa semaphore ring", "ursa named-yield ring"]
    rows = [["blog (s per run, N not stated)", BLOG["pthreads"], BLOG["pt-optimum"], BLOG["pt-pessimum"],
             f"{BLOG['pthreads'] / BLOG['pt-optimum']:,.0f}x", f"{BLOG['pt-pessimum'] / BLOG['pt-optimum']:,.0f}x",
             "-", "-"],
            ["here (ns per pass)", span(pt_ring), span(opt), span(pes), ratio(pt_ring, opt), ratio(pes, opt),
             span(us), span(ud)]]
    return ("**Thread-ring of 503 threads against the protothreads blog** (paper 004; it gives whole-program "
            "seconds without the token count, so compare the ratios): ursa's stackless threads are "
            "`include/ursa/pt.h`.\n\n" + md_table(head, rows))


# ---- plots ---------------------------------------------------------------------------------------

COLORS = {"ursa": "#1f5fa8", "pthread": "#555555", "go": "#17a2b8", "pth": "#e07b00", "boost": "#2e8b3e",
          "ursa-pt": "#8a3ea8"}


def family(impl):
    if impl.startswith("ursa-pt"):
        return "ursa-pt"
    if impl.startswith("ursa") or impl.startswith("fixed"):
        return "ursa" if impl.startswith("ursa") else "pthread"
    if impl.startswith("go"):
        return "go"
    if impl.startswith("boost"):
        return "boost"
    return impl if impl in COLORS else "pthread"


def save(plt, fig, path):
    """A small PNG (the copies in docs/results/ are committed): 72 dpi, 256 colours when Pillow (a
    dependency of matplotlib) can make the palette."""
    fig.savefig(path, dpi=72)
    plt.close(fig)
    try:
        from PIL import Image
        with Image.open(path) as img:
            small = img.convert("RGB").quantize(colors=256)
        small.save(path, optimize=True)
    except Exception:           # keep the full-colour PNG
        pass


def errbar(e):
    """(median, lower error, upper error) of an entry with median/min/max."""
    return e["median"], e["median"] - e["min"], e["max"] - e["median"]


def short(text, n=70):
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[:n - 3] + "..."


def log_axis(ax, values, one=1.0, label=lambda t: f"{t:g}x"):
    """A log y axis around `one` (marked), limited to the plotted medians and papers' figures
    (values) with a margin, so that a long error bar cannot squash the panel: bars reaching past
    the limits are cut at its edge.  Round ticks outward from `one`, each at least 1/9 of the axis
    (in log) from the last, so that no two labels touch."""
    vals = [v for v in values if v and v > 0]
    lo, hi = (min(vals), max(vals)) if vals else (one, one)
    lo, hi = min(lo / 1.15, 0.85 * one), max(hi * 1.15, 1.18 * one)
    ax.set_yscale("log")
    ax.set_ylim(lo, hi)
    ax.axhline(one, color="black", linewidth=0.6)
    cands = [one * c for c in (0.05, 0.1, 0.2, 0.25, 0.3, 0.5, 0.7, 0.75, 0.8, 0.9, 1, 1.1, 1.25, 1.5, 2, 3, 4,
                               5, 10, 20, 50, 100, 200, 500)]
    gap = (math.log(hi) - math.log(lo)) / 9
    ticks = [one]
    for side in ([c for c in cands if c > one], [c for c in reversed(cands) if c < one]):   # up, then down
        last = one
        for c in side:
            if lo <= c <= hi and abs(math.log(c / last)) >= gap:
                ticks.append(c)
                last = c
    ticks.sort()
    ax.set_yticks(ticks)
    ax.set_yticklabels([label(t) for t in ticks])
    ax.minorticks_off()


def ratio_axis(ax, values):
    """log_axis for ratios in %, 100% marked."""
    log_axis(ax, values, 100.0, lambda t: f"{t:g}%")


def plot_ratio_vs_work(plt, apps, path):
    """(a) CM/CP and PCM/CP against work, per application, 1 VP and N VPs."""
    n = apps.n
    P = apps_suite.PAPER
    panels = [("dp", "DP", [("cm", 1, "CM/CP, 1 VP", "VI", 3), ("pcm", n, f"pure PCM/CP, {n} VPs", None, None),
                            ("dp1", n, f"PCM DP1/CP, {n} VPs", "X", 3), ("dp2", n, f"PCM DP2/CP, {n} VPs", "X", 5)]),
              ("pc", "PC 1P1C1S", [("cm", 1, "CM/CP, 1 VP", "VII", 3), ("cmn", 1, "CM named/CP, 1 VP", None, None),
                                   ("pcm", n, f"PCM/CP, {n} VPs", "XI", 3),
                                   ("cpp", n, f"CP code on pcm / CP, {n} VPs", None, None)]),
              ("rw", "RW", [("cm", 1, "CM/CP, 1 VP", "VIII", 3), ("cpp", n, f"PCM (CP code on pcm)/CP, {n} VPs", "XII", 3)])]
    # legends go below their panels (inside, they covered points and bars)
    fig, axes = plt.subplots(2, 2, figsize=(12, 11.5), layout="constrained")
    missing = []
    colors = ["#1f5fa8", "#d62728", "#2e8b3e", "#e07b00"]
    for ax, (app, title, series) in zip(axes.flat, panels):
        rows = [r for r in apps.rows(app) if isinstance(r, int)]
        shown = []                      # medians and papers' figures: the axis limits
        for (impl, vps, label, table, col), color in zip(series, colors):
            if vps > 1 and n == 1:
                continue
            xs, ys, lo, hi = [], [], [], []
            for w in rows:
                r = apps.ratio(app, impl, vps, w)
                if r:
                    xs.append(w), ys.append(r[0]), lo.append(r[0] - r[1]), hi.append(r[2] - r[0])
            shown += ys
            if xs:
                ax.errorbar(xs, ys, yerr=[lo, hi], marker="o", capsize=3, color=color, label=f"ursa {label}")
            else:
                missing.append(f"{title} {label}")
                ax.plot([], [], color=color, label=f"ursa {label}: missing")
            if table and table in P:
                pw = sorted(P[table])
                shown += [P[table][w][col] for w in pw]
                ax.plot(pw, [P[table][w][col] for w in pw], linestyle="--", marker="s", markerfacecolor="none",
                        color=color, alpha=0.6, label=f"paper {label.split(',')[0]} (Table {table})")
        ratio_axis(ax, shown)
        ax.set_xscale("log")
        ax.set_xlabel("work per operation (loop iterations)")
        ax.set_ylabel("T_model / min(T_cp-ts, T_cp-ic), log scale")
        ax.set_title(title)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, frameon=False)
        ax.grid(alpha=0.3)
    # the tests without a work axis: JI (test n x workers), MM, TSP
    ax = axes.flat[3]
    cats = [("ji", t) for t in apps.rows("ji")] + [("mm", r) for r in apps.rows("mm")] + \
           [("tsp", r) for r in apps.rows("tsp")]
    labels = [f"{a.upper()} {r}" for a, r in cats]
    shown = []
    for k, ((impl_by_app, vps, label, tables), color) in enumerate(zip(
            [({"ji": "cm", "mm": "cm", "tsp": "cm"}, 1, "CM/CP, 1 VP", {"ji": "IX"}),
             ({"ji": "pcm", "mm": "cpp", "tsp": "cpp"}, n, f"PCM/CP, {n} VPs (MM, TSP: CP code on pcm)", {"ji": "XIII"})],
            colors)):
        if vps > 1 and n == 1:
            continue
        xs, ys, lo, hi, px, py = [], [], [], [], [], []
        for i, (a, r) in enumerate(cats):
            rr = apps.ratio(a, impl_by_app[a], vps, r)
            if rr:
                xs.append(i + (k - 0.5) * 0.2), ys.append(rr[0]), lo.append(rr[0] - rr[1]), hi.append(rr[2] - rr[0])
            t = tables.get(a)
            if t and r in P.get(t, {}):
                px.append(i + (k - 0.5) * 0.2), py.append(P[t][r][3])
        shown += ys + py
        if xs:
            ax.errorbar(xs, ys, yerr=[lo, hi], marker="o", linestyle="none", capsize=3, color=color, label=f"ursa {label}")
        else:
            missing.append(f"JI/MM/TSP {label}")
            ax.plot([], [], color=color, label=f"ursa {label}: missing")
        if px:
            ax.plot(px, py, linestyle="none", marker="s", markerfacecolor="none", color=color, alpha=0.7,
                    label=f"paper JI (Table {'IX' if vps == 1 else 'XIII'})")
    ratio_axis(ax, shown)
    ax.set_xticks(range(len(cats)))
    ax.set_xticklabels(labels, fontsize=8)
    ax.set_ylabel("T_model / min(T_cp-ts, T_cp-ic), log scale")
    ax.set_title("JI (n x workers), MM (n), TSP (cities)")
    ax.set_xlabel("test")
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, frameon=False)
    ax.grid(alpha=0.3)
    fig.suptitle(f"Cooperative against preemptive: ratio against work (ursa: medians of {apps.doc.get('runs')} runs, "
                 f"bars min-max, cut at the panel's edge; dashed: the papers)", fontsize=10)
    save(plt, fig, path)
    return missing


def plot_radix(plt, micro, path):
    """(b) radix-sort turnaround against radix (Lesser Bear Figures 8-10) and the peers at 2^8."""
    n = micro.vps
    radices = micro.smp.get("radices") or []
    series = [("ursa-1vp", "ursa, 1 VP", "#8fb3e0", "o"), (f"ursa-{n}vp", f"ursa, {n} VPs", "#1f5fa8", "o"),
              (f"ursa-any-{n}vp", f"ursa, {n} VPs, URSA_VP_ANY", "#6a8fc8", "^"),
              ("pthread", "POSIX threads created per phase", "#555555", "s"),
              (f"fixed-{n}kt", f"{n} kernel threads made once (fixed)", "#999999", "D")]
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(12, 6.4), gridspec_kw={"width_ratios": [3, 2]},
                                  layout="constrained")
    shown = []
    ax2.set_xscale("log", base=2)
    missing = []
    for impl, label, color, marker in series:
        xs, ys, lo, hi = [], [], [], []
        for r in radices:
            e = micro.get(f"radix-2^{r}", impl, True)
            if e and e.get("status") == "ok":
                m, a, b = errbar(e)
                xs.append(2 ** r), ys.append(m), lo.append(a), hi.append(b)
        shown += ys
        if xs:
            ax.errorbar(xs, ys, yerr=[lo, hi], marker=marker, capsize=3, color=color, label=label)
        else:
            missing.append(label)
            ax.plot([], [], color=color, marker=marker, label=f"{label}: missing")
    # the peers of the micro table at radix 2^8 (one kernel thread unless said)
    peers = [(f"go{p}", f"Go, GOMAXPROCS={p}") for p in (micro.doc.get("peers") or {}).get("go_procs", [1, n])] + \
            [("boost-fiber", "Boost.Context fibers, 1 kernel thread"), ("boost-fibers", "Boost.Fiber, 1 kernel thread"),
             ("pth", "GNU Pth, 1 kernel thread")]
    for k, (impl, label) in enumerate(peers):
        e = micro.get("radix-2^8", impl)
        x = 2 ** 8 * (1.06 ** (k + 1))
        if e and e.get("status") == "ok":
            m, a, b = errbar(e)
            shown.append(m)
            keys = int(e.get("arg") or 22)
            ax.errorbar([x], [m], yerr=[[a], [b]], marker="*", markersize=10, linestyle="none", capsize=3,
                        color=COLORS[family(impl)],
                        label=f"{label} (2^8 only" + (f"; 2^{keys} keys, not comparable)" if keys != 22 else ")"))
        else:
            why = (e or {}).get("status", "not run") + (f": {short(e.get('reason'), 40)}" if e and e.get("reason") else "")
            missing.append(f"{label}: {why}")
            ax.plot([], [], marker="*", linestyle="none", color=COLORS[family(impl)], label=f"{label}: MISSING ({why})")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    for axis in (ax, ax2):
        axis.set_xticks([2 ** r for r in radices] or [2, 256])
        axis.set_xticklabels([f"2^{r}" for r in radices] or ["2^1", "2^8"])
    if shown:                   # plain round ticks in ms (not 6 x 10^2)
        lo_, hi_ = min(shown) / 1.3, max(shown) * 1.3
        ticks = [t for t in (1, 2, 3, 5, 10, 20, 30, 50, 100, 200, 300, 500, 1000, 2000, 3000, 5000, 10000)
                 if lo_ <= t <= hi_]
        ax.set_ylim(lo_, hi_)
        ax.set_yticks(ticks)
        ax.set_yticklabels([f"{t:g}" for t in ticks])
        ax.minorticks_off()
    ax.set_xlabel("radix")
    ax.set_ylabel("turnaround (ms, log scale)")
    ax.set_title("Radix sort of 2^22 keys, 2^8 threads per phase")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2, frameon=False)
    # normalized to POSIX threads, as Figures 9 and 10 compare, with the paper's two figures at 2^1
    for impl, label, color, marker in series:
        if impl == "pthread":
            continue
        xs, ys, lo, hi = [], [], [], []
        for r in radices:
            e, p = micro.get(f"radix-2^{r}", impl, True), micro.get(f"radix-2^{r}", "pthread", True)
            if e and p and e.get("status") == "ok" and p.get("status") == "ok":
                m = e["median"] / p["median"]
                xs.append(2 ** r), ys.append(m)
                lo.append(m - e["min"] / p["max"]), hi.append(e["max"] / p["min"] - m)
        if xs:
            ax2.errorbar(xs, ys, yerr=[lo, hi], marker=marker, capsize=3, color=color, label=label)
    for (name, v), m in zip(LB_RADIX1.items(), ("P", "X")):
        ax2.plot([2], [v], marker=m, markersize=10, linestyle="none", color="#d62728", label=f"paper: LB3 / {name}")
    ax2.axhline(1, color="black", linewidth=0.6)
    ax2.set_xlabel("radix")
    ax2.set_ylabel("turnaround / POSIX threads' turnaround")
    ax2.set_title("Relative to POSIX threads (below 1: faster)")
    ax2.grid(alpha=0.3)
    ax2.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=1, frameon=False)
    fig.suptitle(f"Lesser Bear Figures 8-10 on this machine (medians of {micro.smp.get('runs')} runs, bars min-max)",
                 fontsize=10)
    save(plt, fig, path)
    return missing


def peer_panels(micro):
    n = micro.vps
    gos = [f"go{p}" for p in (micro.doc.get("peers") or {}).get("go_procs", [1, n])]
    return [
        ("Thread-ring, 503 threads", "ns per pass (log scale)",
         [("ring-sem", "ursa", "ursa, semaphores"), ("ring-direct", "ursa", "ursa, named yield"),
          ("pt-ring-optimum", "ursa-pt", "ursa pt.h, stackless"),
          ("pts-ring", "ursa-pts", "ursa pt_sched.h, stackless, scheduled", "optional")] +
         [("ring-sem", "pthread", "POSIX threads, sem_t")] +
         [("ring-sem", g, f"Go channels, GOMAXPROCS={g[2:]}") for g in gos] +
         [("ring-sem", "pth", "GNU Pth, condition"), ("ring-direct", "pth", "GNU Pth, pth_yield(next)"),
          ("ring-direct", "boost-fiber", "Boost.Context fibers, resume"),
          ("ring-sem", "boost-fibers", "Boost.Fiber, channels")]),
        ("Switch: yield and blocking ping-pong", "ns per switch or hand-off (log scale)",
         [("yield-pingpong", "ursa", "ursa yield"), ("sem-pingpong", "ursa", "ursa semaphores")] +
         [("yield-pingpong", g, f"Go Gosched, GOMAXPROCS={g[2:]}") for g in gos] +
         [("sem-pingpong", g, f"Go channels, GOMAXPROCS={g[2:]}") for g in gos] +
         [("sem-pingpong", "pthread", "POSIX threads, sem_t"), ("yield-pingpong", "pth", "GNU Pth yield"),
          ("yield-pingpong", "boost-fibers", "Boost.Fiber yield"),
          ("raw-switch", "boost-fcontext", "Boost.Context raw jump_fcontext")]),
        ("Create + join", "ns per thread created and joined (log scale)",
         [("create-join", "ursa", "ursa")] + [("create-join", "pthread", "POSIX threads")] +
         [("create-join", g, f"Go, GOMAXPROCS={g[2:]}") for g in gos] +
         [("create-join", "pth", "GNU Pth"), ("create-join", "boost-fiber", "Boost.Context fibers"),
          ("create-join", "boost-fibers", "Boost.Fiber fiber + join")]),
        ("Memory per blocked thread, at each peer's count", "KiB of RSS per thread (log scale)",
         [("rss-blocked-1M", "ursa", "ursa, 1M threads"), ("rss-blocked-100k", "ursa", "ursa, 100k threads")] +
         [("rss-blocked-100k", g, f"Go, 100k, GOMAXPROCS={g[2:]}") for g in gos] +
         [("rss-blocked-100k", "boost-fiber", "Boost.Context fibers, 100k"),
          ("rss-blocked-100k", "boost-fibers", "Boost.Fiber, 100k"),
          ("rss-blocked-10k", "ursa", "ursa, 10k threads", "optional"), ("rss-blocked-10k", "pthread", "POSIX threads, 10k"),
          ("rss-blocked-2k", "ursa", "ursa, 2k threads", "optional"), ("rss-blocked-2k", "pth", "GNU Pth, 2k")]),
    ]


def plot_peers(plt, micro, path):
    """(c) thread-ring, switch, create+join and memory per thread against the peers, log scale."""
    panels = peer_panels(micro)
    fig, axes = plt.subplots(2, 2, figsize=(13, 9))
    missing = []
    for ax, (title, unit, items) in zip(axes.flat, panels):
        labels, vals = [], []
        items = [it for it in items if not it[3:] or micro.get(it[0], it[1])]   # optional rows: ursa's, if run
        for bench, impl, label, *_ in items:
            e = micro.get(bench, impl)
            if e is None and bench.startswith("rss-blocked"):      # a --quick run measures other counts
                e = next((x for (b, i), x in micro.entries.items() if b.startswith("rss-blocked") and i == impl
                          and x.get("status") == "ok"), None)
            labels.append(label)
            vals.append(e)
        ys = list(range(len(items)))[::-1]
        good = [e["median"] for e in vals if e and e.get("status") == "ok"]
        xmin = min(good) / 3 if good else 1
        for y, (bench, impl, label, *_), e in zip(ys, items, vals):
            color = COLORS[family(impl)]
            if e and e.get("status") == "ok":
                m, a, b = errbar(e)
                ax.barh(y, m, color=color, alpha=0.85, left=0)
                ax.errorbar([m], [y], xerr=[[a], [b]], color="black", capsize=3, linewidth=1)
                ax.text(e["max"] * 1.12, y, fnum(m), va="center", fontsize=7)
            else:
                why = (e or {}).get("status", "not run")
                reason = (e or {}).get("reason")
                ax.text(xmin * 1.1, y, f"MISSING: {why}" + (f" ({short(reason, 45)})" if reason else ""),
                        va="center", fontsize=7, color="#b00000")
                missing.append(f"{label} ({bench}): {why}" + (f": {reason}" if reason else ""))
        ax.set_yticks(ys)
        ax.set_yticklabels([lb if (e and e.get("status") == "ok") else f"{lb} [missing]"
                            for lb, e in zip(labels, vals)], fontsize=8)
        ax.set_xscale("log")
        ax.set_title(title, fontsize=10)
        ax.set_xlabel(unit)
        ax.grid(alpha=0.3, axis="x", which="both")
        if good:
            ax.set_xlim(xmin, max(good) * 6)
    fig.suptitle(f"ursa against its peers (medians of {micro.doc.get('runs')} runs, bars min-max; log scale; "
                 f"lower is better)", fontsize=10)
    fig.tight_layout()
    save(plt, fig, path)
    return missing


QUANTUM_TICK = {100: "100 µs", 1_000: "1 ms", 10_000: "10 ms", 20_000: "20 ms", 1_000_000: "1 s",
                10_000_000: "10 s\n(= inf)"}


def plot_sweeps(plt, apps, path):
    """(d) the switch-count (cp-ic) and quantum (cp-ts) sweeps of Tables XIV-XXI, time relative to
    the papers' default (10,000 iterations, 10 ms), per work size; dashed: the paper's.  Log y axes
    limited to the medians (bars past them are cut); the quanta are evenly spaced, in order (10 and
    20 ms are too close on a log scale for their labels); one legend for the whole figure."""
    n = apps.n
    P = apps_suite.PAPER
    fig, axes = plt.subplots(2, 4 if n > 1 else 2, figsize=(16 if n > 1 else 9, 8.6), squeeze=False,
                             layout="constrained")
    cmap = plt.get_cmap("viridis")
    missing = []
    works_all = sorted({w for app in ("dp", "rw") for w in apps.rows(app) if isinstance(w, int)})
    color_of = {w: cmap(k / max(1, len(works_all) - 1) * 0.9) for k, w in enumerate(works_all)}
    for row_i, (impl, kind, values) in enumerate((("ic", "sc", apps_suite.SWITCH_COUNTS),
                                                  ("ts", "q", apps_suite.QUANTA_US))):
        col = 0
        order_v = sorted(values)
        # x position of each setting: the switch count itself (log axis), or the quantum's rank
        xpos = {v: (v if kind == "sc" else order_v.index(v)) for v in values}
        for vps_kind in ([1, 2] if n > 1 else [1]):
            for app in ("dp", "rw"):
                ax = axes[row_i][col]
                col += 1
                vps = 1 if vps_kind == 1 else n
                table = apps_suite.SWEEP_TABLES[(app, impl, vps_kind)]
                works = [w for w in apps.rows(app) if isinstance(w, int)]
                shown = []
                for w in works:
                    color = color_of[w]
                    base = apps.get(app, impl, vps, w, (kind, 10_000))      # the papers' default
                    if not base:
                        missing.append(f"Table {table} work {w}")
                        continue
                    pts = []
                    for v in values:
                        p = apps.get(app, impl, vps, w, (kind, v))
                        if p:
                            m = p["median"] / base["median"]
                            pts.append((xpos[v], m, m - p["min"] / base["median"], p["max"] / base["median"] - m))
                    pts.sort()
                    shown += [m for _, m, _, _ in pts]
                    ax.errorbar([x for x, _, _, _ in pts], [m for _, m, _, _ in pts],
                                yerr=[[a for _, _, a, _ in pts], [b for _, _, _, b in pts]], marker="o",
                                capsize=2, color=color, label=f"ursa, work {w:,}")
                    pr = P.get(table, {}).get(w)
                    if pr:
                        d = values.index(10_000)
                        ppts = sorted((xpos[values[i]], pr[i] / pr[d]) for i in range(4))
                        shown += [y for _, y in ppts]
                        ax.plot([x for x, _ in ppts], [y for _, y in ppts], linestyle="--", marker="s",
                                markerfacecolor="none", color=color, alpha=0.6, label=f"paper, work {w:,}")
                log_axis(ax, shown)
                if kind == "q":
                    ax.set_xticks(range(len(order_v)))
                    ax.set_xticklabels([QUANTUM_TICK.get(v, f"{v} us") for v in order_v], fontsize=8)
                    ax.set_xlim(-0.4, len(order_v) - 0.6)
                    ax.set_xlabel("quantum (in order, not to scale)")
                else:
                    ax.set_xscale("log")
                    ax.set_xticks(list(values))
                    ax.set_xticklabels([f"{v:,}" for v in values], fontsize=8)
                    ax.minorticks_off()
                    ax.set_xlim(min(values) / 1.6, max(values) * 1.6)
                    ax.set_xlabel("switch count (loop iterations between switches)")
                ax.set_ylabel("time / time at the default, log scale")
                ax.set_title(f"Table {table}: {app.upper()}, {'cp-ic' if impl == 'ic' else 'cp-ts'}, "
                             f"{vps} VP{'s' if vps > 1 else ''} (default {'10,000' if kind == 'sc' else '10 ms'} = 1x)",
                             fontsize=9)
                ax.grid(alpha=0.3)
                if not shown:
                    ax.text(0.5, 0.5, "no data in this run", transform=ax.transAxes, ha="center", color="#b00000")
    from matplotlib.lines import Line2D
    handles = [Line2D([], [], color=color_of[w], marker="o", label=f"work {w:,}") for w in works_all]
    handles += [Line2D([], [], color="#777777", marker="o", label="ursa: median, bars min-max (cut at the panel's edge)"),
                Line2D([], [], color="#777777", linestyle="--", marker="s", markerfacecolor="none",
                       label="the paper's, relative to its own default")]
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), fontsize=8, frameon=False)
    fig.suptitle(f"Switch count and quantum (Keen et al. 4.3): ursa medians of {apps.doc.get('runs')} runs, "
                 f"time relative to the default setting of the same work size", fontsize=10)
    save(plt, fig, path)
    return missing


def plot_dist(plt, dist, path):
    """The MPI layer's micro-benchmarks (issue #19): each operation's median over the runs (bars: the
    runs' extremes), MPI's own ping-pong of the same runs (line), SplitThreads' CM-5 figures (hollow)."""
    runs = dist["latency_runs"]
    keys = [k for k in ("local_create_us", "remote_create_us", "any_create_us", "remote_lock_us", "remote_unlock_us",
                        "yield_us", "remote_create_join_us", "any_create_join_us", "remote_lock_unlock_us",
                        "remote_mvar_put_take_us") if k in runs[0]]
    paper = dist.get("paper", {})
    med = [statistics.median(r[k] for r in runs) for k in keys]
    lo = [m - min(r[k] for r in runs) for m, k in zip(med, keys)]
    hi = [max(r[k] for r in runs) - m for m, k in zip(med, keys)]
    pps = [r["mpi_pingpong_us"] for r in runs]
    pp = statistics.median(pps)
    fig, ax = plt.subplots(figsize=(11, 5.2), layout="constrained")
    x = list(range(len(keys)))
    ax.bar(x, med, yerr=[lo, hi], color="#1f77b4", capsize=3, label="ursa on MPICH, 2 ranks (median, min-max)")
    ax.axhline(pp, color="black", linestyle="--", linewidth=1, label=f"MPI's own 8-byte ping-pong, same runs ({pp:.2f} us)")
    px = [i for i, k in enumerate(keys) if k in paper]
    if px:
        ax.scatter(px, [paper[keys[i]] for i in px], marker="s", facecolors="none", edgecolors="#d62728", s=60,
                   label="SplitThreads on the CM-5 (section 6)")
    ax.set_yscale("log")
    ax.set_ylabel("microseconds (log)")
    ax.set_xticks(x)
    ax.set_xticklabels([k[:-3].replace("_", " ") for k in keys], rotation=30, ha="right")
    for i, m in enumerate(med):
        ax.annotate(f"{m:.2f}\n{m / pp:.1f}x", (i, m), textcoords="offset points", xytext=(0, 4), ha="center", fontsize=7)
    top = max(med + [paper.get(k, 0) for k in keys])
    ax.set_ylim(top=top * 12)                   # room for the legend above the CM-5's squares
    ax.legend(loc="upper right", fontsize=8)
    ax.set_title("The MPI layer's operations against MPI's ping-pong (ratio under each value) and the CM-5")
    save(plt, fig, path)
    return []


def make_plots(micro, apps, plots_dir, dist=None):
    """([(file, title, caption, missing list)], None) or ([], reason) when matplotlib is unavailable."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as exc:        # ImportError, or a broken installation
        why = f"matplotlib cannot be imported by {sys.executable} ({exc.__class__.__name__}: {exc})"
        try:
            with open(os.path.join(REPO, ".venv.failed")) as f:
                why += "; scripts/setup.sh bench said: " + " ".join(f.read().split())
        except OSError:
            why += "; scripts/setup.sh bench installs it into .venv/ (make bench runs the report with .venv/bin/python)"
        return [], why
    os.makedirs(plots_dir, exist_ok=True)
    jobs = [("ratio_vs_work.png", "Ratio against work per application (Keen et al. Tables VI-XIII, Ishihara et al. Table 1)",
             "CM/CP on one VP and PCM/CP on N VPs: T_model / min(T_cp-ts, T_cp-ic); below 100% the cooperative "
             "program is faster.  Markers: ursa, the ratio of the medians; bars: the extreme ratios of the runs' "
             "minima and maxima, cut at the panel's edge (each axis spans the medians and the papers' figures); "
             "dashed hollow squares: the paper's SR figures.", apps.doc, plot_ratio_vs_work, apps),
            ("radix_sort.png", "Radix-sort turnaround against radix (Lesser Bear Figures 8-10)",
             "Left: turnaround of the fork-join radix sort; stars: the peers of the micro table at radix 2^8.  Right: "
             "relative to POSIX threads created per phase; red: the paper's LB3 against Solaris threads and "
             "LinuxThreads at radix 2^1.", micro.smp, plot_radix, micro),
            ("peers.png", "Thread-ring, switch, create+join and memory against the peers (log scale)",
             "Every peer the suite knows has a row; one that was not built or failed says MISSING with its "
             "reason instead of a bar.", micro.doc.get("benchmarks"), plot_peers, micro),
            ("sweeps.png", "Switch count and quantum sweeps (Keen et al. Tables XIV-XXI)",
             "Top: cp-ic by switch count; bottom: cp-ts by quantum, the quanta evenly spaced in order (100 us "
             "and 1 ms are extra columns without a paper figure; 10 s stands for the papers' infinite quantum).  "
             "Time relative to the default setting of the same work size, log scale; each panel's axis spans "
             "the medians and the paper's figures, so an error bar longer than that is cut at the panel's edge.",
             any(k[4] for k in apps.points), plot_sweeps, apps)]
    if dist is not None:                  # the MPI layer's run (issue #19)
        jobs.append(("dist.png", "The MPI layer: micro-benchmarks against MPI's ping-pong and SplitThreads' CM-5 (issue #19)",
                     "Bars: ursa's operations on MPICH, 2 ranks, medians of bench/dist_suite.py's runs (each the median "
                     "of 2000 operations), error bars the runs' extremes; dashed: MPI's own 8-byte ping-pong in the same "
                     "runs; hollow squares: the paper's CM-5 figures for the operations it timed (create alone "
                     "local/remote/wildcard 31/58/76 us, remote lock 40 us, release 31 us, context switch 35 us).  Log scale.",
                     bool(dist.get("latency_runs")), plot_dist, dist))
    for fname, *_ in jobs + [("dist.png",)]:   # none of an earlier run stays; other suites' plots
        try:                                    # (the load phase's http-load.png) are theirs
            os.remove(os.path.join(plots_dir, fname))
        except FileNotFoundError:
            pass
    out = []
    for fname, title, caption, have, fn, data in jobs:
        if not have:
            out.append((None, title, caption, ["no data: the suite that measures it did not write its results, "
                                               "or ran without this part"]))
            continue
        try:
            miss = fn(plt, data, os.path.join(plots_dir, fname))
            out.append((fname, title, caption, miss))
        except Exception as exc:       # one broken plot must not lose the report
            out.append((None, title, caption, [f"plot failed: {exc.__class__.__name__}: {exc}"]))
    return out, None


# ---- the report ---------------------------------------------------------------------------------

def demote(md, levels):
    """The Markdown of a suite with its headings moved down `levels` levels (at most ######)."""
    out = []
    for line in md.splitlines():
        m = re.match(r"^(#{1,6}) ", line)
        if m:
            line = "#" * min(6, len(m.group(1)) + levels) + line[len(m.group(1)):]
        out.append(line)
    return "\n".join(out)


def drop_section(md, heading):
    """md without the section that starts at the line `heading` (up to the next heading of its level)."""
    lines = md.splitlines()
    try:
        i = lines.index(heading)
    except ValueError:
        return md
    level = len(heading) - len(heading.lstrip("#"))
    j = i + 1
    while j < len(lines) and not re.match(r"^#{1,%d} " % level, lines[j]):
        j += 1
    return "\n".join(lines[:i] + [heading, "", "(listed under \"The papers' findings\" at the top of this report)", ""]
                     + lines[j:])


def versions(micro, build):
    doc = micro.doc
    cfg = {}
    try:
        with open(os.path.join(build, "bench", "bench-config.json")) as f:
            cfg = json.load(f)
    except (OSError, ValueError):
        pass
    peers = doc.get("peers") or {}
    comp = doc.get("compilers") or {}
    return {"cc": comp.get("cc"), "cxx": comp.get("cxx"),
            "go": peers.get("go_version") or cfg.get("go_version") or f"missing ({cfg.get('go_reason') or 'not found'})",
            "boost": peers.get("boost_version") or cfg.get("boost_version") or f"missing ({cfg.get('boost_reason') or 'not found'})",
            "pth": peers.get("pth_version") or cfg.get("pth_version") or f"missing ({cfg.get('pth_reason') or 'not found'})",
            "build_type": (doc.get("build") or {}).get("build_type") or cfg.get("build_type"),
            "context": (doc.get("build") or {}).get("context") or cfg.get("context")}


def short_runs(micro, models, apps):
    """Figures measured fewer than MIN_RUNS times (a --quick run, or the 1M-thread RSS cap)."""
    out = []
    for e in list(micro.entries.values()) + list(micro.smp_entries.values()):
        if e.get("status") == "ok" and len(e.get("samples") or []) < MIN_RUNS:
            out.append(f"{e['bench']} ({e['impl']}): {len(e['samples'])}")
    for s in (models.get("samples") or []):
        if len(s.get("values") or []) < MIN_RUNS:
            out.append(f"{s['bench']} ({s['impl']}): {len(s['values'])}")
    for p in apps.points.values():
        if p.get("status") == "ok" and len(p.get("samples") or []) < MIN_RUNS:
            out.append(f"{p['app']} {p['impl']} {p['vps']}vp {p['row']}: {len(p['samples'])}")
    return out


def build_report(a, micro, models, apps, errors, plots, plots_why, t0, sm):
    n = max(micro.vps, apps.n)
    now = datetime.datetime.now(datetime.timezone.utc)
    started = (datetime.datetime.fromtimestamp(a.started, datetime.timezone.utc) if a.started else None)
    status = parse_pairs(a.status, int)
    phases = parse_pairs(a.phase_times, float)
    mach = dict(machine_info())
    mach.update({k: v for k, v in (micro.doc.get("machine") or {}).items() if v})
    ver = versions(micro, a.build)
    git = micro.doc.get("git") or models.get("git") or {}
    L = []
    L.append("# ursa benchmark report\n")
    suites = [("micro", "micro-benchmarks, peers and SMP (bench/run.py)", a.micro),
              ("models", "execution models (bench/models_suite.py)", a.models),
              ("apps", "the papers' applications (bench/apps_suite.py)", a.apps)]
    total = sum(phases.values()) + (time.time() - t0) if phases else None
    L.append(f"- **command**: `{a.command}`" + (f" (run `{a.run}`)" if a.run else ""))
    L.append(f"- **date**: started {started.strftime('%Y-%m-%d %H:%M UTC') if started else '?'}, report written "
             f"{now.strftime('%Y-%m-%d %H:%M UTC')}" + (f"; wall time **{fmt_time(total)}**" if total else "")
             + (" (" + ", ".join(f"{k} {fmt_time(v)}" for k, v in phases.items()) + f", report {fmt_time(time.time() - t0)})"
                if phases else ""))
    sizes = SIZE_WORDS.get(a.mode, a.mode)
    other = [f"{k} {d.get('mode')}" for k, d in (("micro", micro.doc), ("models", models), ("apps", apps.doc))
             if d and d.get("mode") and d.get("mode") != a.mode]
    if other:           # a report rebuilt from suites run by hand at other sizes: say which
        sizes += f" (**but** {', '.join(other)})"
    L.append(f"- **sizes**: {sizes}; "
             f"runs per figure: micro {micro.doc.get('runs', '-')}, SMP {micro.smp.get('runs', '-')}, "
             f"models {models.get('runs', '-')}, apps {apps.doc.get('runs', '-')} (each after its warm-up where the suite makes one)")
    if sm["failed"]:
        L.append(f"- **answers: NOT all verified** ({len(sm['failed'])} failures, listed under \"Failures\" "
                 f"below; make bench's exit status 1)")
    else:
        L.append("- **answers**: every answer verified (" + ", ".join(sm["verified"]) + ")")
    L.append(f"- **targets missed**: {len(sm['missed'])} of {sm['targets']}; **findings that do not hold**: "
             f"{len(sm['not_hold'])} of {sm['findings']} (both are results, not failures of the run; each is "
             f"listed below with its numbers)")
    if git.get("commit"):
        L.append(f"- **git**: {git['commit']}" + (" (uncommitted changes in the tree)" if git.get("dirty") else ""))
    L.append("- **raw data**: " + ", ".join(f"`{os.path.relpath(p, REPO)}`" for _, _, p in suites if p)
             + " (every sample, machine, command)")
    short = short_runs(micro, models, apps)
    if short:
        L.append(f"- **fewer than {MIN_RUNS} runs**: {len(short)} figures ({', '.join(short[:8])}"
                 + (", ..." if len(short) > 8 else "") + ")")
    L.append("")
    if sm["failed"]:
        L.append("## Failures\n")
        L.append("What failed verification (a run that failed or answered wrong, a model other than its label, "
                 "a suite that failed):\n")
        L += [f"- {x}" for x in sm["failed"]]
        L.append("")
    L.append("## Machine\n")
    mem = mach.get("mem_total_kib")
    rows = [["CPU", f"{mach.get('cpu_model') or '?'}"
                    + (f" ({mach['cpu_id']})" if mach.get("cpu_id") else "")
                    + f", {mach.get('nproc')} CPUs ({mach.get('nproc_available')} usable "
                    f"by this process)" + (f", {mem / 1048576:.0f} GiB memory" if mem else "")],
            ["OS, kernel", f"{mach.get('os') or '?'}, Linux {mach.get('kernel')} ({mach.get('machine')})"],
            ["C / C++ compilers", f"{ver['cc'] or '?'} / {ver['cxx'] or '?'}"],
            ["build", f"{os.path.relpath(os.path.abspath(a.build), REPO)}, {ver['build_type'] or '?'}, context switch "
                      f"{ver['context'] or '?'}"],
            ["Go", ver["go"]], ["Boost (Context, fibers)", ver["boost"]], ["GNU Pth", ver["pth"]],
            ["Python", mach.get("python") or sys.version.split()[0]],
            ["load", f"CPUs {fmt_busy(micro.doc.get('cpu_busy_start'))} busy before the micro suite, "
                     f"{fmt_busy(micro.doc.get('cpu_busy_end'))} after; other processes used "
                     + (f"{100 * apps.doc['other_processes_cpu_share']:.0f}%" if apps.doc.get("other_processes_cpu_share") is not None else "?")
                     + " of the CPUs during the apps suite"]]
    L.append(md_table(["item", "value"], rows))
    L.append("\nThe machine is shared and virtual: figures that enter the kernel (POSIX threads, Go with several "
             "Ps) move from run to run; every figure is the median of its runs with the min–max beside it.\n")

    L.append("## The papers' findings, checked here\n")
    L.append("The findings issue #5's acceptance names, with the paper's figure and this run's:\n")
    acc = acceptance_rows(micro, apps)
    L.append(md_table(["finding", "paper", "here", "holds here?"],
                      [[f, p, h, holds_word(c)] for f, p, h, c in acc]))
    nh = sum(1 for *_, c in acc if c)
    L.append(f"\n{nh} of {len(acc)} hold here.  The first six are tested by the apps suite (its test and "
             f"threshold are in the list below), the last two by the SMP section of the micro suite: the rotator's "
             f"holds when rotator / lb2 meets the SMP suite's own goal for that ratio (<= 0.5; the paper's is "
             f"0.23), and the radix sort's when ursa at {micro.vps} VPs is faster than POSIX threads at every radix "
             f"and its lead at the smallest radix is at least its lead at the largest.")
    if apps.findings:
        L.append("\nEvery finding the apps suite checks (Keen et al. sections 4-6; Ishihara et al.):\n")
        for f in apps.findings:
            L.append(f"- {holds_word(f['holds'])}: {f['text']} — {f['numbers']}")
    if micro.smp.get("checks"):
        L.append("\nThe SMP suite's checks (issue #3, after Lesser Bear section 4):\n")
        for c in micro.smp["checks"]:
            v = "-" if c["value"] is None else f"{c['value']:.2f}"
            L.append(f"- {status_word(c['status'])}: {c['name']} = {v} (goal {c['op']} {c['target']})"
                     + (f" — {c['detail']}" if c.get("detail") else "") + (f" — {c['reason']}" if c.get("reason") else ""))
    if models.get("checks"):
        L.append("\nThe execution-model checks (issue #4, Keen et al. 3.2):\n")
        for c in models["checks"]:
            L.append(f"- {model_check_status(c)}: {c['check']}: {c['value']} (target {c['target']})")
    if micro.doc.get("targets"):
        L.append("\nThe micro-benchmarks' targets (issues #2, #6, #17):\n")
        for t in micro.doc["targets"]:
            v = "-" if t["value"] is None else fnum(t["value"])
            L.append(f"- {status_word(t['status'])}: {t['name']} = {v} (goal {t['op']} {t['target']})"
                     + (f" — {t['reason']}" if t.get("reason") else ""))

    L.append("\n## Plots\n")
    if plots_why:
        L.append(f"**plots missing: {plots_why}**\n")
    for fname, title, caption, miss in plots:
        L.append(f"### {title}\n")
        if fname:
            rel = os.path.relpath(os.path.join(a.plots, fname), os.path.dirname(os.path.abspath(a.out)))
            L.append(f"![{title}]({rel})\n")
        else:
            L.append(f"**plot missing: {'; '.join(miss)}**\n")
            continue
        L.append(caption)
        if miss:
            L.append("\n**Missing from this plot** (shown as missing in it, never dropped): "
                     + "; ".join(miss) + ".")
        L.append("")

    L.append("## Lesser Bear and the protothreads blog, in the papers' layout\n")
    if micro.smp:
        L.append(lesser_bear_md(micro))
        L.append("")
    else:
        L.append(f"Not measured: {errors.get('micro') or 'the SMP section did not run'}.\n")
    if micro.entries:
        L.append(blog_md(micro))
        L.append("")

    L.append("## Execution models (Keen et al. 3.2, Tables I–IV)\n")
    L.append(demote(models["markdown"], 1) if models.get("markdown") else
             f"Not measured: {errors.get('models') or 'no Markdown in its JSON'}.")
    L.append("\n## The papers' applications (Keen et al. 4–6, Ishihara et al.)\n")
    if apps.doc.get("markdown"):
        md = demote(apps.doc["markdown"], 1)
        md = re.sub(r"^## The papers' applications.*\n", "", md, count=1, flags=re.M)
        L.append(drop_section(md, "### Findings of the papers, checked here"))
    else:
        L.append(f"Not measured: {errors.get('apps') or 'no Markdown in its JSON'}.")
    if a.load:
        L.append("\n## HTTP load: ursa's httpd, Go net/http and nginx under wrk (issue #18)\n")
        ld, why = load(a.load)
        if ld and ld.get("markdown"):
            L.append(ld["markdown"])
            if ld.get("plot") and os.path.exists(ld["plot"]):
                rel = os.path.relpath(os.path.abspath(ld["plot"]), os.path.dirname(os.path.abspath(a.out)))
                L.append(f"![HTTP load]({rel})\n")
            elif ld.get("plot_why"):
                L.append(f"**plot missing: {ld['plot_why']}**\n")
        elif ld and ld.get("missing", {}).get("wrk"):
            L.append(f"Not measured: {ld['missing']['wrk']}.")
        else:
            L.append(f"Not measured: {why or 'no Markdown in its JSON'}.")
    L.append(f"\n## Micro-benchmarks, peers and SMP (issues #2, #3)\n")
    if micro.doc.get("markdown"):
        md = demote(micro.doc["markdown"], 1)
        md = re.sub(r"^## ursa micro-benchmarks.*\n", "", md, count=1, flags=re.M)
        L.append(md)
    else:
        L.append(f"Not measured: {errors.get('micro') or 'no Markdown in its JSON'}.")
    return "\n".join(L) + "\n"


def fmt_busy(b):
    return "?" if b is None else f"{b:.0%}"


def main():
    t0 = time.time()
    ap = argparse.ArgumentParser(description="Write results/REPORT.md and plots from one make bench run.")
    ap.add_argument("--micro", help="the JSON of bench/run.py (micro-benchmarks, peers, SMP section)")
    ap.add_argument("--models", help="the JSON of bench/models_suite.py")
    ap.add_argument("--apps", help="the JSON of bench/apps_suite.py")
    ap.add_argument("--load", help="the JSON of bench/load_suite.py (HTTP load phase)")
    ap.add_argument("--scaling", help="the JSON of bench/count_shared_writes.py (optional)")
    ap.add_argument("--dist", help="the JSON of bench/dist_suite.py (optional)")
    ap.add_argument("--run", default="", help="the run's id (make bench's UTC stamp)")
    ap.add_argument("--mode", default="default", choices=("quick", "default", "full"),
                    help="the sizes the suites ran at (make bench: default; FULL=1: full)")
    ap.add_argument("--command", default="make bench", help="the command the report says was run")
    ap.add_argument("--started", type=float, default=None, help="the epoch second the run started")
    ap.add_argument("--status", default="", help="the suites' exit statuses: micro=0,models=0,apps=0")
    ap.add_argument("--phase-times", default="", help="seconds per phase: setup+build=9,micro=250,...")
    ap.add_argument("--build", default=os.path.join(REPO, "build-release"))
    ap.add_argument("--out", default=os.path.join(REPO, "results", "REPORT.md"))
    ap.add_argument("--plots", default=os.path.join(REPO, "results", "plots"))
    ap.add_argument("--no-plots", action="store_true", help="write REPORT.md without plots")
    ap.add_argument("--results", default=os.path.join(REPO, "results"),
                    help="where .bench-times-<mode>.json goes (the phase durations, with --phase-times)")
    a = ap.parse_args()
    if not (a.micro or a.models or a.apps):
        ap.error("name at least one suite's JSON (--micro, --models, --apps)")
    a.plots, a.out = os.path.abspath(a.plots), os.path.abspath(a.out)

    docs, errors = {}, {}
    for k in ("micro", "models", "apps"):
        docs[k], errors[k] = load(getattr(a, k))
    micro, apps, models = Micro(docs["micro"]), Apps(docs["apps"]), docs["models"] or {}
    if a.no_plots:
        plots, why = [], "not made (--no-plots)"
    else:
        print("report: plotting ...", file=sys.stderr, flush=True)
        dist_doc = load(a.dist)[0] if a.dist else None
        plots, why = make_plots(micro, apps, a.plots, dist_doc or ({} if a.dist else None))
    sm = summary(a, micro, models, apps, errors)
    text = build_report(a, micro, models, apps, errors, plots, why, t0, sm)
    if a.scaling:                         # issue #20's counters, when this run measured them
        sc, err = load(a.scaling)
        text += "\n## Scaling counters: shared-line writes and VP wake-ups per operation (issue #20)\n\n"
        text += (sc.get("markdown") if sc and sc.get("markdown") else f"Not measured: {err or 'no Markdown'}.") + "\n"
    if a.dist:                            # issue #19's figures, when this run had the MPI layer
        ds, err = load(a.dist)
        text += "\n## Across machines on MPI (issue #19)\n\n"
        text += (ds.get("markdown") if ds and ds.get("markdown") else f"Not measured: {err or 'no Markdown'}.") + "\n"
        made = [p for p in plots if p[0] == "dist.png"]
        if made:
            rel = os.path.relpath(os.path.join(a.plots, "dist.png"), os.path.dirname(os.path.abspath(a.out)))
            text += f"\n![{made[0][1]}]({rel})\n\n{made[0][2]}\n"
        elif ds:
            text += f"\n**plot missing: {why or 'see the Plots section'}**\n"
    try:
        os.makedirs(os.path.dirname(a.out), exist_ok=True)
        with open(a.out + ".tmp", "w") as f:
            f.write(text)
        os.replace(a.out + ".tmp", a.out)
    except OSError as exc:
        print(f"report.py: cannot write {a.out}: {exc}", file=sys.stderr)
        return 1
    status = parse_pairs(a.status, int)
    phases = parse_pairs(a.phase_times, float)
    if phases and all(v == 0 for v in status.values()) and not any(errors.values()):
        phases["report"] = round(time.time() - t0, 1)
        write_json(times_path(a.mode, a.results), {"run": a.run, "command": a.command, "phases": phases})
    made = [p[0] for p in plots if p[0]]
    print(f"report: {os.path.relpath(a.out)}")
    if made:
        print(f"plots:  {os.path.relpath(a.plots)}/ ({', '.join(made)})")
    if why:
        print(f"plots missing: {why}")
    for fname, title, _, miss in plots:
        if not fname:
            print(f"plot missing: {title}: {'; '.join(miss)}")
    print()
    print(f"== summary" + (f" of run {a.run}" if a.run else "") + f" ({a.mode} sizes) ==")
    print("\n".join(summary_lines(sm)))
    return 3 if sm["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
