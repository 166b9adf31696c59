#!/usr/bin/env python3
"""readme_table.py - README's benchmark tables and their met/missed labels, generated from one named
run of `make bench` (issue #23 item 6: no figure or label of those tables is written by hand).

    python3 bench/readme_table.py --run RUN [--results results] [--note TEXT] [--readme README.md]
        Takes results/micro-RUN.json (bench/run.py's report of `make bench` run RUN), keeps a
        trimmed copy as bench/readme-run/micro-RUN.json (the committed sample; older copies there
        are removed) and rewrites every generated section of README.md from it.  --note is a few
        words on the machine's load, shown above the tables with the run's own CPU-busy and load
        figures.  (`make readme-figures RUN=... [NOTE=...]` runs this.)
    python3 bench/readme_table.py --render [--readme README.md]
        Rewrites the sections from the runs their markers already name (after a change to this
        script's format; no new run).
    python3 bench/readme_table.py --check [--readme README.md]
        Regenerates each section from the file its begin marker names and exits 1 when README
        differs, or when a label in a generated table disagrees with the figure beside it (each
        row's value against its goal, recomputed from the table's own text).
    python3 bench/readme_table.py --self-test [--readme README.md]
        --check on README must pass; then on temporary copies with a planted label flipped (met
        <-> missed), a figure changed, and a section edited by hand, it must fail.

The sections sit between markers, the begin marker naming the run's file:

    <!-- bench:NAME begin run=bench/readme-run/micro-RUN.json -->
    ...generated text...
    <!-- bench:NAME end -->

NAME is one of: headline (the sentence on the POSIX thread-ring, inline), micro (the micro-
benchmarks' targets), pthread (unmodified POSIX programs under ursa-run, issue #17), smp (the SMP
checks, issue #3).  A label is derived here from the measured value and the goal the run recorded
(`met` when value op goal holds, `missed` otherwise, `n/a` when not measured), never copied.

Exit status: 0 done / check passed; 1 a check failed; 2 usage or input error.  Python 3 standard
library only.
"""

import argparse
import glob
import json
import os
import re
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from smp_suite import fmt   # noqa: E402  (the one number format of run.py's tables)
REPO = os.path.dirname(HERE)
SAMPLE_DIR = os.path.join(HERE, "readme-run")
SECTIONS = ("headline", "micro", "pthread", "smp")
BEGIN_RE = re.compile(r"<!-- bench:([a-z]+) begin run=(\S+) -->")
OPS = {"<=": "≤", "<": "<", ">=": "≥", ">": ">"}
UNOPS = {v: k for k, v in OPS.items()}



class Bad(Exception):
    """An input that cannot be used (exit status 2)."""


# ---- numbers and labels --------------------------------------------------------------------------

def holds(value, op, target):
    return {"<=": value <= target, "<": value < target, ">=": value >= target, ">": value > target}[op]




def fmt_value(v, op, target):
    """v formatted so that the shown number, compared with the goal, gives v's own verdict (one more
    digit until it does: 1.5004 against <= 1.5 shows as 1.5004, not 1.500)."""
    s = fmt(v)
    digits = 4
    while holds(parse_number(s), op, target) != holds(v, op, target) and digits < 12:
        s = f"{v:.{digits}f}"
        digits += 1
    return s


def parse_number(s):
    return float(s.replace(",", "").rstrip("x×"))


def label(value, op, target):
    if value is None:
        return "n/a"
    return "**met**" if holds(value, op, target) else "**missed**"


def goal_text(op, target):
    return f"{OPS[op]} {target:g}"


def span(e):
    """'median (min–max) unit' of a run.py entry, or its status."""
    if e is None:
        return "not run"
    if e.get("median") is None:
        return e.get("status") or "not measured"
    return f"{fmt(e['median'])} ({fmt(e['min'])}–{fmt(e['max'])})"


# ---- the run ------------------------------------------------------------------------------------

