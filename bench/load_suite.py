#!/usr/bin/env python3
"""bench/load_suite.py - the load phase of `make bench` (issue #18 item 6): HTTP/1.1 keep-alive
servers of one static response under wrk, on loopback, every peer in the same run.

Servers (each answers GET / with the body "Hello, world\\n"):
  ursa-1, ursa-2    examples/httpd.c (a thread per connection) at URSA_VPS=1 and 2
  go-1, go-2        Go net/http (bench/peers/go/http.go) at GOMAXPROCS=1 and 2
  nginx-1, nginx-2  nginx serving the same bytes as a static file, 1 and 2 worker processes
at 100 and 10,000 concurrent keep-alive connections (wrk -t1 -cN -dD --latency): requests per
second, p50 and p99 latency, the server's peak RSS (the sum over its processes, sampled every
0.2 s while wrk runs).  Then, for each server, 10,000 idle keep-alive connections (each has
made one request and waits): the server's RSS per connection (issue #18: <= 8 KiB for ursa).

The two cores: wrk always runs on CPU 0 (taskset -c 0).  A server of one worker (1 VP, one P,
one nginx worker) runs on CPU 1 alone; a server of two runs unpinned on both CPUs, sharing CPU 0
with wrk, the same for all three.  So every 1-worker point has the same CPU budget, as has every
2-worker point; the 2-worker points measure what a second worker gains when the load generator
competes for its core, which is the honest question on a 2-CPU machine.

Rounds: the servers are measured in interleaved rounds (every server once per round, the order
kept), and each figure is the median over the rounds (default 1 round of 3 s per point; --full:
3 rounds of 5 s; --quick: 1 round of 1 s; a 10,000-connection point runs at least 4 s, since wrk
takes about a second to open its connections).  The idle connections are measured on the server
started afresh after its points (its RSS then holds nothing of the load).  A server that cannot be run (wrk, Go or nginx
missing, the build without httpd) is reported missing with the reason and the phase goes on.

  python3 bench/load_suite.py --build build-release --json results/load-RUN.json [--full|--quick]

Exit status: 0 when every server that could run answered every request right (wrk's non-2xx
count and socket errors are reported; a check that the body is the expected one runs first),
1 otherwise, 2 for a usage error.
"""
import argparse
import json
import os
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BODY = b"Hello, world\n"
CONNS = (100, 10000)
IDLE = 10000


def say(msg):
    print(f"{os.environ.get('BENCH_PHASE', '')} load: {msg}".strip(), flush=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def raise_nofile(want):
    """Soft limit of open files up to want (children inherit it): the limit it reached."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    new = want if hard == resource.RLIM_INFINITY else min(want, hard)
    if new > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def tree_pids(pid):
    """pid and its descendants (nginx's workers)."""
    kids = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            kids.setdefault(ppid, []).append(int(d))
        except (OSError, ValueError, IndexError):
            pass
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def rss_kib(pid):
    """VmRSS summed over pid's process tree, KiB."""
    total = 0
    for p in tree_pids(pid):
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


class Server:
    def __init__(self, name, workers, argv, env=None, why=None, setup=None):
        self.name, self.workers, self.argv, self.env, self.why, self.setup = name, workers, argv, env, why, setup
        self.proc = None

    def start(self, port):
        argv = [a.replace("{PORT}", str(port)) for a in self.argv]
        if self.setup:
            argv = self.setup(port)
        if self.workers == 1:
            argv = ["taskset", "-c", "1"] + argv
        env = dict(os.environ)
        env.update(self.env or {})
        self.proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     start_new_session=True)
        self.port = port
        deadline = time.time() + 10
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited: {self.proc.stderr.read().decode(errors='replace')[-300:]}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                    data = b""
                    while True:
                        chunk = s.recv(4096)
                        if not chunk:
                            break
                        data += chunk
                head, _, body = data.partition(b"\r\n\r\n")
                if not head.startswith(b"HTTP/1.1 200") or body != BODY:
                    raise RuntimeError(f"{self.name} answered {data[:200]!r}, not 200 with {BODY!r}")
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"{self.name} did not answer on port {port} within 10 s")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.proc = None


UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3}


def parse_wrk(out):
    r = {}
    m = re.search(r"Requests/sec:\s+([\d.]+)", out)
    r["rps"] = float(m.group(1)) if m else None
    for pct in ("50", "99"):
        m = re.search(rf"^\s+{pct}(?:\.000)?%\s+([\d.]+)(us|ms|s)\s*$", out, re.M)
        r[f"p{pct}_ms"] = float(m.group(1)) * UNITS[m.group(2)] if m else None
    m = re.search(r"(\d+) requests in", out)
    r["requests"] = int(m.group(1)) if m else 0
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    r["socket_errors"] = sum(int(x) for x in m.groups()) if m else 0
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    r["non2xx"] = int(m.group(1)) if m else 0
    return r


