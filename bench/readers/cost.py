#!/usr/bin/env python3
"""What one reader node costs in object-store requests: requests per second
by kind (WAL, manifest, GC boundary, SSTs) and their monthly price at S3's
request prices, with the writer idle, sending like a scraper (a write every
few seconds) and writing continuously; and how soon a write is visible on
the reader in each case.

The reader reaches the S3-compatible server (moto) through a small counting
proxy started here, so every request it makes is seen and classified, and
the writer's are not. Everything listens on 127.0.0.1; every process
started here is stopped when the script exits.

    cargo build --release -p strata-server
    bench/readers/cost.py [--strata target/release/strata] [--output FILE]
"""

import argparse
import collections
import http.client
import http.server
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import (BUCKET, ROOT, Cluster, free_port, log, pct, request,  # noqa: E402
                   spawn, wait_http, write)

# S3 Standard request prices (us-east-1), dollars per 1,000 requests.
PRICE = {"GET": 0.0004, "HEAD": 0.0004, "LIST": 0.005, "PUT": 0.005, "DELETE": 0.0}
MONTH_S = 30 * 86_400


class CountingProxy:
    """Forwards HTTP requests to moto and counts them by (method, kind,
    status)."""

    def __init__(self, upstream_port):
        self.counts = collections.Counter()
        self.lock = threading.Lock()
        proxy = self
        local = threading.local()

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def forward(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else None
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in ("connection", "keep-alive")}
                for attempt in (0, 1):
                    conn = getattr(local, "conn", None)
                    if conn is None:
                        conn = local.conn = http.client.HTTPConnection(
                            "127.0.0.1", upstream_port, timeout=60)
                    try:
                        conn.request(self.command, self.path, body=body, headers=headers)
                        r = conn.getresponse()
                        data = r.read()
                        break
                    except (OSError, http.client.HTTPException):
                        conn.close()
                        local.conn = None
                        if attempt:
                            raise
                proxy.count(self.command, self.path, r.status)
                self.send_response(r.status)
                for k, v in r.getheaders():
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                # A HEAD answer's length is the object's, not the (empty) body's.
                length = r.getheader("Content-Length") if self.command == "HEAD" else None
                self.send_header("Content-Length", length or str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = forward

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def count(self, method, path, status):
        url = urllib.parse.urlsplit(path)
        query = urllib.parse.parse_qs(url.query)
        if method == "GET" and "list-type" in query:
            method, key = "LIST", query.get("prefix", [""])[0]
        else:
            key = url.path.split("/", 2)[2] if url.path.count("/") >= 2 else url.path
        parts = key.split("/")
        kind = parts[1] if len(parts) > 1 else key
        if kind == "gc":
            kind = "gc boundary"
        with self.lock:
            self.counts[(method, kind, status)] += 1

    def take(self):
        with self.lock:
            counts, self.counts = self.counts, collections.Counter()
        return counts


def phase_summary(name, counts, seconds, lags):
    rows = collections.defaultdict(lambda: [0, 0])
    for (method, kind, status), n in counts.items():
        rows[(method, kind)][0] += n
        if status == 404:
            rows[(method, kind)][1] += n
    total = sum(n for n, _ in rows.values())
    dollars = sum(n * PRICE.get(m, 0.0005) / 1000 for (m, _), (n, _) in rows.items())
    out = {
        "phase": name, "seconds": seconds,
        "requests_per_s": total / seconds,
        "dollars_per_month": dollars / seconds * MONTH_S,
        "by_kind": [{"method": m, "kind": k, "per_s": n / seconds, "not_found": nf / seconds}
                    for (m, k), (n, nf) in sorted(rows.items(), key=lambda r: -r[1][0])],
    }
    if lags:
        out["freshness_ms"] = {"n": len(lags), "p50": pct(lags, 0.5), "p99": pct(lags, 0.99),
                               "max": max(lags)}
    return out


def visible_lags(writer_port, reader_port, interval, seconds, tag, load=None):
    """Writes one new series every `interval` s for `seconds`; returns how
    long after each write's 204 the reader first answered with it (ms).
    `load`, if given, is called in a thread until the end (more writes)."""
    seen, acked, done = {}, {}, threading.Event()
    path = "/api/v1/query?" + urllib.parse.urlencode({"query": f"bench_fresh_{tag}"})

    def poll():
        while not done.is_set():
            try:
                status, body = request(reader_port, "GET", path)
                at = time.perf_counter()
                if status == 200:
                    for s in json.loads(body)["data"]["result"]:
                        seen.setdefault(int(s["metric"]["seq"]), at)
            except OSError:
                pass
            time.sleep(0.005)

    threads = [threading.Thread(target=poll)]
    if load:
        threads.append(threading.Thread(target=load, args=(done,)))
    for t in threads:
        t.start()
    end = time.time() + seconds
    seq = 0
    while time.time() < end:
        write(writer_port, [({"__name__": f"bench_fresh_{tag}", "seq": str(seq)},
                             [(int(time.time() * 1000), float(seq))])])
        acked[seq] = time.perf_counter()
        seq += 1
        time.sleep(interval)
    deadline = time.time() + 10
    while len(seen) < len(acked) and time.time() < deadline:
        time.sleep(0.05)
    done.set()
    for t in threads:
        t.join()
    missing = len(acked) - len(seen)
    if missing:
        log(f"  {missing} of {len(acked)} writes not seen on the reader within 10 s")
    return [max(0.0, seen[s] - acked[s]) * 1000 for s in seen]


def continuous_load(writer_port, series):
    """Writes `series` samples every 100 ms (one request) until stopped."""
    def run(done):
        while not done.is_set():
            now = int(time.time() * 1000)
            write(writer_port, [({"__name__": "bench_cost_load", "i": str(i)}, [(now, float(i))])
                                for i in range(series)])
            time.sleep(0.1)
    return run


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--strata", default=os.path.join(ROOT, "target/release/strata"))
    ap.add_argument("--seconds", type=float, default=60, help="per phase")
    ap.add_argument("--scrape-interval", type=float, default=5,
                    help="seconds between writes in the scrape-like phase")
    ap.add_argument("--load-series", type=int, default=1000,
                    help="samples per 100 ms write in the continuous phase")
    ap.add_argument("--output", default=None)
    a = ap.parse_args()
    if not shutil.which("moto_server"):
        sys.exit("moto_server not found: pip install 'moto[server]'")
    workdir = tempfile.mkdtemp(prefix="strata-reader-cost-")
    c = Cluster(a.strata, workdir)
    c.start_writer()
    proxy = CountingProxy(c.moto_port)
    env = dict(c.env)
    env["STRATA_OBJECT_STORE_S3_ENDPOINT"] = f"http://127.0.0.1:{proxy.port}"
    reader_port = free_port()
    reader = spawn([a.strata, "serve", "--role", "reader", "--listen",
                    f"127.0.0.1:{reader_port}", "--object-store", f"s3://{BUCKET}/db"],
                   os.path.join(workdir, "reader.log"), env)
    wait_http(reader_port, "/-/ready", reader, "reader")
    write(c.writer_port, [({"__name__": "bench_cost_start"}, [(int(time.time() * 1000), 1.0)])])
    time.sleep(10)

    phases = []
    log(f"idle writer, {a.seconds:.0f} s")
    proxy.take()
    time.sleep(a.seconds)
    phases.append(phase_summary("idle writer", proxy.take(), a.seconds, None))

    log(f"one write every {a.scrape_interval:g} s, {a.seconds:.0f} s")
    t0 = time.time()
    lags = visible_lags(c.writer_port, reader_port, a.scrape_interval, a.seconds, "scrape")
    phases.append(phase_summary(f"a write every {a.scrape_interval:g} s", proxy.take(),
                                time.time() - t0, lags))

    log(f"{a.load_series} samples every 100 ms, {a.seconds:.0f} s")
    t0 = time.time()
    lags = visible_lags(c.writer_port, reader_port, 0.2, a.seconds, "load",
                        continuous_load(c.writer_port, a.load_series))
    phases.append(phase_summary(f"{a.load_series * 10} samples/s", proxy.take(),
                                time.time() - t0, lags))

    result = {"strata": a.strata, "store": "moto (local S3-compatible server)",
              "prices_per_1000": PRICE, "phases": phases}
    if a.output:
        with open(a.output, "w") as f:
            json.dump(result, f, indent=2)
    print_markdown(result)
    shutil.rmtree(workdir, True)


def print_markdown(r):
    print("| writer | reader requests/s | $/month at S3 prices | freshness p50 / p99 ms |")
    print("| --- | ---: | ---: | ---: |")
    for p in r["phases"]:
        f = p.get("freshness_ms")
        fresh = f"{f['p50']:.0f} / {f['p99']:.0f}" if f else "-"
        print(f"| {p['phase']} | {p['requests_per_s']:.1f} | {p['dollars_per_month']:.2f} "
              f"| {fresh} |")
    for p in r["phases"]:
        print(f"\n{p['phase']}: " + ", ".join(
            f"{k['method']} {k['kind']} {k['per_s']:.2f}/s ({k['not_found']:.2f} 404)"
            for k in p["by_kind"]))


if __name__ == "__main__":
    main()
