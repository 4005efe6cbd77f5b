"""S3 as it behaves, on one machine: a real S3-compatible server
(versitygw on a local folder), toxiproxy in front of it for the network
(first-byte latency and jitter, per-connection bandwidth), and a small
HTTP layer in front of toxiproxy that does what a TCP proxy cannot: a PUT
slower than a GET, a long tail, 503 SlowDown and timeouts at a set rate,
and a count of every request by kind with its bytes and its times.

    client --> HttpLayer (one per role) --> toxiproxy --> versitygw

Everything listens on 127.0.0.1; every process started here is stopped
when the script exits (atexit, SIGINT, SIGTERM).
"""

import atexit
import bisect
import collections
import http.client
import http.server
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse

CACHE = os.path.expanduser(os.environ.get("STRATA_TEST_BIN", "~/.cache/strata-test-bin"))
VERSITYGW_VERSION = "1.8.0"
TOXIPROXY_VERSION = "2.12.0"
VERSITYGW = os.environ.get("VERSITYGW_BIN") or os.path.join(
    CACHE, f"versitygw-{VERSITYGW_VERSION}", "versitygw")
TOXIPROXY = os.environ.get("TOXIPROXY_BIN") or os.path.join(
    CACHE, f"toxiproxy-{TOXIPROXY_VERSION}", "server")
ACCESS, SECRET = "strata-bench", "strata-bench-secret"

# First-byte latency as toxiproxy adds it to every answer (the server's
# side of each connection, "downstream"): latency +- jitter, uniform. The
# HTTP layer adds, before it forwards a request: `write_extra_ms`
# (uniform, lo..hi) to PUT, POST and DELETE, for a write answered later
# than a read; and the tail, each (share, lo, hi) a share of all requests
# that wait lo..hi ms more. Bandwidth is per connection, each way, in
# KB/s (toxiproxy's unit).
PROFILES = {
    # No latency: loading data, and the overhead of the chain itself.
    "none": {"latency_ms": 0, "jitter_ms": 0, "write_extra_ms": (0, 0), "tail": [],
             "bandwidth_kbs": None},
    # S3 Standard, client in the bucket's region: GET first byte 15-25 ms
    # (median 20), PUT 30-60 ms (median 45); 5 % of requests 25-100 ms
    # later and 1 % 100-400 ms later (p99 about 120 ms); ~90 MB/s per
    # connection.
    "standard": {"latency_ms": 20, "jitter_ms": 5, "write_extra_ms": (15, 35),
                 "tail": [(0.05, 25, 100), (0.01, 100, 400)], "bandwidth_kbs": 90_000},
    # S3 Express One Zone, client in the same zone: GET first byte 2-4 ms,
    # PUT 4-8 ms; 5 % 3-10 ms later, 1 % 10-30 ms later.
    "express": {"latency_ms": 3, "jitter_ms": 1, "write_extra_ms": (1, 4),
                "tail": [(0.05, 3, 10), (0.01, 10, 30)], "bandwidth_kbs": 90_000},
}

_children = []


def _cleanup():
    for p in _children:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
                p.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except OSError:
                    pass


atexit.register(_cleanup)
signal.signal(signal.SIGINT, lambda s, f: sys.exit(130))
signal.signal(signal.SIGTERM, lambda s, f: sys.exit(143))


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spawn(cmd, logfile, env=None):
    """Starts a process in its own group, stopped when the script exits."""
    out = open(logfile, "ab")
    p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                         start_new_session=True, env=env)
    _children.append(p)
    return p