def run_wrk(srv, conns, secs):
    argv = ["taskset", "-c", "0", "wrk", "-t1", f"-c{conns}", f"-d{secs}s", "--latency", "--timeout", "5s",
            f"http://127.0.0.1:{srv.port}/"]
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    peak = 0
    while p.poll() is None:
        peak = max(peak, rss_kib(srv.proc.pid))
        time.sleep(0.2)
    out = p.stdout.read()
    r = parse_wrk(out)
    r["rss_kib"] = max(peak, rss_kib(srv.proc.pid))
    r["cmd"] = " ".join(argv)
    if r["rps"] is None:
        r["error"] = "wrk printed no figure: " + out.strip()[-300:]
    return r


def idle_conns(srv, n):
    """Opens n keep-alive connections, each making one request and then waiting: server RSS
    before and after, KiB, and the KiB per connection."""
    before = rss_kib(srv.proc.pid)
    socks, bad = [], 0
    req = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
    try:
        for _ in range(n):
            s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
            s.sendall(req)
            socks.append(s)
            if len(socks) % 500 == 0:                    # read the answers in batches
                for t in socks[-500:]:
                    if not t.recv(4096).endswith(BODY):
                        bad += 1
        for t in socks[len(socks) - len(socks) % 500:]:
            if not t.recv(4096).endswith(BODY):
                bad += 1
        time.sleep(0.5)
        after = rss_kib(srv.proc.pid)
    finally:
        for s in socks:
            s.close()
    return {"conns": n, "rss_before_kib": before, "rss_after_kib": after,
            "kib_per_conn": (after - before) / n, "bad_answers": bad}


def nginx_setup(tmp, workers):
    def setup(port):
        root = os.path.join(tmp, "www")
        os.makedirs(root, exist_ok=True)
        with open(os.path.join(root, "index.html"), "wb") as f:
            f.write(BODY)
        conf = os.path.join(tmp, f"nginx-{workers}.conf")
        with open(conf, "w") as f:
            f.write(f"""daemon off;
master_process on;
worker_processes {workers};
worker_rlimit_nofile 30000;
{'user root;' if os.getuid() == 0 else ''}
pid {tmp}/nginx-{workers}.pid;
error_log {tmp}/nginx-{workers}.err warn;
events {{ worker_connections 20000; }}
http {{
  access_log off;
  keepalive_requests 100000000;
  keepalive_timeout 300s;
  default_type text/plain;
  client_body_temp_path {tmp}/body; proxy_temp_path {tmp}/proxy; fastcgi_temp_path {tmp}/fcgi;
  uwsgi_temp_path {tmp}/uwsgi; scgi_temp_path {tmp}/scgi;
  server {{
    listen 127.0.0.1:{port} backlog=4096;
    location / {{ root {root}; index index.html; }}
  }}
}}
""")
        return ["nginx", "-p", tmp, "-c", conf]
    return setup


def servers(build, tmp):
    httpd = os.path.join(build, "httpd")
    gop = os.path.join(build, "bench", "go_peers")
    out = []
    why_h = None if os.access(httpd, os.X_OK) else f"{httpd} not built"
    for v in (1, 2):
        out.append(Server(f"ursa-{v}", v, [httpd, "{PORT}"], {"URSA_VPS": str(v)}, why_h))
    if os.access(gop, os.X_OK):
        why_g = None
    elif os.path.exists(gop + ".failed"):
        why_g = "go build failed: " + open(gop + ".failed").read().strip()[:200]
    else:
        why_g = "no Go toolchain at configure time (scripts/setup.sh bench installs golang-go)"
    for v in (1, 2):
        out.append(Server(f"go-{v}", v, [gop, "http", "{PORT}"], {"GOMAXPROCS": str(v)}, why_g))
    why_n = None if shutil.which("nginx") else "nginx not installed (scripts/setup.sh bench installs nginx-light)"
    for v in (1, 2):
        out.append(Server(f"nginx-{v}", v, [], None, why_n, nginx_setup(tmp, v)))
    return out


