#!/usr/bin/env python3
"""Reader nodes on S3: query throughput at p99 <= 100 ms with 1 and 2
readers, cold and warm latency, bytes fetched from the object store per
query, and freshness (write on the writer -> visible on a reader).

The object store is moto (`pip install 'moto[server]'`), a local
S3-compatible server: its latencies are a local Python server's, not AWS's.
Everything listens on 127.0.0.1; every process started here is stopped when
the script exits. Prints a Markdown table and writes JSON to --output.

    cargo build --release -p strata-server
    bench/readers/bench.py [--strata target/release/strata] [--output FILE]
"""

import argparse
import atexit
import http.client
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUCKET = "strata-bench"
URL = f"s3://{BUCKET}/db"
HOUR = 3_600_000
_children = []


def _cleanup():
    for p in _children:
        if p.poll() is None:
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
    out = open(logfile, "ab")
    p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                         start_new_session=True, env=env)
    _children.append(p)
    return p


def request(port, method, path, body=b"", headers=None, timeout=30):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def wait_http(port, path, proc, what, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            sys.exit(f"{what} exited with {proc.returncode}")
        try:
            if request(port, "GET", path, timeout=2)[0] == 200:
                return
        except OSError:
            pass
        time.sleep(0.05)
    sys.exit(f"{what} not ready within {timeout} s")


# ------------------------------------------------------------ remote write

def _varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _field(num, wire, payload):
    key = _varint((num << 3) | wire)
    if wire == 2:
        return key + _varint(len(payload)) + payload
    return key + payload


def write_request(series):
    """A remote-write 1.0 WriteRequest: series = [(labels dict, [(t, v)])]."""
    body = bytearray()
    for labels, samples in series:
        ts = bytearray()
        for name in sorted(labels):
            lab = _field(1, 2, name.encode()) + _field(2, 2, labels[name].encode())
            ts += _field(1, 2, lab)
        for t, v in samples:
            s = _field(1, 1, struct.pack("<d", v)) + _field(2, 0, _varint(t))
            ts += _field(2, 2, s)
        body += _field(1, 2, bytes(ts))
    return snappy_literal(bytes(body))


def snappy_literal(data):
    """Snappy block format with literals only: valid, just not smaller."""
    out = bytearray(_varint(len(data)))
    for i in range(0, len(data), 60000):
        chunk = data[i:i + 60000]
        n = len(chunk) - 1
        if n < 60:
            out.append(n << 2)
        elif n < 256:
            out += bytes([60 << 2, n])
        else:
            out += bytes([61 << 2]) + struct.pack("<H", n)
        out += chunk
    return bytes(out)


WRITE_HEADERS = {
    "Content-Type": "application/x-protobuf",
    "Content-Encoding": "snappy",
    "X-Prometheus-Remote-Write-Version": "0.1.0",
}


def write(port, series, durable=False):
    h = dict(WRITE_HEADERS)
    if durable:
        h["X-Strata-Durability"] = "durable"
    status, body = request(port, "POST", "/api/v1/write", write_request(series), h)
    if status != 204:
        sys.exit(f"write answered {status}: {body[:300]!r}")


# ------------------------------------------------------------ cluster

class Cluster:
    def __init__(self, strata, workdir):
        self.strata = strata
        self.workdir = workdir
        self.moto_port = free_port()
        self.moto = spawn(["moto_server", "-H", "127.0.0.1", "-p", str(self.moto_port)],
                          os.path.join(workdir, "moto.log"))
        deadline = time.time() + 30
        while True:
            try:
                request(self.moto_port, "GET", "/", timeout=2)
                break
            except OSError:
                if time.time() > deadline:
                    sys.exit("moto_server did not start")
                time.sleep(0.1)
        status, body = request(self.moto_port, "PUT", f"/{BUCKET}")
        if status != 200:
            sys.exit(f"cannot create the bucket: {status} {body[:200]!r}")
        self.env = dict(os.environ)
        self.env.update({
            "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
            "AWS_REGION": "us-east-1",
            "STRATA_OBJECT_STORE_S3_ENDPOINT": f"http://127.0.0.1:{self.moto_port}",
            "STRATA_OBJECT_STORE_S3_ALLOW_HTTP": "true",
            "STRATA_SERVER_LOG_LEVEL": "warn",
            "STRATA_STORAGE_SEAL_CHECK_INTERVAL": "1s",
            "STRATA_STORAGE_SEAL_SPREAD": "0s",
        })
        self.env.pop("RUST_LOG", None)
        self.writer_port = free_port()
        self.writer = None

    def start(self, role, port, cache_dir=None, name="strata"):
        cmd = [self.strata, "serve", "--role", role, "--listen", f"127.0.0.1:{port}",
               "--object-store", URL]
        if cache_dir:
            cmd += ["--cache-dir", cache_dir]
        p = spawn(cmd, os.path.join(self.workdir, f"{name}.log"), self.env)
        wait_http(port, "/-/ready", p, name)
        return p

    def start_writer(self):
        self.writer = self.start("writer", self.writer_port, name="writer")

    def stop(self, p):
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=60)