def stop(p, timeout=60):
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def request(port, method, path, body=b"", headers=None, timeout=30):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def wait_port(port, proc, what, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            sys.exit(f"{what} exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    sys.exit(f"{what} not listening within {timeout} s")


def versions():
    out = {}
    for name, cmd in (("versitygw", [VERSITYGW, "--version"]),
                      ("toxiproxy", [TOXIPROXY, "-version"])):
        try:
            text = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
            out[name] = (text.stdout + text.stderr).strip().splitlines()[0]
        except (OSError, IndexError, subprocess.TimeoutExpired):
            out[name] = "?"
    return out


class Toxiproxy:
    """toxiproxy's server and one proxy to `upstream_port`; its toxics
    are set from a profile through its HTTP API."""

    def __init__(self, workdir, upstream_port):
        self.api = free_port()
        self.p = spawn([TOXIPROXY, "-host", "127.0.0.1", "-port", str(self.api)],
                       os.path.join(workdir, "toxiproxy.log"))
        wait_port(self.api, self.p, "toxiproxy")
        self.port = free_port()
        self._call("POST", "/proxies", {"name": "s3", "listen": f"127.0.0.1:{self.port}",
                                        "upstream": f"127.0.0.1:{upstream_port}"})
        self.toxics = []

    def _call(self, method, path, doc=None):
        body = json.dumps(doc).encode() if doc is not None else b""
        status, out = request(self.api, method, path, body,
                              {"Content-Type": "application/json"})
        if status >= 300:
            sys.exit(f"toxiproxy {method} {path}: {status} {out[:200]!r}")
        return out

    def set_profile(self, profile):
        for name in self.toxics:
            self._call("DELETE", f"/proxies/s3/toxics/{name}")
        self.toxics = []
        if profile["latency_ms"] or profile["jitter_ms"]:
            self._add("latency", "downstream", {"latency": profile["latency_ms"],
                                                "jitter": profile["jitter_ms"]})
        if profile["bandwidth_kbs"]:
            for stream in ("downstream", "upstream"):
                self._add("bandwidth", stream, {"rate": profile["bandwidth_kbs"]})

    def _add(self, kind, stream, attributes):
        name = f"{kind}_{stream}"
        self._call("POST", "/proxies/s3/toxics", {"name": name, "type": kind, "stream": stream,
                                                  "toxicity": 1.0, "attributes": attributes})
        self.toxics.append(name)


class Versitygw:
    """versitygw's S3 gateway on a local folder (its posix backend)."""

    def __init__(self, workdir):
        self.root = os.path.join(workdir, "versitygw")
        os.makedirs(self.root, exist_ok=True)
        self.port = free_port()
        env = dict(os.environ, ROOT_ACCESS_KEY=ACCESS, ROOT_SECRET_KEY=SECRET)
        self.p = spawn([VERSITYGW, "--port", f"127.0.0.1:{self.port}", "--quiet",
                        "posix", self.root], os.path.join(workdir, "versitygw.log"), env)
        wait_port(self.port, self.p, "versitygw")

    def create_bucket(self, bucket):
        # A bucket of the posix backend is a folder of its root.
        os.makedirs(os.path.join(self.root, bucket), exist_ok=True)

    def bytes_used(self, bucket):
        total = 0
        for root, _, files in os.walk(os.path.join(self.root, bucket)):
            for f in files:
                try:
                    total += os.path.getsize(os.path.join(root, f))
                except OSError:
                    pass
        return total


Record = collections.namedtuple("Record", "kind key status start end sent received")


def classify(method, path):
    """(kind, key): kind is GET, HEAD, PUT, LIST, DELETE, POST (bulk
    delete is POST ?delete: DELETE)."""
    url = urllib.parse.urlsplit(path)
    query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
    key = url.path.split("/", 2)[2] if url.path.count("/") >= 2 else ""
    if method == "GET" and ("list-type" in query or not key):
        return "LIST", query.get("prefix", [""])[0]
    if method == "POST" and "delete" in query:
        return "DELETE", key
    return method, urllib.parse.unquote(key)


SLOWDOWN = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
            b"<Message>Please reduce your request rate.</Message></Error>")


class HttpLayer:
    """An HTTP proxy to `upstream_port` (toxiproxy): adds the profile's
    write latency and tail, answers `slowdown_rate` of requests 503
    SlowDown and holds `timeout_rate` of them unanswered for
    `timeout_hold_s` before closing the connection, and records every
    request. One per role, so each role's requests are counted apart."""

    def __init__(self, upstream_port, profile, seed=1, dump=None):
        self.profile = profile
        self.dump = open(dump, "a", buffering=1) if dump else None
        self.slowdown_rate = 0.0
        self.timeout_rate = 0.0
        self.timeout_hold_s = 30.0
        self.records = []
        self.conditional = collections.Counter()
        # Answers the client hung up on before they were sent.
        self.client_gone = 0
        self.lock = threading.Lock()
        self.rng = random.Random(seed)
        layer = self
        local = threading.local()

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def forward(self):
                start = time.perf_counter()
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else None
                kind, key = classify(self.command, self.path)
                cond = ("if-none-match" if self.headers.get("If-None-Match") else
                        "if-match" if self.headers.get("If-Match") else None)
                delay, fault = layer.draw(kind)
                if fault == "timeout":
                    time.sleep(layer.timeout_hold_s)
                    layer.record(kind, key, 0, start, n, 0)
                    self.close_connection = True
                    return
                if fault == "slowdown":
                    time.sleep(layer.profile["latency_ms"] / 1000)
                    self.send_response(503)
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(SLOWDOWN)))
                    self.end_headers()
                    self.wfile.write(SLOWDOWN)
                    layer.record(kind, key, 503, start, n, len(SLOWDOWN))
                    return
                if delay:
                    time.sleep(delay)
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in ("connection", "keep-alive")}
                for attempt in (0, 1):
                    conn = getattr(local, "conn", None)
                    if conn is None:
                        conn = local.conn = http.client.HTTPConnection(
                            "127.0.0.1", upstream_port, timeout=120)
                    try:
                        conn.request(self.command, self.path, body=body, headers=headers)
                        r = conn.getresponse()
                        data = r.read()
                        break
                    except (OSError, http.client.HTTPException):
                        conn.close()
                        local.conn = None
                        if attempt:
                            self.send_error(502)
                            return
                # Counted as the store answered it, even if the client
                # has gone meanwhile (a query cancelled, a timeout).
                layer.record(kind, key, r.status, start, n, len(data))
                try:
                    self.send_response(r.status)
                    for k, v in r.getheaders():
                        if k.lower() not in ("transfer-encoding", "connection",
                                             "content-length"):
                            self.send_header(k, v)
                    # A HEAD answer's length is the object's, not the (empty) body's.
                    length = r.getheader("Content-Length") if self.command == "HEAD" else None
                    self.send_header("Content-Length", length or str(len(data)))
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    layer.client_gone += 1
                    self.close_connection = True
                    return
                if cond and self.command == "PUT":
                    layer.count_conditional(cond, r.status)

            do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = forward

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.request_queue_size = 256
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def draw(self, kind):
        """The extra wait (s) of one request and its fault, if any."""
        p = self.profile
        with self.lock:
            u = self.rng.random()
            if u < self.timeout_rate:
                return 0.0, "timeout"
            if u < self.timeout_rate + self.slowdown_rate:
                return 0.0, "slowdown"
            ms = 0.0
            if kind in ("PUT", "POST", "DELETE"):
                lo, hi = p["write_extra_ms"]
                ms += self.rng.uniform(lo, hi)
            t = self.rng.random()
            for share, lo, hi in p["tail"]:
                if t < share:
                    ms += self.rng.uniform(lo, hi)
                    break
                t -= share
        return ms / 1000, None

    def count_conditional(self, header, status):
        with self.lock:
            self.conditional[f"PUT {header} -> {status}"] += 1

    def conditional_counts(self):
        """Conditional PUTs forwarded, by header and answer."""
        with self.lock:
            return dict(self.conditional)

    def record(self, kind, key, status, start, sent, received):
        rec = Record(kind, key, status, start, time.perf_counter(), sent, received)
        with self.lock:
            self.records.append(rec)
            if self.dump:
                self.dump.write(json.dumps(rec._asdict()) + "\n")

    def take(self):
        """The requests recorded since the last take."""
        with self.lock:
            out, self.records = self.records, []
        return out