def main():
    ap = argparse.ArgumentParser(description="The load phase of make bench: wrk against ursa's httpd, Go, nginx.")
    ap.add_argument("--build", default=os.path.join(REPO, "build-release"))
    ap.add_argument("--json", required=True)
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--full", action="store_true", help="3 rounds of 5 s per point")
    g.add_argument("--quick", action="store_true", help="1 round of 1 s per point (a smoke run)")
    ap.add_argument("--plot", help="write the plot (PNG) here (needs matplotlib)")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--seconds", type=int, default=None)
    a = ap.parse_args()
    rounds = a.rounds or (3 if a.full else 1)
    secs = a.seconds or (5 if a.full else 1 if a.quick else 3)
    doc = {"rounds": rounds, "seconds": secs, "conns": list(CONNS), "idle_conns": IDLE,
           "cpus": "wrk on CPU 0; 1-worker servers on CPU 1; 2-worker servers unpinned (CPUs 0-1)",
           "servers": {}, "missing": {}, "errors": []}
    if shutil.which("wrk") is None:
        doc["missing"]["wrk"] = "wrk not installed (scripts/setup.sh bench installs it): no load phase"
        say(doc["missing"]["wrk"])
        json.dump(doc, open(a.json, "w"), indent=1)
        return 0
    nofile = raise_nofile(3 * max(CONNS) + 1000)
    doc["nofile"] = nofile
    conns = [c for c in CONNS if c + 100 <= nofile]
    if len(conns) < len(CONNS):
        doc["errors"].append(f"ulimit -n allows {nofile} descriptors: the 10,000-connection points are skipped")
        say(doc["errors"][-1])
    doc["conns"] = conns
    try:
        doc["wrk"] = subprocess.run(["wrk", "--version"], capture_output=True, text=True).stdout.split("\n")[0]
        doc["wrk"] = doc["wrk"].split(" Copyright")[0].strip()
    except OSError:
        doc["wrk"] = "?"
    tmp = tempfile.mkdtemp(prefix="ursa-load-")
    srvs = servers(a.build, tmp)
    for s in srvs:
        if s.why:
            doc["missing"][s.name] = s.why
            say(f"{s.name}: missing ({s.why})")
    live = [s for s in srvs if not s.why]
    samples = {s.name: {str(c): [] for c in conns} for s in live}
    idle = {}
    t0 = time.time()
    try:
        for rnd in range(rounds):
            for s in live:
                try:
                    s.start(free_port())
                except RuntimeError as e:
                    doc["errors"].append(str(e))
                    say(f"{s.name}: FAILED to start: {e}")
                    s.stop()
                    continue
                try:
                    for c in conns:
                        # 10,000 connections take wrk about a second to open: their points run longer
                        r = run_wrk(s, c, secs if c <= 1000 else max(secs, 4))
                        samples[s.name][str(c)].append(r)
                        say(f"round {rnd + 1}/{rounds} {s.name:8} {c:6} connections: "
                            + (f"{r['rps']:10,.0f} req/s  p50 {r['p50_ms']:.2f} ms  p99 {r['p99_ms']:.2f} ms  "
                               f"RSS {r['rss_kib'] / 1024:.1f} MiB  errors {r['socket_errors']}"
                               if r["rps"] is not None else r["error"]))
                finally:
                    s.stop()
                if rnd == 0 and IDLE + 100 <= nofile:            # on a server started afresh
                    try:
                        s.start(free_port())
                        idle[s.name] = idle_conns(s, IDLE)
                        i = idle[s.name]
                        say(f"{s.name:8} {IDLE} idle connections: {i['kib_per_conn']:.2f} KiB each "
                            f"(RSS {i['rss_before_kib'] / 1024:.1f} -> {i['rss_after_kib'] / 1024:.1f} MiB)")
                    except (RuntimeError, OSError) as e:
                        doc["errors"].append(f"{s.name} idle connections: {e}")
                        say(f"{s.name}: idle connections FAILED: {e}")
                    finally:
                        s.stop()
    finally:
        for s in live:
            s.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    rc = 0
    for s in live:
        out = {}
        for c in conns:
            rs = [r for r in samples[s.name][str(c)] if r.get("rps") is not None]
            if not rs:
                continue
            med = lambda k: statistics.median(r[k] for r in rs if r[k] is not None)
            out[str(c)] = {"rps": med("rps"), "p50_ms": med("p50_ms"), "p99_ms": med("p99_ms"),
                           "rss_kib": med("rss_kib"), "rps_all": [r["rps"] for r in rs],
                           "socket_errors": sum(r["socket_errors"] for r in rs),
                           "non2xx": sum(r["non2xx"] for r in rs), "cmd": rs[0]["cmd"]}
            if out[str(c)]["non2xx"]:
                rc = 1
                doc["errors"].append(f"{s.name} at {c}: {out[str(c)]['non2xx']} answers not 2xx")
        doc["servers"][s.name] = {"workers": s.workers, "points": out, "idle": idle.get(s.name)}
        if s.name in idle and idle[s.name]["bad_answers"]:
            rc = 1
            doc["errors"].append(f"{s.name}: {idle[s.name]['bad_answers']} idle connections got a wrong answer")
    doc["seconds_taken"] = round(time.time() - t0, 1)
    doc["markdown"] = markdown(doc)
    if a.plot:
        doc["plot"], why = plot(doc, a.plot)
        if why:
            doc["plot_why"] = why
    if any("FAILED" in e or "exited" in e or "did not answer" in e or "answered" in e for e in doc["errors"]):
        rc = 1
    json.dump(doc, open(a.json, "w"), indent=1)
    for line in acceptance(doc):
        say(line)
    return rc