def load_run(path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as exc:
        raise Bad(f"{path}: {exc}")
    for key in ("timestamp_utc", "benchmarks", "targets", "machine", "git"):
        if key not in doc:
            raise Bad(f"{path}: not a report of bench/run.py (no '{key}')")
    return doc


def trimmed(doc):
    """The parts of a run's JSON these tables and their header read (each figure's samples kept;
    the embedded Markdown, per-run fields, per-VP statistics and run times dropped): what
    bench/readme-run/ holds."""
    keep = ("schema", "timestamp_utc", "command", "mode", "runs", "warmup_runs", "wall_seconds",
            "machine", "loadavg_start", "loadavg_end", "cpu_busy_start", "cpu_busy_end", "compilers",
            "git", "benchmarks", "targets", "pthread_layer", "failures", "readme")
    entry = ("bench", "impl", "unit", "what", "n", "status", "reason", "answer", "expected_answer",
             "samples", "median", "min", "max")
    out = {k: doc[k] for k in keep if k in doc}
    out["benchmarks"] = [{k: e[k] for k in entry if k in e} for e in doc["benchmarks"]]
    if doc.get("smp"):
        out["smp"] = {k: v for k, v in doc["smp"].items() if k not in ("vpstats", "benchmarks")}
        out["smp"]["benchmarks"] = [{k: e[k] for k in entry if k in e} for e in doc["smp"].get("benchmarks") or []]
    return out


def entries(doc):
    by = {(e["bench"], e["impl"]): e for e in doc.get("benchmarks") or []}
    smp = {(e["bench"], e["impl"]): e for e in (doc.get("smp") or {}).get("benchmarks") or []}
    return by, smp


def run_line(doc, rel):
    """The sentence naming the run above each table."""
    g, m = doc["git"], doc["machine"]
    note = (doc.get("readme") or {}).get("note")
    busy = lambda b: "?" if b is None else f"{b:.0%}"
    load = (f"CPUs {busy(doc.get('cpu_busy_start'))} busy before the micro suite, {busy(doc.get('cpu_busy_end'))} "
            f"after; load average {doc['loadavg_start'][0]:.2f} before, {doc['loadavg_end'][0]:.2f} after"
            if doc.get("loadavg_start") and doc.get("loadavg_end") else "load not recorded")
    via = (doc.get("readme") or {}).get("via")
    step = re.sub(r"^\S*python3?(\.\d+)? ", "python3 ", doc.get("command") or "?")
    command = f"`{via}` (its step `{step}`)" if via else f"`{step}`"
    return (f"Run of {doc['timestamp_utc'].replace('T', ' ').replace('Z', ' UTC')}, commit "
            f"{(g.get('commit') or 'unknown')[:7]}{' plus uncommitted changes' if g.get('dirty') else ''}, "
            f"{command}, {doc.get('mode', '?')} sizes, medians of {doc.get('runs', '?')} runs (min–max); "
            f"{m.get('cpu_model') or '?'}{' (' + m['cpu_id'] + ')' if m.get('cpu_id') else ''}, "
            f"{m.get('nproc', '?')} CPUs, Linux {m.get('kernel') or '?'}; "
            f"{load}" + (f"; {note}" if note else "") + f". Generated by `bench/readme_table.py` from `{rel}`.")


# ---- the sections -------------------------------------------------------------------------------

def md_table(head, rows):
    esc = lambda s: str(s).replace("|", "\\|")
    out = ["| " + " | ".join(esc(h) for h in head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(esc(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


PTHREAD_TARGET_PREFIX = "POSIX "     # the micro targets of issue #17 (bench/run.py TARGETS)


def target_row(t, by):
    """[target, figures, value, goal, result] of a micro target; the value is recomputed from the
    medians of its operands (bench/run.py's TARGETS, recorded in the sample by adopt()) and must
    equal the run's."""
    operands = t.get("operands")
    operands = (tuple(operands[0]), tuple(operands[1]) if operands[1] else None) if operands else None
    figures = []
    value = t.get("value")
    if operands:
        es = [by.get(k) if k else None for k in operands]
        for k, e in zip(operands, es):
            if k:
                figures.append(f"{k[0]} {k[1]} {span(e)}" + (f" {e['unit']}" if e and e.get('median') is not None else ""))
        if all(e is None or e.get("median") is not None for e in es) and es[0] is not None:
            mine = es[0]["median"] / (es[1]["median"] if operands[1] else 1)
            if value is None or abs(mine - value) > 1e-9 * max(1.0, abs(value)):
                raise Bad(f"target '{t['name']}': the run says {value}, its operands' medians give {mine}")
    if value is None:
        return [t["name"], "; ".join(figures) or "-", "-", goal_text(t["op"], t["target"]),
                "n/a" + (f" ({t.get('reason')})" if t.get("reason") else "")]
    return [t["name"], "; ".join(figures), fmt_value(value, t["op"], t["target"]),
            goal_text(t["op"], t["target"]), label(value, t["op"], t["target"])]


RESULT_HEAD = ["value", "goal", "result"]


def section_micro(doc, rel):
    by, _ = entries(doc)
    rows = [target_row(t, by) for t in doc["targets"] if not t["name"].startswith(PTHREAD_TARGET_PREFIX)]
    return (run_line(doc, rel) + "\n\n"
            + md_table(["target (issues #2 and #6)", "figures of the run (median (min–max))"] + RESULT_HEAD, rows))


def pthread_rows(doc):
    """One row per goal of each program of the run's pthread_layer (run.py), or per program
    without a goal; the verdicts are derived here from the values."""
    rows = []
    for p in doc.get("pthread_layer") or []:
        fig = lambda o: "-" if o is None else (span(o) if o.get("median") is not None else f"- ({o.get('status')})")
        base = [f"{p['name']}, {p['unit']}", fig(p["native"]), fig(p["ursa_run"]),
                "-" if p["own"] is None else f"{p['own_what']} {fig(p['own'])}"]
        first = len(rows)
        if not p["goals"]:
            v = p.get("speedup")
            rows.append(base + ["native / ursa-run", f"{fmt(v)}" if v else "-", "-", "no target"])
            continue
        for g in p["goals"]:
            what = ("native / ursa-run" if "native /" in g["name"] else
                    "ursa-run / ursa's own, worst radix" if g["name"].startswith("radix") else "ursa-run / ursa's own")
            if g.get("op") is None or g.get("value") is None:
                rows.append(base + [what, "-", goal_text(g["op"], g["target"]) if g.get("op") else "-",
                                    "n/a" + (f" ({g.get('reason')})" if g.get("reason") else "")])
            else:
                rows.append(base + [what, fmt_value(g["value"], g["op"], g["target"]), goal_text(g["op"], g["target"]),
                                    label(g["value"], g["op"], g["target"])])
        for r in rows[first + 1:]:          # a program's second goal: its figures are in the row above
            r[:len(base)] = [""] * len(base)
    return rows


def section_pthread(doc, rel):
    if not doc.get("pthread_layer"):
        raise Bad(f"{rel}: no pthread_layer (a run from before issue #17's benchmarks)")
    return (run_line(doc, rel) + "\n\n"
            + md_table(["POSIX program (unmodified)", "natively", "under ursa-run", "ursa's own", "ratio"]
                       + RESULT_HEAD, pthread_rows(doc)))


def section_smp(doc, rel):
    smp = doc.get("smp")
    if not smp or not smp.get("checks"):
        raise Bad(f"{rel}: no SMP section")
    rows = []
    for c in smp["checks"]:
        if c.get("value") is None:
            rows.append([c["name"], c.get("detail") or "", "-", goal_text(c["op"], c["target"]),
                         "n/a" + (f" ({c.get('reason')})" if c.get("reason") else "")])
        else:
            rows.append([c["name"], c.get("detail") or "", fmt_value(c["value"], c["op"], c["target"]),
                         goal_text(c["op"], c["target"]), label(c["value"], c["op"], c["target"])])
    return (run_line(doc, rel) + f" SMP section: {smp.get('vps')} VPs, radices "
            + " ".join(f"2^{r}" for r in smp.get("radices") or []) + ".\n\n"
            + md_table(["check (issue #3)", "figures of the run"] + RESULT_HEAD, rows))


def section_headline(doc, rel):
    """The sentence of README's feature list on the blog's ring under ursa-run (inline)."""
    row = next((p for p in doc.get("pthread_layer") or [] if p["native"]["bench"] == "ring-mutex"), None)
    if row is None or row["speedup"] is None or row["vs_own"] is None:
        raise Bad(f"{rel}: the mutex ring was not measured natively and under ursa-run")
    goals = {("native" if "native /" in g["name"] else "own"): g for g in row["goals"]}
    g1, g2 = goals["native"], goals["own"]
    return (f"The blog's mutex thread-ring [4] takes {fmt(row['ursa_run']['median'])} ns per pass under "
            f"`ursa-run -n 1` against {fmt(row['native']['median'])} ns natively: "
            f"**{fmt_value(row['speedup'], g1['op'], g1['target'])}x faster** "
            f"({OPS[g1['op']]} {g1['target']:g}x: {label(row['speedup'], g1['op'], g1['target'])}), and "
            f"{fmt_value(row['vs_own'], g2['op'], g2['target'])}x ursa's own semaphore ring of the same run "
            f"({fmt(row['own']['median'])} ns; {OPS[g2['op']]} {g2['target']:g}x: "
            f"{label(row['vs_own'], g2['op'], g2['target'])}) (`make bench`, run of "
            f"{doc['timestamp_utc'][:10]}, medians of {doc.get('runs', '?')} runs; the table "
            f"\"Unmodified POSIX-threads programs\" below has the others)")


MAKERS = {"headline": section_headline, "micro": section_micro, "pthread": section_pthread, "smp": section_smp}


# ---- README -------------------------------------------------------------------------------------

def find_sections(text):
    """[(name, run path, start of content, end of content)] of README's generated sections."""
    out = []
    for m in BEGIN_RE.finditer(text):
        name, rel = m.group(1), m.group(2)
        if name not in MAKERS:
            raise Bad(f"README: unknown section '{name}'")
        end = text.find(f"<!-- bench:{name} end -->", m.end())
        if end < 0:
            raise Bad(f"README: section '{name}' has no end marker")
        out.append((name, rel, m.end(), end))
    return out


def generated(name, body):
    """A section's content: inline (headline) or on lines of its own."""
    return body if name == "headline" else "\n" + body + "\n"


def render(text, sample_rel=None):
    """README's text with every section regenerated (from sample_rel when given, else from the file
    each marker names)."""
    out, pos = [], 0
    secs = find_sections(text)
    if not secs:
        raise Bad("README has no generated section (<!-- bench:NAME begin run=... -->)")
    docs = {}
    for name, rel, start, end in secs:
        rel = sample_rel or rel
        if rel not in docs:
            docs[rel] = load_run(os.path.join(REPO, rel))
        marker_start = text.rfind("<!--", 0, start)
        out.append(text[pos:marker_start])
        out.append(f"<!-- bench:{name} begin run={rel} -->")
        out.append(generated(name, MAKERS[name](docs[rel], rel)))
        pos = end
    out.append(text[pos:])
    return "".join(out)


def label_problems(text):
    """Rows of the generated tables whose result disagrees with their value and goal, read from the
    text alone; and inline labels of the headline likewise."""
    problems = []
    for name, rel, start, end in find_sections(text):
        body = text[start:end]
        if name == "headline":
            for m in re.finditer(r"\*\*(\d[\d,.]*)x faster\*\* \((≤|≥|<|>) ([\d.]+)x: \*\*(met|missed)\*\*\)", body):
                if (m.group(4) == "met") != holds(parse_number(m.group(1)), UNOPS[m.group(2)], float(m.group(3))):
                    problems.append(f"headline: {m.group(0)}")
            for m in re.finditer(r"([\d.]+)x ursa's own semaphore ring of the same run \([^;]*; (≤|≥|<|>) ([\d.]+)x: "
                                 r"\*\*(met|missed)\*\*\)", body):
                if (m.group(4) == "met") != holds(parse_number(m.group(1)), UNOPS[m.group(2)], float(m.group(3))):
                    problems.append(f"headline: {m.group(0)}")
            continue
        lines = [l for l in body.splitlines() if l.startswith("|")]
        if len(lines) < 3:
            problems.append(f"{name}: no table")
            continue
        head = [c.strip() for c in lines[0].strip("|").split(" | ")]
        try:
            iv, ig, ir = head.index("value"), head.index("goal"), head.index("result")
        except ValueError:
            problems.append(f"{name}: the table has no value, goal and result columns")
            continue
        for line in lines[2:]:
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
            if len(cells) != len(head):
                problems.append(f"{name}: a row with {len(cells)} cells: {line}")
                continue
            value, goal, result = cells[iv], cells[ig], cells[ir]
            gm = re.fullmatch(r"(≤|≥|<|>) ([\d.,]+)", goal)
            if gm is None:
                if result not in ("no target",) and not result.startswith("n/a"):
                    problems.append(f"{name}: '{cells[0]}': result '{result}' without a goal")
                continue
            if value == "-":
                if not result.startswith("n/a"):
                    problems.append(f"{name}: '{cells[0]}': result '{result}' without a value")
                continue
            want = "**met**" if holds(parse_number(value), UNOPS[gm.group(1)], parse_number(gm.group(2))) else "**missed**"
            if result != want:
                problems.append(f"{name}: '{cells[0]}': value {value}, goal {goal}, result {result} (should be {want})")
    return problems


def check(readme):
    with open(readme) as f:
        text = f.read()
    problems = label_problems(text)
    fresh = render(text)
    if fresh != text:
        a, b = text.splitlines(), fresh.splitlines()
        for i, (x, y) in enumerate(zip(a + [""] * (len(b) - len(a)), b + [""] * (len(a) - len(b)))):
            if x != y:
                problems.append(f"README line {i + 1} differs from the regenerated one:\n  README: {x}\n  run:    {y}")
                break
    return problems


def self_test(readme):
    """check() must pass on README and fail on each planted change."""
    failures = []
    with open(readme) as f:
        text = f.read()
    if check(readme):
        failures.append("README itself does not pass --check")
    secs = find_sections(text)
    micro = next(((s, e) for n, _, s, e in secs if n == "micro"), None)
    if micro is None:
        return ["README has no micro section to plant changes in"]
    body = text[micro[0]:micro[1]]
    plants = []
    for old, new in (("**met**", "**missed**"), ("**missed**", "**met**")):   # a label flipped
        i = body.find(old)
        if i >= 0:
            plants.append((f"label {old} -> {new}", body[:i] + new + body[i + len(old):], True))
    m = re.search(r"\| ([\d,.]+) \| (≤|≥) ", body)                             # a figure changed
    if m:
        v = parse_number(m.group(1))
        plants.append(("a value changed", body[:m.start(1)] + fmt(v * 1.5 + 1) + body[m.end(1):], False))
    plants.append(("a word edited by hand", body.replace("Run of", "Run from", 1), False))
    if not any(p[2] for p in plants):
        failures.append("the micro section has no met or missed label to flip")
    with tempfile.TemporaryDirectory() as tmp:
        for what, new_body, is_label in plants:
            path = os.path.join(tmp, "README.md")
            with open(path, "w") as f:
                f.write(text[:micro[0]] + new_body + text[micro[1]:])
            with open(path) as f:
                planted = f.read()
            if is_label and not label_problems(planted):
                failures.append(f"planted {what}: the label check did not see it")
            if not check(path):
                failures.append(f"planted {what}: --check passed")
            else:
                print(f"readme_table self-test: planted {what}: --check fails, as it should")
    return failures


def adopt(run, results, note, via):
    """Copies results/micro-RUN.json, trimmed, to bench/readme-run/ (removing older copies); returns
    its path relative to the repository."""
    src = os.path.join(results, f"micro-{run}.json")
    doc = load_run(src)
    if doc.get("failures"):
        raise Bad(f"{src}: {doc['failures']} benchmark(s) failed in that run: not a run to publish")
    doc["readme"] = {"run": run, "note": note, "via": via}
    sys.path.insert(0, HERE)
    import run as bench_run    # its TARGETS: the operands of each micro target, kept in the sample
    operands = {name: (num, den) for name, num, den, _, _ in bench_run.TARGETS}
    for t in doc["targets"]:
        if t["name"] in operands:
            t["operands"] = operands[t["name"]]
    os.makedirs(SAMPLE_DIR, exist_ok=True)
    dst = os.path.join(SAMPLE_DIR, f"micro-{run}.json")
    for old in glob.glob(os.path.join(SAMPLE_DIR, "micro-*.json")):
        if os.path.abspath(old) != os.path.abspath(dst):
            os.remove(old)
    with open(dst, "w") as f:
        json.dump(trimmed(doc), f, indent=1)
        f.write("\n")
    return os.path.relpath(dst, REPO)


def main():
    ap = argparse.ArgumentParser(description="README's benchmark tables from a named make bench run.")
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument("--run", help="the run's name: results/micro-RUN.json")
    what.add_argument("--render", action="store_true", help="rewrite the sections from the runs they name")
    what.add_argument("--check", action="store_true", help="README against the runs it names; labels against figures")
    what.add_argument("--self-test", action="store_true", help="--check must catch planted disagreements")
    ap.add_argument("--results", default=os.path.join(REPO, "results"))
    ap.add_argument("--readme", default=os.path.join(REPO, "README.md"))
    ap.add_argument("--note", default=None, help="the machine's load during the run, in a few words")
    ap.add_argument("--via", default="make bench", help="the command that ran the run (default: make bench)")
    args = ap.parse_args()
    try:
        if args.check:
            problems = check(args.readme)
            for p in problems:
                print(f"readme_table: {p}", file=sys.stderr)
            if problems:
                print("readme_table: README's generated sections do not match their run: run "
                      "`make readme-figures RUN=<run>` (or fix the label)", file=sys.stderr)
                return 1
            print(f"readme_table: README's generated sections match their run, every label its figure")
            return 0
        if args.self_test:
            failures = self_test(args.readme)
            for f in failures:
                print(f"readme_table self-test: FAILED: {f}", file=sys.stderr)
            return 1 if failures else 0
        rel = adopt(args.run, args.results, args.note, args.via) if args.run else None
        with open(args.readme) as f:
            text = f.read()
        fresh = render(text, rel)
        with open(args.readme, "w") as f:
            f.write(fresh)
        problems = label_problems(fresh)
        if problems:
            for p in problems:
                print(f"readme_table: {p}", file=sys.stderr)
            return 1
        print(f"readme_table: README's sections rewritten from {rel or 'the runs they name'}")
        return 0
    except Bad as exc:
        print(f"readme_table: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