def summarize(records, seconds=None):
    """Requests and bytes by kind; per hour if `seconds` is given."""
    by = collections.defaultdict(lambda: {"requests": 0, "bytes_sent": 0, "bytes_received": 0,
                                          "errors": 0})
    for r in records:
        row = by[r.kind]
        row["requests"] += 1
        row["bytes_sent"] += r.sent
        row["bytes_received"] += r.received
        if r.status == 0 or r.status >= 500:
            row["errors"] += 1
    out = {k: dict(v) for k, v in sorted(by.items())}
    if seconds:
        for v in out.values():
            v["per_hour"] = v["requests"] * 3600 / seconds
            v["bytes_per_hour"] = (v["bytes_sent"] + v["bytes_received"]) * 3600 / seconds
    return out


def sequential_round_trips(records):
    """The longest chain of requests each started after the one before had
    answered: the round trips a client waited for one after another."""
    # A request's depth is one more than the deepest chain that had ended
    # when it started; taken in order of their ends, those are all known.
    ends, running = [], []
    for r in sorted(records, key=lambda r: r.end):
        i = bisect.bisect_right(ends, r.start)
        d = 1 + (running[i - 1] if i else 0)
        ends.append(r.end)
        running.append(max(d, running[-1]) if running else d)
    return running[-1] if running else 0