def markdown(doc):
    """The section of results/REPORT.md (bench/report.py --load)."""
    L = [f"wrk ({doc.get('wrk', '?')}) `-t1 -cN --latency` for {doc['seconds']} s per point "
         f"(10,000 connections: at least 4 s), {doc['rounds']} round(s), medians; {doc['cpus']}. "
         f"Peak RSS of the server's processes while wrk ran.\n",
         "| server | connections | requests/s | p50 ms | p99 ms | server RSS MiB | socket errors |",
         "|---|---|---|---|---|---|---|"]
    for name, sv in doc["servers"].items():
        for c in doc["conns"]:
            p = sv["points"].get(str(c))
            if p:
                L.append(f"| {name} | {c:,} | {p['rps']:,.0f} | {p['p50_ms']:.2f} | {p['p99_ms']:.2f} | "
                         f"{p['rss_kib'] / 1024:.1f} | {p['socket_errors']} |")
    for name, why in doc["missing"].items():
        L.append(f"| {name} | | **missing**: {why} | | | | |")
    L.append(f"\n{doc['idle_conns']:,} idle keep-alive connections (each made one request and waits), on a "
             "freshly started server: RSS per connection\n")
    L.append("| server | KiB per connection | RSS before → after, MiB |")
    L.append("|---|---|---|")
    for name, sv in doc["servers"].items():
        i = sv.get("idle")
        if i:
            L.append(f"| {name} | {i['kib_per_conn']:.2f} | {i['rss_before_kib'] / 1024:.1f} → "
                     f"{i['rss_after_kib'] / 1024:.1f} |")
    L.append("\nIssue #18's acceptance, this run:\n")
    L.extend(f"- {x}" for x in acceptance(doc))
    if doc["errors"]:
        L.append("\nErrors: " + "; ".join(doc["errors"]))
    return "\n".join(L) + "\n"


def plot(doc, path):
    """Requests/s and p99 per server and connection count: the file written, or why not."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        return None, f"no matplotlib ({e})"
    names = list(doc["servers"])
    if not names:
        return None, "no server measured"
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    w = 0.8 / max(1, len(doc["conns"]))
    for k, c in enumerate(doc["conns"]):
        xs = [i + k * w for i in range(len(names))]
        rps = [doc["servers"][n]["points"].get(str(c), {}).get("rps", 0) for n in names]
        p99 = [doc["servers"][n]["points"].get(str(c), {}).get("p99_ms", 0) for n in names]
        axes[0].bar(xs, rps, w, label=f"{c:,} connections")
        axes[1].bar(xs, p99, w, label=f"{c:,} connections")
    for ax, t in ((axes[0], "requests/s (higher is better)"), (axes[1], "p99 latency, ms (lower is better)")):
        ax.set_xticks([i + w * (len(doc["conns"]) - 1) / 2 for i in range(len(names))])
        ax.set_xticklabels(names, rotation=20)
        ax.set_title(t)
        ax.legend()
    axes[1].set_yscale("log")
    fig.suptitle("HTTP keep-alive load under wrk: ursa httpd, Go net/http, nginx")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path, None


def acceptance(doc):
    """Issue #18's acceptance lines from one run's document."""
    sv = doc["servers"]
    lines = []
    u, g = sv.get("ursa-2", {}).get("points", {}), sv.get("go-2", {}).get("points", {})
    for c in doc["conns"]:
        a, b = u.get(str(c)), g.get(str(c))
        if a and b and a["rps"] > 0 and b["rps"] > 0:
            ok = a["rps"] >= b["rps"] and a["p99_ms"] <= b["p99_ms"]
            lines.append(f"httpd 2 VPs vs Go GOMAXPROCS=2 at {c} connections: {a['rps'] / b['rps']:.2f}x req/s, "
                         f"p99 {a['p99_ms']:.2f} vs {b['p99_ms']:.2f} ms: {'met' if ok else 'NOT met'}")
        n = sv.get("nginx-2", {}).get("points", {}).get(str(c))
        if a and n and a["rps"] > 0 and n["rps"] > 0:
            lines.append(f"httpd 2 VPs vs nginx 2 workers at {c} connections: {a['rps'] / n['rps']:.2f}x req/s, "
                         f"p99 {a['p99_ms']:.2f} vs {n['p99_ms']:.2f} ms")
    for name in ("ursa-1", "ursa-2"):
        i = sv.get(name, {}).get("idle")
        if i:
            lines.append(f"{name}: {i['kib_per_conn']:.2f} KiB of server RSS per idle keep-alive connection "
                         f"(<= 8 KiB: {'met' if i['kib_per_conn'] <= 8 else 'NOT met'})")
    return lines


if __name__ == "__main__":
    sys.exit(main())
