"""Exports metrics with the OpenTelemetry Python SDK to two OTLP/HTTP
receivers at once (Strata and Prometheus 3), the same data to each.

- A meter provider with one periodic reader per receiver: counters, an
  up-down counter, an observable gauge and explicit-bucket histograms,
  recorded in rounds and flushed to both after each round. Strata's
  exporter gzips its bodies; Prometheus' does not.
- The same kind of data from a second provider (another
  service.instance.id), encoded by the SDK's own OTLP encoder and sent as
  OTLP/JSON (protobuf's JSON mapping) to both.
- Delta temporality, sent to Strata only: it must refuse it per metric,
  with a partial success naming the metrics.
- Exponential histograms, sent to both: native histograms.

Prints a JSON summary of the refusals on stdout for the test to check.

Usage: export.py STRATA_URL PROMETHEUS_URL
"""

import json
import sys
import time
import urllib.error
import urllib.request

from google.protobuf.json_format import MessageToJson
from opentelemetry.exporter.otlp.proto.common.metrics_encoder import encode_metrics
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceResponse,
)
from opentelemetry.sdk.metrics import (
    Counter,
    Histogram,
    MeterProvider,
    ObservableGauge,
    UpDownCounter,
)
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    InMemoryMetricReader,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.metrics.view import ExponentialBucketHistogramAggregation
from opentelemetry.sdk.resources import Resource

PATH = "/api/v1/otlp/v1/metrics"
NEVER = 3_600_000  # ms: the readers export only when flushed.


def resource(instance):
    return Resource.create(
        {
            "service.name": "checkout",
            "service.namespace": "shop",
            "service.instance.id": instance,
            "deployment.environment": "test",
            "k8s.pod.name": f"checkout-{instance}",
            "host.cpu.count": 8,
        }
    )


def instruments(meter, round_of):
    requests = meter.create_counter(
        "http.server.requests", unit="{request}", description="Requests served."
    )
    sent = meter.create_counter("net.bytes_sent", unit="By", description="Bytes sent.")
    queue = meter.create_up_down_counter(
        "queue.items", unit="{item}", description="Items queued."
    )
    duration = meter.create_histogram(
        "http.server.duration", unit="ms", description="Request latency."
    )
    size = meter.create_histogram("rpc.payload.size", unit="By")

    def utilization(_options: CallbackOptions):
        r = round_of()
        return [
            Observation(0.25 * r, {"cpu": "0"}),
            Observation(0.5 + 0.1 * r, {"cpu": "1"}),
        ]

    meter.create_observable_gauge(
        "system.cpu.utilization", callbacks=[utilization], unit="1",
        description="CPU busy fraction.",
    )

    def record(r):
        for method, status, n in (("GET", "200", 5), ("POST", "500", 2), ("GET", "404", 1)):
            requests.add(n * r, {"http.request.method": method, "http.response.status_code": status})
            for i in range(n):
                duration.record(3.0 * i + r, {"http.request.method": method})
        sent.add(1500 * r, {"net.peer.name": "db"})
        queue.add(7 if r % 2 else -3, {"queue": "orders"})
        size.record(100 * r, {"rpc.method": "Pay"})
        size.record(2_000_000, {"rpc.method": "Pay"})

    return record


def main():
    strata, prometheus = sys.argv[1], sys.argv[2]

    # The same data to both receivers, flushed after each round.
    round_no = [0]
    readers = [
        PeriodicExportingMetricReader(
            OTLPMetricExporter(endpoint=strata + PATH, compression=Compression.Gzip),
            export_interval_millis=NEVER,
        ),
        PeriodicExportingMetricReader(
            OTLPMetricExporter(endpoint=prometheus + PATH),
            export_interval_millis=NEVER,
        ),
    ]
    provider = MeterProvider(resource=resource("pod-1"), metric_readers=readers)
    record = instruments(provider.get_meter("shop.checkout", "1.4.0"), lambda: round_no[0])
    for r in (1, 2, 3):
        round_no[0] = r
        record(r)
        if not provider.force_flush(timeout_millis=10_000):
            sys.exit("flush failed")
        time.sleep(1.0)

    # OTLP/JSON from another instance, encoded by the SDK's encoder.
    json_reader = InMemoryMetricReader()
    json_provider = MeterProvider(resource=resource("pod-json"), metric_readers=[json_reader])
    json_round = [4]
    record = instruments(json_provider.get_meter("shop.checkout", "1.4.0"), lambda: json_round[0])
    record(4)
    body = MessageToJson(encode_metrics(json_reader.get_metrics_data())).encode()
    for url in (strata, prometheus):
        post(url + PATH, body, "application/json")

    # What Strata must refuse, per metric, beside a metric it takes; and
    # exponential histograms, which both take.
    delta_reader = InMemoryMetricReader(
        preferred_temporality={
            Counter: AggregationTemporality.DELTA,
            UpDownCounter: AggregationTemporality.CUMULATIVE,
            Histogram: AggregationTemporality.DELTA,
            ObservableGauge: AggregationTemporality.CUMULATIVE,
        }
    )
    expo_reader = InMemoryMetricReader(
        preferred_aggregation={Histogram: ExponentialBucketHistogramAggregation()}
    )
    summary = {}
    for name, reader in (("delta", delta_reader), ("exponential", expo_reader)):
        p = MeterProvider(resource=resource(f"pod-{name}"), metric_readers=[reader])
        instruments(p.get_meter("shop.checkout", "1.4.0"), lambda: 1)(1)
        body = encode_metrics(reader.get_metrics_data()).SerializeToString()
        if name == "exponential":
            # Native histograms: both take them.
            post(prometheus + PATH, body, "application/x-protobuf")
        status, answer = post(strata + PATH, body, "application/x-protobuf")
        resp = ExportMetricsServiceResponse()
        resp.ParseFromString(answer)
        summary[name] = {
            "status": status,
            "rejected": resp.partial_success.rejected_data_points,
            "message": resp.partial_success.error_message,
        }
    provider.shutdown()
    print(json.dumps(summary))


def post(url, body, content_type):
    req = urllib.request.Request(url, data=body, headers={"Content-Type": content_type})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        sys.exit(f"{url} answered {e.code}: {e.read()!r}")


if __name__ == "__main__":
    main()