def serve(argv):
    """`s3net.py serve --workdir DIR [--profile P] [--bucket B]`: the whole
    chain for a test, until stdin closes or a signal stops it. One JSON
    line on stdout once it is ready: `s3_port` (the HTTP layer, where a
    client points), `control_port`, the bucket, the keys. The control port
    takes `POST /slowdown?rate=R` (share of requests answered 503
    SlowDown), `POST /outage?on=1|0` (toxiproxy cuts the store off: new
    and open connections refused) and `GET /requests` (requests by kind,
    errors among them, since the start)."""
    import argparse

    ap = argparse.ArgumentParser(prog="s3net.py serve")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--profile", default="none", choices=sorted(PROFILES))
    ap.add_argument("--bucket", default="strata")
    args = ap.parse_args(argv)
    os.makedirs(args.workdir, exist_ok=True)
    gw = Versitygw(args.workdir)
    gw.create_bucket(args.bucket)
    toxi = Toxiproxy(args.workdir, gw.port)
    toxi.set_profile(PROFILES[args.profile])
    layer = HttpLayer(toxi.port, PROFILES[args.profile])
    seen = []

    class Control(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def answer(self, status, doc):
            body = json.dumps(doc).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):
            url = urllib.parse.urlsplit(self.path)
            q = dict(urllib.parse.parse_qsl(url.query))
            if url.path == "/slowdown":
                with layer.lock:
                    layer.slowdown_rate = float(q.get("rate", "0"))
                return self.answer(200, {"slowdown_rate": layer.slowdown_rate})
            if url.path == "/outage":
                on = q.get("on", "1") == "1"
                toxi._call("POST", "/proxies/s3", {"enabled": not on})
                return self.answer(200, {"outage": on})
            self.answer(404, {"error": f"no {url.path}"})

        def do_GET(self):
            if self.path == "/requests":
                seen.extend(layer.take())
                return self.answer(200, summarize(seen))
            self.answer(404, {"error": f"no {self.path}"})

    control = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Control)
    control.daemon_threads = True
    threading.Thread(target=control.serve_forever, daemon=True).start()
    print(json.dumps({"s3_port": layer.port, "control_port": control.server_address[1],
                      "bucket": args.bucket, "access_key": ACCESS, "secret_key": SECRET,
                      "versions": versions()}), flush=True)
    # Until the test closes stdin (or exits): then everything stops.
    sys.stdin.read()


if __name__ == "__main__":
    if sys.argv[1:2] != ["serve"]:
        sys.exit("usage: s3net.py serve --workdir DIR [--profile P] [--bucket B]")
    serve(sys.argv[2:])
