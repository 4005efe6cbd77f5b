"""Shared by bench/compare and bench/soak: start a system under test on a
fresh data folder, measure its process, drive strata-loadgen against it, and
stop everything on exit."""

import atexit
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
SYSTEMS = ("strata", "victoriametrics", "prometheus")
CLK_TCK = os.sysconf("SC_CLK_TCK")

_children = []


def _cleanup():
    for p in _children:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                pass


def _on_signal(signum, _frame):
    _cleanup()
    sys.exit(128 + signum)


atexit.register(_cleanup)
signal.signal(signal.SIGINT, _on_signal)
signal.signal(signal.SIGTERM, _on_signal)


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def spawn(cmd, logfile, env=None):
    """Starts `cmd` in its own process group, killed when this script exits."""
    out = open(logfile, "ab")
    p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL, start_new_session=True, env=env)
    _children.append(p)
    return p


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url, timeout=5.0):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, r.read()


def du(path):
    """Bytes allocated on disk under `path` (what `du -s` counts)."""
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(dirpath, f)).st_blocks * 512
            except OSError:
                pass
    return total


def _stat_cpu(path):
    """Name and CPU seconds (user + system) from a /proc stat file."""
    with open(path) as f:
        stat = f.read()
    name = stat[stat.index("(") + 1:stat.rindex(")")]
    fields = stat.rsplit(")", 1)[1].split()
    # utime and stime are fields 14 and 15; fields[0] here is field 3.
    return name, (int(fields[11]) + int(fields[12])) / CLK_TCK


def cpu_seconds(pid):
    try:
        return _stat_cpu(f"/proc/{pid}/stat")[1]
    except (OSError, IndexError, ValueError):
        return 0.0


def thread_cpu_seconds(pid):
    """CPU seconds (user + system) of the live threads of `pid`, summed per
    thread name (worker pools share one name)."""
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            name, secs = _stat_cpu(f"/proc/{pid}/task/{tid}/stat")
        except (OSError, IndexError, ValueError):
            continue
        out[name] = out.get(name, 0.0) + secs
    return out


def machine_idle_seconds():
    """Idle CPU seconds of the whole machine since boot, and the number of
    CPUs: the first line of /proc/stat."""
    with open("/proc/stat") as f:
        fields = f.readline().split()[1:]
    idle = (int(fields[3]) + int(fields[4])) / CLK_TCK  # idle + iowait
    return idle, os.cpu_count() or 1


def parse_metrics(text):
    """Samples of a Prometheus text exposition: {(name, labels): value},
    labels as the text between the braces ("" without)."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        head, _, value = line.rpartition(" ")
        name, _, labels = head.partition("{")
        try:
            out[(name, labels.rstrip("}"))] = float(value)
        except ValueError:
            continue
    return out


def metric_sum(m, name, *having):
    """The sum of `name`'s samples whose labels contain every `having`."""
    return sum(v for (n, labels), v in m.items()
               if n == name and all(h in labels for h in having))


def histogram_quantile(before, after, name, q, having=""):
    """The q-quantile of a cumulative histogram's observations between two
    scrapes, interpolated linearly inside the bucket as Prometheus'
    histogram_quantile does; None without observations. Buckets of all
    series whose labels contain `having` are added up."""
    bounds = {}
    for (n, labels), v in after.items():
        if n != name + "_bucket" or having not in labels:
            continue
        le = labels.rsplit('le="', 1)[1].rstrip('"')
        was = before.get((n, labels), 0.0)
        bounds[float(le)] = bounds.get(float(le), 0.0) + v - was
    if not bounds:
        return None
    les = sorted(bounds)
    total = bounds[les[-1]]
    if total <= 0:
        return None
    rank = q * total
    prev_le, prev_c = 0.0, 0.0
    for le in les:
        c = bounds[le]
        if c >= rank:
            if le == float("inf"):
                return prev_le
            return prev_le + (le - prev_le) * (rank - prev_c) / max(c - prev_c, 1e-12)
        prev_le, prev_c = le, c
    return les[-1]


def status_kb(pid, key):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


