#!/usr/bin/env python3
"""Ingest through the distributor: a writer alone, the distributor in front
of 1 writer shard, and in front of 2, at a few offered rates; and the
distributor's own cost in latency and CPU per million samples.

Load comes from bench/loadgen (open loop: latency is measured from each
batch's scheduled send time). Each setup starts on a fresh local folder
(file://); all processes and the load generator share this machine's
cores, so the 2-shard figures show the routing working, not more cores.
CPU is read from /proc/<pid>/stat (user + system) around each run.
Prints a Markdown table and writes JSON to --output.

    cargo build --release -p strata-server -p strata-loadgen
    bench/shards/bench.py [--rates 50000,100000,200000] [--duration 20s]
"""

import argparse
import atexit
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TICK = os.sysconf("SC_CLK_TCK")
_children = []


def _cleanup():
    for p in _children:
        if p.poll() is None:
            try:
                p.kill()
            except OSError:
                pass


atexit.register(_cleanup)
signal.signal(signal.SIGINT, lambda s, f: sys.exit(130))
signal.signal(signal.SIGTERM, lambda s, f: sys.exit(143))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # utime and stime are fields 14 and 15 of the whole line.
    return (int(fields[11]) + int(fields[12])) / TICK


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def wait_ready(port, proc, what):
    deadline = time.time() + 60
    while time.time() < deadline:
        if proc.poll() is not None:
            sys.exit(f"{what} exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/-/ready", timeout=1) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.1)
    sys.exit(f"{what} not ready after 60 s")


def start(strata, env, log, what):
    port = free_port()
    full = dict(os.environ, STRATA_SERVER_LISTEN=f"127.0.0.1:{port}",
                STRATA_SERVER_LOG_LEVEL="warn", **env)
    full.pop("RUST_LOG", None)
    proc = subprocess.Popen([strata, "serve"], env=full, stdout=log, stderr=log)
    _children.append(proc)
    wait_ready(port, proc, what)
    return port, proc


def stop(proc):
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def setup(strata, kind, root, log):
    """Starts a setup; answers (write URL, {name: process})."""
    data = os.path.join(root, "data")
    if kind == "writer":
        port, p = start(strata, {"STRATA_SERVER_ROLE": "writer",
                                 "STRATA_OBJECT_STORE_URL": data}, log, "writer")
        return f"http://127.0.0.1:{port}/api/v1/write", {"writer 0": p}
    shards = 1 if kind == "distributor + 1 shard" else 2
    procs, urls = {}, []
    for i in range(shards):
        port, p = start(strata, {"STRATA_SERVER_ROLE": "writer",
                                 "STRATA_OBJECT_STORE_URL": data,
                                 "STRATA_SHARDS_COUNT": str(shards),
                                 "STRATA_SHARDS_ID": str(i)}, log, f"writer {i}")
        procs[f"writer {i}"] = p
        urls.append(f"http://127.0.0.1:{port}")
    port, p = start(strata, {"STRATA_SERVER_ROLE": "distributor",
                             "STRATA_SHARDS_WRITERS": ",".join(urls)}, log, "distributor")
    procs["distributor"] = p
    return f"http://127.0.0.1:{port}/api/v1/write", procs


def run_load(loadgen, url, rate, duration, targets, out):
    cmd = [loadgen, "--url", url, "--rate", str(rate), "--duration", duration,
           "--targets", str(targets), "--senders", "8", "--output", out,
           "--progress-interval", "1h"]
    subprocess.run(cmd, check=True, stderr=subprocess.DEVNULL)
    with open(out) as f:
        return json.load(f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--strata", default=os.path.join(ROOT, "target/release/strata"))
    ap.add_argument("--loadgen", default=os.path.join(ROOT, "target/release/strata-loadgen"))
    ap.add_argument("--rates", default="50000,100000,200000")
    ap.add_argument("--duration", default="20s")
    ap.add_argument("--targets", type=int, default=50, help="1,000 series each")
    ap.add_argument("--output", default=None)
    args = ap.parse_args()
    rates = [int(r) for r in args.rates.split(",")]
    results = []
    kinds = ["writer", "distributor + 1 shard", "distributor + 2 shards"]
    for kind in kinds:
        with tempfile.TemporaryDirectory(prefix="strata-shards-bench-") as root:
            with open(os.path.join(root, "strata.log"), "w") as log:
                url, procs = setup(args.strata, kind, root, log)
                for rate in rates:
                    before = {n: cpu_seconds(p.pid) for n, p in procs.items()}
                    s = run_load(args.loadgen, url, rate, args.duration, args.targets,
                                 os.path.join(root, f"load-{rate}.json"))
                    cpu = {n: cpu_seconds(p.pid) - before[n] for n, p in procs.items()}
                    accepted = max(s["samples_accepted"], 1)
                    per_m = {n: round(c / accepted * 1e6, 3) for n, c in cpu.items()}
                    rss = {n: rss_bytes(p.pid) for n, p in procs.items()}
                    row = {"setup": kind, "rate_offered": rate,
                           "accepted_per_s": round(s["accepted_per_s"]),
                           "clean": s["dropped_samples"] == 0 and s["failed_batches"] == 0
                           and s["unfinished_samples"] == 0,
                           "p50_ms": s["latency"]["p50_ms"], "p99_ms": s["latency"]["p99_ms"],
                           "cpu_s_per_million": per_m, "rss_bytes": rss,
                           "statuses": s["statuses"]}
                    results.append(row)
                    print(json.dumps(row), file=sys.stderr)
                for p in procs.values():
                    stop(p)
    print("| setup | offered/s | accepted/s | p50 ms | p99 ms | CPU s per 10^6 samples |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in results:
        cpu = ", ".join(f"{n} {v}" for n, v in r["cpu_s_per_million"].items())
        flag = "" if r["clean"] else " (not all accepted)"
        print(f"| {r['setup']} | {r['rate_offered']} | {r['accepted_per_s']}{flag} | "
              f"{r['p50_ms']:.1f} | {r['p99_ms']:.1f} | {cpu} |")
    if args.output:
        with open(args.output, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
