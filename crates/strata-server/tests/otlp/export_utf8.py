"""Exports metrics whose names and attributes hold dots and other
characters outside Prometheus' classic names with the OpenTelemetry Python
SDK to two OTLP/HTTP receivers at once (Strata and Prometheus 3), the same
data to each: a counter, an up-down counter, a gauge and an
explicit-bucket histogram, in two rounds flushed to both after each.

Usage: export_utf8.py STRATA_URL PROMETHEUS_URL
"""

import sys
import time

from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource

PATH = "/api/v1/otlp/v1/metrics"
NEVER = 3_600_000  # ms: the readers export only when flushed.


def main():
    strata, prometheus = sys.argv[1], sys.argv[2]
    readers = [
        PeriodicExportingMetricReader(
            OTLPMetricExporter(endpoint=url + PATH), export_interval_millis=NEVER
        )
        for url in (strata, prometheus)
    ]
    resource = Resource.create(
        {
            "service.name": "utf8",
            "service.namespace": "shop",
            "service.instance.id": "pod-1",
            "k8s.pod.name": "utf8-pod-1",
            "région": "eu",
        }
    )
    provider = MeterProvider(resource=resource, metric_readers=readers)
    meter = provider.get_meter("shop.utf8", "1.0.0")
    round_no = [0]

    jobs = meter.create_counter("jobs.done", unit="{job}", description="Jobs done.")
    queue = meter.create_up_down_counter("queue.depth", unit="{item}")
    duration = meter.create_histogram(
        "http.server.request.duration", unit="s", description="Request latency."
    )

    def utilization(_options: CallbackOptions):
        return [Observation(0.25 * round_no[0], {"cpu.id": "0", "état": "busy"})]

    meter.create_observable_gauge(
        "system.cpu.utilization", callbacks=[utilization], unit="1"
    )

    for r in (1, 2):
        round_no[0] = r
        jobs.add(3 * r, {"job.kind": "batch", "温度": "高"})
        jobs.add(r, {"job.kind": "stream", "温度": "低"})
        queue.add(5 if r % 2 else -2, {"queue.name": "orders"})
        for i in range(4):
            duration.record(0.05 * i + r, {"http.request.method": "GET"})
        duration.record(0.3, {"http.request.method": "POST"})
        if not provider.force_flush(timeout_millis=10_000):
            sys.exit("flush failed")
        time.sleep(0.5)
    provider.shutdown()


if __name__ == "__main__":
    main()