def metric(port, name):
    status, body = request(port, "GET", "/metrics")
    total = 0.0
    for line in body.decode().splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            total += float(line.rsplit(" ", 1)[1])
    return total


def query_path(q):
    kind, expr, args = q
    params = {"query": expr}
    params.update(args)
    return f"/api/v1/{kind}?" + urllib.parse.urlencode(params)


def run_query(port, path):
    t0 = time.perf_counter()
    status, body = request(port, "GET", path)
    dt = time.perf_counter() - t0
    if status != 200:
        raise RuntimeError(f"{path} answered {status}: {body[:200]!r}")
    if not json.loads(body)["data"]["result"]:
        raise RuntimeError(f"{path}: empty result")
    return dt


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round((len(xs) - 1) * p))]


def closed_loop(ports, paths, clients, seconds):
    """`clients` threads, each sending the query mix in turn to the readers
    in turn, as fast as answers come back. Returns (queries/s, p99 s)."""
    lat, lock, stop = [], threading.Lock(), time.time() + seconds
    errors = []

    def client(i):
        k = i
        mine = []
        while time.time() < stop:
            try:
                mine.append(run_query(ports[k % len(ports)], paths[k % len(paths)]))
            except Exception as e:  # noqa: BLE001 - counted and reported
                errors.append(str(e))
            k += 1
        with lock:
            lat.extend(mine)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    t0 = time.time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        log(f"  {len(errors)} errors, first: {errors[0]}")
    return len(lat) / (time.time() - t0), pct(lat, 0.99), pct(lat, 0.5)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--strata", default=os.path.join(ROOT, "target/release/strata"))
    ap.add_argument("--series", type=int, default=500, help="historical series")
    ap.add_argument("--seconds", type=float, default=8, help="per closed-loop step")
    ap.add_argument("--output", default=None)
    a = ap.parse_args()
    if not shutil.which("moto_server"):
        sys.exit("moto_server not found: pip install 'moto[server]'")
    workdir = tempfile.mkdtemp(prefix="strata-readers-bench-")
    atexit.register(shutil.rmtree, workdir, True)
    c = Cluster(a.strata, workdir)
    c.start_writer()

    # Two sealed hours of history at 15 s, then live series in the head.
    now = int(time.time() * 1000)
    h0 = (now // HOUR - 3) * HOUR
    h1 = h0 + 2 * HOUR - 15_000
    log(f"writing {a.series} series x 2 h of history")
    # One request per bucket, oldest first: the sealer may seal a bucket as
    # soon as it has samples, and then refuses later ones in it.
    for b0 in (h0, h0 + HOUR):
        batch = []
        for i in range(a.series):
            labels = {"__name__": "bench_hist", "job": ["api", "db", "web", "cache"][i % 4],
                      "instance": f"i{i}"}
            batch.append((labels, [(t, float((t - h0) // 15_000 * (i % 7 + 1)))
                                   for t in range(b0, min(b0 + HOUR, h1 + 1), 15_000)]))
        write(c.writer_port, batch)
    for i in range(50):
        write(c.writer_port, [({"__name__": "bench_live", "i": str(i)}, [(now, float(i))])])
    deadline = time.time() + 60
    while metric(c.writer_port, "strata_buckets_sealed_total") < 2:
        if time.time() > deadline:
            sys.exit("the writer did not seal the history")
        time.sleep(0.5)
    # A restart flushes the writer's memtable into an SST: from here on,
    # readers read sealed data through their block caches.
    c.stop(c.writer)
    c.start_writer()
    now = int(time.time() * 1000)
    mix = [
        ("query", "sum by (job) (rate(bench_hist[5m]))", {"time": h1 / 1000}),
        ("query", 'bench_hist{instance="i7"}[30m]', {"time": h1 / 1000}),
        ("query_range", "sum by (job) (bench_hist)",
         {"start": h0 / 1000, "end": h1 / 1000, "step": "60"}),
        ("query_range", 'rate(bench_hist{job="api"}[5m])',
         {"start": (h1 - HOUR) / 1000, "end": h1 / 1000, "step": "60"}),
        ("query", "count(bench_live)", {"time": now / 1000 + 60}),
        ("query", "bench_live", {"time": now / 1000 + 60}),
    ]
    paths = [query_path(q) for q in mix]
    names = [q[1] for q in mix]

    # Cold: a new reader with an empty cache folder, each query once.
    ports = [free_port(), free_port()]
    caches = [os.path.join(workdir, "cache0"), os.path.join(workdir, "cache1")]
    r0 = c.start("reader", ports[0], caches[0], "reader0")
    open_bytes = {"cold": metric(ports[0], "strata_object_store_read_bytes_total")}
    cold = []
    for name, path in zip(names, paths):
        b0 = metric(ports[0], "strata_object_store_read_bytes_total")
        dt = run_query(ports[0], path)
        b1 = metric(ports[0], "strata_object_store_read_bytes_total")
        cold.append({"query": name, "ms": dt * 1000, "bytes": b1 - b0})
    # Warm: the same queries, 20 times each.
    b0 = metric(ports[0], "strata_object_store_read_bytes_total")
    warm = []
    for name, path in zip(names, paths):
        lat = [run_query(ports[0], path) for _ in range(20)]
        warm.append({"query": name, "p50_ms": pct(lat, 0.5) * 1000})
    warm_bytes = (metric(ports[0], "strata_object_store_read_bytes_total") - b0) / (20 * len(paths))
    # Restarted on its cache folder: cold memory, warm disk.
    c.stop(r0)
    r0 = c.start("reader", ports[0], caches[0], "reader0")
    b0 = metric(ports[0], "strata_object_store_read_bytes_total")
    open_bytes["restarted"] = b0
    restarted = []
    for name, path in zip(names, paths):
        restarted.append({"query": name, "ms": run_query(ports[0], path) * 1000})
    restarted_bytes = (metric(ports[0], "strata_object_store_read_bytes_total") - b0) / len(paths)

    # Throughput: closed loop, 1 then 2 readers.
    steps = [1, 2, 4, 8, 16]
    throughput = {}
    for n in (1, 2):
        if n == 2:
            c.start("reader", ports[1], caches[1], "reader1")
            for p in paths:
                run_query(ports[1], p)
        rows = []
        for clients in steps:
            b0 = sum(metric(p, "strata_object_store_read_bytes_total") for p in ports[:n])
            qps, p99, p50 = closed_loop(ports[:n], paths, clients, a.seconds)
            b1 = sum(metric(p, "strata_object_store_read_bytes_total") for p in ports[:n])
            rows.append({"clients": clients, "qps": qps, "p50_ms": p50 * 1000,
                         "p99_ms": p99 * 1000,
                         "bytes_per_query": (b1 - b0) / max(1, qps * a.seconds)})
            log(f"  {n} reader(s), {clients} clients: {qps:.0f} q/s, p50 {p50*1000:.1f} ms, "
                f"p99 {p99*1000:.1f} ms")
        throughput[n] = rows

    # Freshness: 50 Applied writes at 5/s, each a new series; every reader
    # is polled for it.
    seen = [dict(), dict()]
    acked = {}
    done = threading.Event()

    def poll(i):
        path = "/api/v1/query?" + urllib.parse.urlencode({"query": "bench_fresh"})
        while not done.is_set():
            try:
                status, body = request(ports[i], "GET", path)
                at = time.perf_counter()
                if status == 200:
                    for s in json.loads(body)["data"]["result"]:
                        seen[i].setdefault(int(s["metric"]["seq"]), at)
            except OSError:
                pass
            time.sleep(0.005)

    pollers = [threading.Thread(target=poll, args=(i,)) for i in (0, 1)]
    for t in pollers:
        t.start()
    for seq in range(50):
        write(c.writer_port, [({"__name__": "bench_fresh", "seq": str(seq)},
                               [(int(time.time() * 1000), float(seq))])])
        acked[seq] = time.perf_counter()
        time.sleep(0.2)
    deadline = time.time() + 10
    while any(len(s) < 50 for s in seen) and time.time() < deadline:
        time.sleep(0.05)
    done.set()
    for t in pollers:
        t.join()
    lags = [max(0.0, at - acked[seq]) * 1000 for s in seen for seq, at in s.items()]
    missing = 100 - len(lags)

    result = {
        "store": "moto (local S3-compatible server)",
        "series": a.series, "cold": cold, "warm": warm, "warm_bytes_per_query": warm_bytes,
        "restarted": restarted, "restarted_bytes_per_query": restarted_bytes,
        "open_bytes": open_bytes,
        "throughput": throughput,
        "freshness_ms": {"p50": pct(lags, 0.5), "p99": pct(lags, 0.99), "max": max(lags),
                         "missing": missing},
    }
    if a.output:
        with open(a.output, "w") as f:
            json.dump(result, f, indent=2)
    print_markdown(result)


def print_markdown(r):
    print("| query | cold ms | cold bytes fetched | warm p50 ms | after restart ms |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for c, w, s in zip(r["cold"], r["warm"], r["restarted"]):
        print(f"| `{c['query']}` | {c['ms']:.1f} | {c['bytes']:.0f} | {w['p50_ms']:.1f} "
              f"| {s['ms']:.1f} |")
    print(f"\nbytes fetched per query: warm {r['warm_bytes_per_query']:.0f}, "
          f"after restart {r['restarted_bytes_per_query']:.0f}; read while opening: "
          f"cold {r['open_bytes']['cold']:.0f}, restarted {r['open_bytes']['restarted']:.0f}\n")
    print("| readers | clients | queries/s | p50 ms | p99 ms | bytes fetched/query |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    for n, rows in r["throughput"].items():
        for row in rows:
            print(f"| {n} | {row['clients']} | {row['qps']:.0f} | {row['p50_ms']:.1f} "
                  f"| {row['p99_ms']:.1f} | {row['bytes_per_query']:.0f} |")
    for n, rows in r["throughput"].items():
        ok = [row["qps"] for row in rows if row["p99_ms"] <= 100]
        print(f"\n{n} reader(s): {max(ok) if ok else 0:.0f} queries/s at p99 <= 100 ms")
    f = r["freshness_ms"]
    print(f"\nfreshness: p50 {f['p50']:.0f} ms, p99 {f['p99']:.0f} ms, max {f['max']:.0f} ms"
          f" ({f['missing']} not seen)")


if __name__ == "__main__":
    main()
