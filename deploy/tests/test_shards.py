"""Offline checks of the sharded layout (deploy/kubernetes-shards): its
manifests against the Kubernetes schemas, that the writer replicas, the
readers' and rulers' --shards and the distributor's --writers agree, and
that rulers write through the distributors."""

import pathlib
import shutil
import subprocess

import pytest
import yaml

from test_manifests import VERSIONS, check_ruler, container, flag, validate

SHARDS = pathlib.Path(__file__).resolve().parent.parent / "kubernetes-shards"


def built():
    if shutil.which("kubectl"):
        cmd = ["kubectl", "kustomize", str(SHARDS)]
    elif shutil.which("kustomize"):
        cmd = ["kustomize", "build", str(SHARDS)]
    else:
        pytest.skip("neither kubectl nor kustomize is installed")
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def find(docs, kind, name):
    found = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(found) == 1, f"expected one {kind}/{name}, found {len(found)}"
    return found[0]


@pytest.mark.parametrize("version", VERSIONS)
def test_distributor_manifest_matches_kubernetes_schema(version):
    docs = [d for d in yaml.safe_load_all((SHARDS / "distributor.yaml").read_text()) if d]
    assert {d["kind"] for d in docs} >= {"Deployment", "Service", "HorizontalPodAutoscaler"}
    for doc in docs:
        validate(doc, version)


def test_built_layout_matches_schema_and_namespace():
    for doc in built():
        validate(doc, "1.30")
        if doc["kind"] != "Namespace":
            assert doc["metadata"]["namespace"] == "strata"


def test_shard_count_agrees_everywhere():
    docs = built()
    writer = find(docs, "StatefulSet", "strata-writer")
    n = writer["spec"]["replicas"]
    assert n >= 2
    w = container(writer)
    assert flag(w, "--role") == "writer"
    assert flag(w, "--shards") == str(n)
    # The shard id comes from the pod's ordinal.
    assert "--shard-id-from-hostname" in w["args"]
    assert "--shard-id" not in w["args"]
    headless = writer["spec"]["serviceName"]
    assert find(docs, "Service", headless)["spec"]["clusterIP"] == "None"

    reader = container(find(docs, "Deployment", "strata-reader"))
    assert flag(reader, "--role") == "reader"
    assert flag(reader, "--shards") == str(n)

    dist = find(docs, "Deployment", "strata-distributor")
    d = container(dist)
    assert flag(d, "--role") == "distributor"
    writers = flag(d, "--writers").split(",")
    assert writers == [f"http://strata-writer-{i}.{headless}:9470" for i in range(n)]
    assert d["readinessProbe"]["httpGet"]["path"] == "/-/ready"
    assert d["livenessProbe"]["httpGet"]["path"] == "/-/healthy"
    assert dist["spec"]["template"]["metadata"]["annotations"]["prometheus.io/scrape"] == "true"


def test_distributor_scales_with_an_hpa_behind_a_service():
    docs = built()
    hpa = find(docs, "HorizontalPodAutoscaler", "strata-distributor")
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "strata-distributor",
    }
    assert hpa["spec"]["minReplicas"] >= 2
    dist = find(docs, "Deployment", "strata-distributor")
    svc = find(docs, "Service", "strata-distributor")
    labels = dist["spec"]["template"]["metadata"]["labels"]
    assert all(labels.get(k) == v for k, v in svc["spec"]["selector"].items())


def test_rulers_read_every_shard_and_write_through_the_distributors():
    docs = built()
    n = find(docs, "StatefulSet", "strata-writer")["spec"]["replicas"]
    ruler = check_ruler(docs, "distributor")
    assert flag(container(ruler), "--shards") == str(n)