class RssSampler:
    """Samples a process' VmRSS twice a second; `take_peak()` returns the
    highest value since the previous call."""

    def __init__(self, pid):
        self.pid = pid
        self.peak = 0
        self.last = 0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.wait(0.5):
            kb = status_kb(self.pid, "VmRSS")
            with self._lock:
                self.last = kb
                self.peak = max(self.peak, kb)

    def take_peak(self):
        with self._lock:
            p = max(self.peak, status_kb(self.pid, "VmRSS"))
            self.peak = 0
            return p

    def stop(self):
        self._stop.set()


class System:
    """One system under test: its process, data folder and endpoints."""

    name = ""

    def __init__(self, workdir):
        self.data = os.path.join(workdir, f"{self.name}-data")
        self.logfile = os.path.join(workdir, f"{self.name}.log")
        shutil.rmtree(self.data, ignore_errors=True)
        os.makedirs(self.data)
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.proc = None

    def command(self):
        raise NotImplementedError

    ready_path = "/-/ready"
    write_path = "/api/v1/write"

    @property
    def write_url(self):
        return self.base + self.write_path

    @property
    def pid(self):
        return self.proc.pid

    def start(self, timeout=120):
        self.proc = spawn(self.command(), self.logfile, self.env())
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited ({self.proc.returncode}); see {self.logfile}")
            try:
                if http_get(self.base + self.ready_path, 1.0)[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"{self.name} not ready after {timeout}s; see {self.logfile}")

    def env(self):
        return None

    def flush(self):
        """Makes what was accepted visible on disk, where the system allows."""

    def stop(self, timeout=90):
        """SIGTERM, wait for a clean exit (flushes), SIGKILL if it hangs."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            log(f"  {self.name} did not stop in {timeout}s; killing it")
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def metrics(self):
        """The system's own metrics, parsed (`parse_metrics`), where it has
        them in a form the benchmarks read."""
        return None

    def object_store_requests(self, m=None):
        return None


class Strata(System):
    name = "strata"

    def __init__(self, workdir, binary):
        super().__init__(workdir)
        self.binary = binary

    def command(self):
        return [self.binary, "serve", "--listen", f"127.0.0.1:{self.port}",
                "--object-store", self.data]

    def env(self):
        e = dict(os.environ)
        e.setdefault("RUST_LOG", "warn")
        return e

    def metrics(self):
        try:
            _, body = http_get(self.base + "/metrics")
        except OSError:
            return None
        return parse_metrics(body.decode())

    def object_store_requests(self, m=None):
        m = m or self.metrics()
        v = m.get(("strata_object_store_requests_total", "")) if m else None
        return None if v is None else int(v)


class StrataVariant(Strata):
    """Another Strata build or setting beside the first, for A/B runs:
    `strata-b` (or `strata-c`) runs STRATA_B_BIN (STRATA_C_BIN), with
    STRATA_B_ENV's (STRATA_C_ENV's) `KEY=VALUE` pairs (space-separated)
    added to its environment only."""

    def __init__(self, workdir, letter):
        self.name = f"strata-{letter}"
        self.letter = letter
        super().__init__(workdir, strata_variant_bin(letter))

    def env(self):
        e = dict(os.environ)
        e.update(strata_variant_env(self.letter))
        e.setdefault("RUST_LOG", "warn")
        return e


STRATA_VARIANTS = ("b", "c")


def strata_variant_bin(letter):
    """The binary of `strata-<letter>`: STRATA_<LETTER>_BIN, required."""
    var = f"STRATA_{letter.upper()}_BIN"
    b = os.environ.get(var, "")
    if not b:
        raise SystemExit(f"strata-{letter} needs {var}: the path of its strata binary")
    if not (os.path.isfile(b) and os.access(b, os.X_OK)):
        raise SystemExit(f"{var}={b}: not an executable file")
    return b


def strata_variant_env(letter):
    """STRATA_<LETTER>_ENV's space-separated `KEY=VALUE` pairs, as a dict."""
    var = f"STRATA_{letter.upper()}_ENV"
    out = {}
    for pair in os.environ.get(var, "").split():
        key, eq, value = pair.partition("=")
        if not key or not eq:
            raise SystemExit(f"{var}: {pair!r} is not KEY=VALUE")
        out[key] = value
    return out


