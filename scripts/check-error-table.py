#!/usr/bin/env python3
"""scripts/check-error-table.py [--self-test] [ROOT] - the error-contract check of `make test`
(issue #22 item 4): docs/GUIDE.md's error table and the tests cannot drift apart.

Each row of the table under "## Errors" in docs/GUIDE.md has an id in its first column
(`join-deadlock`); the tests that assert a row carry a marker naming it inside their body:

    TEST_IMPL(badinput_join_self) {
      /* contract: join-deadlock */
      ...

(one marker may name several rows, separated by spaces).  The check reads the tests/*.c and
tests/*.inc files and fails, with one line per problem, when
  1. a row has no id, an id that is not lower-case words joined by '-', or an id used twice;
  2. a row has no marked test;
  3. a marked test does not mention one of the row's negative error codes (every -EXXX of its
     result column) in its code: comments and strings do not count; the test's body counts, and
     with it the body of every function and macro of its file that it names, and so on (its
     helpers, the scenario it runs in a child, the thread functions it starts);
  4. a marker names no row, or is outside the body of a test (TEST_IMPL, or PTS_TEST in
     tests/pts_cases.inc).
A row whose result has no error code (ursa_exit outside ursa aborts) needs only its marked test.

--self-test copies the table and the tests to a temporary directory, checks that the copy passes,
then plants a drift at a time (a row without a test, a row whose code changed, a marker naming
no row, a duplicated id, a marker outside a test) and checks that each one fails the check with
its message.  Both run under CTest (tests/CMakeLists.txt: error_table_check and its self-test).
Python 3 standard library only.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

GUIDE = os.path.join("docs", "GUIDE.md")
TESTS = "tests"
ID_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
CODE_RE = re.compile(r"-E[A-Z0-9]+\b")
MARKER_RE = re.compile(r"/\*\s*contract:([^*]*)\*/|//\s*contract:(.*)")
TEST_HEAD_RE = re.compile(r"\b(TEST_IMPL|PTS_TEST)\s*\(\s*(\w+)\s*\)\s*$")
DEFINE_RE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)")
IDENT_RE = re.compile(r"[A-Za-z_]\w*")


# ---- the table ----------------------------------------------------------------------------------

class Row:
    def __init__(self, rid, codes, line):
        self.id, self.codes, self.line = rid, codes, line


def split_cells(line):
    """The cells of a Markdown table line (| a | b |), '|' inside `code` not splitting."""
    cells, cur, in_code = [], "", False
    for ch in line.strip().strip("|"):
        if ch == "`":
            in_code = not in_code
        if ch == "|" and not in_code:
            cells.append(cur.strip())
            cur = ""
        else:
            cur += ch
    cells.append(cur.strip())
    return cells


def read_table(root, errors):
    """The rows of the error table: a list of Row; problems go to errors."""
    path = os.path.join(root, GUIDE)
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    try:
        start = lines.index("## Errors")
    except ValueError:
        errors.append("%s: no section '## Errors'" % GUIDE)
        return []
    i = start + 1
    while i < len(lines) and not lines[i].startswith("|"):
        if lines[i].startswith("## "):
            break
        i += 1
    if i >= len(lines) or not lines[i].startswith("|"):
        errors.append("%s:%d: no table in the section '## Errors'" % (GUIDE, start + 1))
        return []
    header = [c.lower() for c in split_cells(lines[i])]
    if len(header) < 3 or header[0] != "id" or "result" not in header:
        errors.append("%s:%d: the error table's header must be | id | misuse | result |, not %s"
                      % (GUIDE, i + 1, lines[i].strip()))
        return []
    res_col = header.index("result")
    rows, seen = [], {}
    for n in range(i + 2, len(lines)):            # past the header and its |---| line
        line = lines[n]
        if not line.startswith("|"):
            break
        cells = split_cells(line)
        rid = cells[0].strip("`").strip() if cells else ""
        where = "%s:%d" % (GUIDE, n + 1)
        if not rid:
            errors.append("%s: error table row without an id in its first column" % where)
            continue
        if not ID_RE.match(rid):
            errors.append("%s: error table row id '%s' is not lower-case words joined by '-'" % (where, rid))
            continue
        if rid in seen:
            errors.append("%s: error table row id '%s' is used twice (first on line %d)" % (where, rid, seen[rid]))
            continue
        seen[rid] = n + 1
        if len(cells) <= res_col:
            errors.append("%s: error table row '%s' has no result column" % (where, rid))
            continue
        codes = []
        for c in CODE_RE.findall(cells[res_col]):
            if c not in codes:
                codes.append(c)
        rows.append(Row(rid, codes, n + 1))
    if not rows and not errors:
        errors.append("%s:%d: the error table has no rows" % (GUIDE, i + 1))
    return rows


# ---- the tests ----------------------------------------------------------------------------------

def blank(text):
    """text with every comment, string and character literal replaced by spaces (newlines kept),
    so that positions stay the same and code can be searched alone."""
    out, i, n = list(text), 0, len(text)
    while i < n:
        c = text[i]
        if c == "/" and i + 1 < n and text[i + 1] == "*":
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif c == "/" and i + 1 < n and text[i + 1] == "/":
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
        else:
            i += 1
            continue
        for k in range(i, j):
            if out[k] != "\n":
                out[k] = " "
        i = j
    return "".join(out)


def head_name(head):
    """The function a top-level block belongs to, from the text before its '{': ('test', name) for
    TEST_IMPL(name) and PTS_TEST(name), ('func', name) for name(...), None otherwise."""
    m = TEST_HEAD_RE.search(head)
    if m:
        return ("test", m.group(2), m.group(1))
    h = head.rstrip()
    if not h.endswith(")"):
        return None
    depth, k = 0, len(h) - 1
    while k >= 0:                                 # the '(' matching the last ')'
        if h[k] == ")":
            depth += 1
        elif h[k] == "(":
            depth -= 1
            if depth == 0:
                break
        k -= 1
    m = re.search(r"(\w+)\s*$", h[:k]) if k > 0 else None
    if not m:
        return None
    name = m.group(1)
    if name.isupper() or name in ("if", "while", "for", "switch", "sizeof"):
        inner = re.match(r"\s*(\w+)\s*\(", h[k + 1:])  # URSA_PT_THREAD(name(args))
        if not inner or name in ("if", "while", "for", "switch", "sizeof"):
            return None
        name = inner.group(1)
    return ("func", name, None)


class Source:
    """One file of tests/: its functions, macros and tests, and where each top-level block is."""

    def __init__(self, root, rel):
        self.rel = rel
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            self.text = f.read()
        self.code = blank(self.text)
        self.defs = {}        # name -> code of its body (functions) or definition (macros)
        self.tests = []       # (name, kind, start, end) of each test's body
        self.blocks = []      # (start, end, test name or None) of each top-level {...}
        code, depth, head_start, open_at = self.code, 0, 0, 0
        i = 0
        while i < len(code):
            ch = code[i]
            if ch == "#" and depth == 0 and code[code.rfind("\n", 0, i) + 1:i].strip() == "":
                j = i                             # a preprocessor line: skip it (and its continuations)
                while True:
                    e = code.find("\n", j)
                    if e < 0:
                        e = len(code)
                        break
                    if code[e - 1] != "\\":
                        break
                    j = e + 1
                m = DEFINE_RE.match(code[i:e])
                if m:
                    self.defs.setdefault(m.group(1), code[i:e])
                i = e
                head_start = e
                continue
            if ch == "{":
                if depth == 0:
                    open_at = i
                    head = code[head_start:i]
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    what = head_name(head)
                    test = None
                    if what and what[0] == "test":
                        test = what[1]
                        self.tests.append((what[1], what[2], open_at, i + 1))
                    elif what:
                        self.defs.setdefault(what[1], code[open_at:i + 1])
                    self.blocks.append((open_at, i + 1, test))
                    head_start = i + 1
                elif depth < 0:
                    depth = 0
            elif ch == ";" and depth == 0:
                head_start = i + 1
            i += 1
        # a #define inside a function body (EPERM_CALL in test_badinput.c) is a macro of the file too
        for m in re.finditer(r"(?m)^[ \t]*#[ \t]*define[ \t]+(\w+).*(?:\\\n.*)*", code):
            self.defs.setdefault(m.group(1), m.group(0))

    def line_of(self, pos):
        return self.text.count("\n", 0, pos) + 1

    def test_at(self, pos):
        for start, end, test in self.blocks:
            if start <= pos < end:
                return test
        return None

    def reach(self, body):
        """body and the code of every function and macro of this file it names, transitively."""
        seen, todo, parts = set(), [body], []
        while todo:
            text = todo.pop()
            parts.append(text)
            for ident in set(IDENT_RE.findall(text)):
                if ident in self.defs and ident not in seen:
                    seen.add(ident)
                    todo.append(self.defs[ident])
        return "\n".join(parts)


def test_label(name, kind):
    return "pts_*_" + name if kind == "PTS_TEST" else name


def check(root):
    """Every problem, one line each (an empty list: the table and the tests agree)."""
    errors = []
    rows = read_table(root, errors)
    by_id = {r.id: r for r in rows}
    marked = {r.id: [] for r in rows}
    tdir = os.path.join(root, TESTS)
    files = sorted(f for f in os.listdir(tdir) if f.endswith(".c") or f.endswith(".inc"))
    for f in files:
        src = Source(root, os.path.join(TESTS, f))
        for m in MARKER_RE.finditer(src.text):
            ids = (m.group(1) if m.group(1) is not None else m.group(2)).replace(",", " ").split()
            where = "%s:%d" % (src.rel, src.line_of(m.start()))
            test = src.test_at(m.start())
            if test is None:
                errors.append("%s: contract marker outside the body of a test (put it inside the "
                              "TEST_IMPL it belongs to)" % where)
                continue
            if not ids:
                errors.append("%s: contract marker names no row" % where)
            for rid in ids:
                if rid not in by_id:
                    errors.append("%s: contract marker names '%s', which is no row of %s's error table"
                                  % (where, rid, GUIDE))
                    continue
                marked[rid].append((src, test, where))
    for r in rows:
        if not marked[r.id]:
            errors.append("%s:%d: error table row '%s' has no test: put /* contract: %s */ in the "
                          "test that asserts it" % (GUIDE, r.line, r.id, r.id))
            continue
        for src, test, where in marked[r.id]:
            name, kind, start, end = next(t for t in src.tests if t[0] == test)
            code = src.reach(src.code[start:end])
            for c in r.codes:
                if not re.search(r"-\s*" + c[1:] + r"\b", code):
                    errors.append("%s: test %s is marked '%s' but never mentions %s in its code (%s:%d "
                                  "says the row gives %s)" % (where, test_label(name, kind), r.id, c,
                                                              GUIDE, r.line, " / ".join(r.codes)))
    return errors, rows, marked


def main_check(root):
    errors, rows, marked = check(root)
    for e in errors:
        print("error table: " + e)
    if errors:
        print("error table: FAILED (%d problem%s); docs/GUIDE.md '## Errors' and the tests must agree "
              "(scripts/check-error-table.py explains the markers)" % (len(errors), "" if len(errors) == 1 else "s"))
        return 1
    n = sum(len(v) for v in marked.values())
    print("error table: %d rows, each asserted by a marked test (%d markers); every marked test "
          "mentions its row's codes" % (len(rows), n))
    return 0


# ---- --self-test --------------------------------------------------------------------------------

def self_test(root):
    tmp = tempfile.mkdtemp(prefix="ursa-error-table.")
    fails = 0
    try:
        def fresh():
            dst = os.path.join(tmp, "copy")
            shutil.rmtree(dst, ignore_errors=True)
            os.makedirs(os.path.join(dst, "docs"))
            shutil.copy(os.path.join(root, GUIDE), os.path.join(dst, GUIDE))
            shutil.copytree(os.path.join(root, TESTS), os.path.join(dst, TESTS),
                            ignore=shutil.ignore_patterns("*.h", "*.txt", "*.sh", "*.S", "arch"))
            return dst

        def run(dst):
            p = subprocess.run([sys.executable, os.path.abspath(__file__), dst],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
            return p.returncode, p.stdout

        def edit(path, fn):
            with open(path, encoding="utf-8") as f:
                text = f.read()
            new = fn(text)
            if new == text:
                raise RuntimeError("the plant changed nothing in " + path)
            with open(path, "w", encoding="utf-8") as f:
                f.write(new)

        dst = fresh()
        rc, out = run(dst)
        if rc != 0:
            print("self-test: the unchanged copy does not pass:\n" + out)
            return 1
        errors, rows, marked = check(dst)
        coded = next(r for r in rows if r.codes and marked[r.id])
        first = rows[0]
        a_test_file = marked[coded.id][0][0].rel

        def guide_line(text, lineno, fn):
            lines = text.split("\n")
            lines[lineno - 1] = fn(lines[lineno - 1])
            return "\n".join(lines)

        plants = [
            ("a row without a test",
             lambda d: edit(os.path.join(d, GUIDE), lambda t: guide_line(
                 t, rows[-1].line, lambda l: l + "\n| `planted-row` | a misuse nobody tests | `-EBUSY` |")),
             "row 'planted-row' has no test"),
            ("a row whose code changed (%s: %s -> -ENOTRECOVERABLE)" % (coded.id, coded.codes[0]),
             lambda d: edit(os.path.join(d, GUIDE), lambda t: guide_line(
                 t, coded.line, lambda l: l.replace(coded.codes[0], "-ENOTRECOVERABLE"))),
             "is marked '%s' but never mentions -ENOTRECOVERABLE" % coded.id),
            ("a marker naming no row",
             lambda d: edit(os.path.join(d, a_test_file), lambda t: t.replace(
                 "contract: %s" % coded.id, "contract: %s no-such-row" % coded.id, 1)),
             "names 'no-such-row', which is no row"),
            ("a duplicated id (%s)" % first.id,
             lambda d: edit(os.path.join(d, GUIDE), lambda t: guide_line(t, first.line, lambda l: l + "\n" + l)),
             "row id '%s' is used twice" % first.id),
            ("a marker outside a test",
             lambda d: edit(os.path.join(d, a_test_file), lambda t: t + "\n/* contract: %s */\n" % coded.id),
             "contract marker outside the body of a test"),
            ("a test that stopped asserting its row (its marker removed)",
             lambda d: [edit(os.path.join(d, TESTS, f), lambda t: re.sub(
                 r"/\*\s*contract:\s*%s\s*\*/" % re.escape(coded.id), "", t))
                 for f in sorted(set(os.path.basename(s.rel) for s, _, _ in marked[coded.id]))],
             "row '%s' has no test" % coded.id),
        ]
        for what, plant, expect in plants:
            dst = fresh()
            plant(dst)
            rc, out = run(dst)
            if rc == 0 or expect not in out:
                print("self-test: %s was not caught (exit %d; expected a line with \"%s\"):\n%s"
                      % (what, rc, expect, out))
                fails += 1
            else:
                line = next(l for l in out.split("\n") if expect in l)
                print("self-test: caught %s: %s" % (what, line))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if fails:
        print("self-test: FAILED: %d of %d planted drifts passed the check" % (fails, len(plants)))
        return 1
    print("self-test: the unchanged copy passed and each of the %d planted drifts failed the check" % len(plants))
    return 0


def main(argv):
    args = argv[1:]
    selftest = bool(args) and args[0] == "--self-test"
    if selftest:
        args = args[1:]
    if len(args) > 1:
        print("usage: check-error-table.py [--self-test] [ROOT]", file=sys.stderr)
        return 2
    root = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    return self_test(root) if selftest else main_check(root)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