class VictoriaMetrics(System):
    name = "victoriametrics"
    ready_path = "/health"

    def command(self):
        return [vm_bin(), f"-httpListenAddr=127.0.0.1:{self.port}",
                f"-storageDataPath={self.data}", "-retentionPeriod=30d",
                "-loggerLevel=WARN"]

    def flush(self):
        try:
            http_get(self.base + "/internal/force_flush", 60)
        except OSError as e:
            log(f"  force_flush failed: {e}")


class Prometheus(System):
    name = "prometheus"

    def command(self):
        config = os.path.join(os.path.dirname(self.data), "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1m\nscrape_configs: []\n")
        return [prom_bin(), f"--config.file={config}",
                f"--storage.tsdb.path={self.data}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--web.enable-remote-write-receiver",
                "--storage.tsdb.retention.time=30d", "--log.level=warn"]


def vm_bin():
    """VictoriaMetrics' single-node binary: VM_BIN, else Debian's on PATH."""
    return os.environ.get("VM_BIN", "victoria-metrics")


def prom_bin():
    """Prometheus' binary: PROM_BIN, else Debian's on PATH."""
    return os.environ.get("PROM_BIN", "prometheus")


def make_system(name, workdir, strata_bin):
    if name == "strata":
        return Strata(workdir, strata_bin)
    if name.startswith("strata-") and name[len("strata-"):] in STRATA_VARIANTS:
        return StrataVariant(workdir, name[len("strata-"):])
    if name == "victoriametrics":
        return VictoriaMetrics(workdir)
    if name == "prometheus":
        return Prometheus(workdir)
    raise ValueError(name)


def require(systems):
    """Stops at once, naming what to install, if a system's program is
    missing: a ramp must not find out after the systems before it ran.
    (Strata's own binaries are checked by `binaries`; its variants' here.)"""
    for letter in STRATA_VARIANTS:
        if f"strata-{letter}" in systems:
            strata_variant_bin(letter)
            strata_variant_env(letter)
    programs = {"victoriametrics": vm_bin(), "prometheus": prom_bin()}
    missing = [programs[s] for s in systems if s in programs and not shutil.which(programs[s])]
    if missing:
        raise SystemExit(f"not installed: {', '.join(missing)} (Debian packages "
                         "victoria-metrics and prometheus: apt-get install -y victoria-metrics prometheus; "
                         "or set VM_BIN / PROM_BIN to current builds)")


def binaries(build):
    """Paths of the strata and strata-loadgen release binaries (STRATA_BIN and
    LOADGEN_BIN override them), building them first if asked or missing."""
    strata = os.environ.get("STRATA_BIN", os.path.join(ROOT, "target/release/strata"))
    loadgen = os.environ.get("LOADGEN_BIN", os.path.join(ROOT, "target/release/strata-loadgen"))
    if build or not (os.path.exists(strata) and os.path.exists(loadgen)):
        log("building release binaries (cargo build --release -p strata-server -p strata-loadgen)...")
        subprocess.run(["cargo", "build", "--release", "-p", "strata-server", "-p", "strata-loadgen"],
                       cwd=ROOT, check=True)
    for b in (strata, loadgen):
        if not os.path.exists(b):
            raise SystemExit(f"missing binary {b}")
    return strata, loadgen


def run_load(loadgen, url, rate, duration_s, scrape_interval, extra=(), progress_every="5s",
             on_progress=None, summary_path=None):
    """Runs strata-loadgen to its end; returns its summary (dict). Progress
    lines (dicts) go to `on_progress`."""
    cmd = [loadgen, "--url", url, "--rate", str(rate), "--duration", f"{duration_s}s",
           "--scrape-interval", scrape_interval, "--progress-interval", progress_every,
           "--progress-json", "--output", summary_path, *extra]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, start_new_session=True, text=True)
    _children.append(p)
    for line in p.stderr:
        line = line.strip()
        try:
            prog = json.loads(line)
        except ValueError:
            log(f"    loadgen: {line}")
            continue
        if on_progress:
            on_progress(prog)
    if p.wait() != 0:
        raise RuntimeError(f"strata-loadgen failed ({p.returncode})")
    with open(summary_path) as f:
        return json.load(f)
