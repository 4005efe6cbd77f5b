"""Offline checks of deploy/kubernetes: every manifest against the Kubernetes
schemas (kubernetes-validate, strict: unknown fields fail), the ConfigMap's
TOML against config/strata.toml, and the invariants the writer depends on."""

import fnmatch
import json
import pathlib
import re
import shutil
import subprocess
import tomllib

import pytest
import yaml

try:
    import kubernetes_validate
except ImportError as e:  # a missing validator must fail the run, not skip it
    raise ImportError(
        "kubernetes-validate is required: pip install -r deploy/tests/requirements.txt"
    ) from e

from strata_config import REPO, check_against_defaults, check_env, env_value

K8S = REPO / "deploy" / "kubernetes"
# The oldest Kubernetes minor these manifests support, and the newest
# schema the installed validator bundles.
VERSIONS = ["1.30", kubernetes_validate.utils.latest_version()]
MANIFESTS = sorted(p for p in K8S.glob("*.yaml") if p.name != "kustomization.yaml")


def load_all(path):
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def resources():
    return [d for p in MANIFESTS for d in load_all(p)]


def find(kind, name):
    found = [d for d in resources() if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(found) == 1, f"expected one {kind}/{name}, found {len(found)}"
    return found[0]


def validate(doc, version):
    kubernetes_validate.validate(doc, version, strict=True)


def test_there_are_manifests():
    assert len(MANIFESTS) >= 5, MANIFESTS


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
def test_manifest_matches_kubernetes_schema(path, version):
    docs = load_all(path)
    assert docs, f"{path.name} holds no resource"
    for doc in docs:
        validate(doc, version)


def test_strict_validation_rejects_unknown_fields():
    doc = find("StatefulSet", "strata-writer")
    bad = yaml.safe_load(yaml.safe_dump(doc))
    bad["spec"]["template"]["spec"]["containers"][0]["livenessprobe"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        validate(bad, "1.30")


def test_kustomization_names_existing_files_and_mentions_every_manifest():
    text = (K8S / "kustomization.yaml").read_text()
    kust = yaml.safe_load(text)
    listed = kust["resources"]
    for name in listed:
        assert (K8S / name).is_file(), f"kustomization.yaml lists missing {name}"
    for path in MANIFESTS:
        # A manifest left out on purpose is named in a comment there.
        assert path.name in listed or re.search(rf"#.*\b{re.escape(path.name)}\b", text), (
            f"{path.name} is neither a resource of kustomization.yaml nor mentioned in it"
        )


def test_kustomize_output_matches_schema():
    if shutil.which("kubectl"):
        cmd = ["kubectl", "kustomize", str(K8S)]
    elif shutil.which("kustomize"):
        cmd = ["kustomize", "build", str(K8S)]
    else:
        pytest.skip("neither kubectl nor kustomize is installed")
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    docs = [d for d in yaml.safe_load_all(out) if d]
    assert docs
    for doc in docs:
        validate(doc, "1.30")
        if doc["kind"] != "Namespace":
            assert doc["metadata"]["namespace"] == "strata"


def configmap_toml():
    return find("ConfigMap", "strata-config")["data"]["strata.toml"]


def test_configmap_uses_only_keys_of_the_default_config():
    assert check_against_defaults(configmap_toml(), "configmap.yaml") == []


def test_configmap_points_at_s3_and_listens_on_all_interfaces():
    cfg = tomllib.loads(configmap_toml())
    assert cfg["object_store"]["url"].startswith("s3://")
    assert cfg["server"]["listen"].startswith("0.0.0.0:")
    # Keys belong in a Secret or an IAM role, never in the ConfigMap.
    assert "access_key_id" not in cfg["object_store"].get("s3", {})
    assert "secret_access_key" not in cfg["object_store"].get("s3", {})


def seconds(text):
    m = re.fullmatch(r"(\d+)(s|m)", text)
    assert m, f"unexpected duration {text!r}"
    return int(m.group(1)) * (60 if m.group(2) == "m" else 1)


def container(workload):
    (c,) = workload["spec"]["template"]["spec"]["containers"]
    return c


def flag(c, name):
    args = c["args"]
    assert name in args, f"{name} missing from {args}"
    return args[args.index(name) + 1]


def test_writer_is_a_single_statefulset_replica_that_stops_before_its_successor():
    sts = find("StatefulSet", "strata-writer")
    spec = sts["spec"]
    assert spec["replicas"] == 1
    assert spec["podManagementPolicy"] == "OrderedReady"
    assert spec["updateStrategy"]["type"] == "RollingUpdate"
    assert "maxUnavailable" not in spec["updateStrategy"].get("rollingUpdate", {})
    pod = spec["template"]["spec"]
    shutdown = seconds(tomllib.loads(configmap_toml())["server"]["shutdown_timeout"])
    assert pod["terminationGracePeriodSeconds"] >= 2 * shutdown
    c = container(sts)
    assert flag(c, "--role") == "writer"
    assert find("Service", spec["serviceName"])["spec"]["clusterIP"] == "None"


def test_no_other_workload_runs_a_writer():
    for doc in resources():
        if doc["kind"] in ("Deployment", "StatefulSet", "DaemonSet", "Job"):
            if doc["metadata"]["name"] != "strata-writer":
                assert flag(container(doc), "--role") != "writer"


def test_reader_caches_on_a_local_volume_and_scales_with_an_hpa():
    dep = find("Deployment", "strata-reader")
    c = container(dep)
    assert flag(c, "--role") == "reader"
    cache_dir = flag(c, "--cache-dir")
    assert cache_dir == "/var/cache/strata"
    mount = next(m for m in c["volumeMounts"] if m["mountPath"] == cache_dir)
    volume = next(v for v in dep["spec"]["template"]["spec"]["volumes"] if v["name"] == mount["name"])
    assert "emptyDir" in volume or "persistentVolumeClaim" in volume or "ephemeral" in volume
    hpa = find("HorizontalPodAutoscaler", "strata-reader")
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "strata-reader",
    }
    assert hpa["spec"]["minReplicas"] >= 2


def workloads(docs):
    return [d for d in docs if d["kind"] in ("Deployment", "StatefulSet", "DaemonSet", "Job")]


def env(c):
    """The container's environment: name -> value (or valueFrom), in order."""
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in c.get("env", [])}


# A commented-out example in a manifest: `# - name: STRATA_X` then
# `#   value: ...`, to be uncommented as it stands.
COMMENTED_ENV = re.compile(r"^\s*#\s*- name: (STRATA_\w+)\n\s*#\s*value: (.+)$", re.M)


def test_strata_environment_variables_are_settings_of_the_right_type():
    seen = 0
    for doc in workloads(resources()):
        for name, value in env(container(doc)).items():
            if name.startswith("STRATA_"):
                seen += 1
                assert isinstance(value, str), f"{name}: expected a value"
                assert check_env(name, value, doc["metadata"]["name"]) == []
    assert seen, "no STRATA_* variables: the ruler's settings are missing"
    for path in MANIFESTS:
        for name, raw in COMMENTED_ENV.findall(path.read_text()):
            value = yaml.safe_load(raw)
            assert check_env(name, value, f"{path.name} (commented out)") == []


def test_commented_alertmanagers_example_is_a_list_of_tables_with_urls():
    found = dict(COMMENTED_ENV.findall((K8S / "ruler.yaml").read_text()))
    groups = env_value(yaml.safe_load(found["STRATA_ALERTING_ALERTMANAGERS"]))
    assert isinstance(groups, list) and groups
    for group in groups:
        assert group["urls"] and all(re.match(r"(dns\+)?https?://", u) for u in group["urls"])


def service_port_target(docs, url, component):
    """Checks that `url` (http://<service>:<port>) is a Service of `docs`
    on that port whose pods are the `component`'s, listening on it."""
    m = re.fullmatch(r"http://([a-z0-9-]+)(?:\.strata(?:\.svc(?:\.cluster\.local)?)?)?:(\d+)/?", url)
    assert m, f"{url!r} is not http://<service>:<port> in the namespace"
    name, port = m.group(1), int(m.group(2))
    services = [d for d in docs if d["kind"] == "Service" and d["metadata"]["name"] == name]
    assert len(services) == 1, f"{url}: no Service {name}"
    svc = services[0]
    assert svc["spec"].get("clusterIP") != "None", f"{url}: {name} is headless"
    (sp,) = [p for p in svc["spec"]["ports"] if p["port"] == port]
    selector = svc["spec"]["selector"]
    assert selector.get("app.kubernetes.io/component") == component, f"{name} selects {selector}"
    targets = [
        w
        for w in workloads(docs)
        if all(w["spec"]["template"]["metadata"]["labels"].get(k) == v for k, v in selector.items())
    ]
    assert targets, f"{name} selects no pods"
    for w in targets:
        ports = {p["name"]: p["containerPort"] for p in container(w)["ports"]}
        assert sp["targetPort"] in ports or sp["targetPort"] in ports.values()
        assert flag(container(w), "--role") == component


def rule_file_keys(docs, ruler):
    """The ConfigMap keys the ruler's rules.rule_files patterns load:
    (configmap, key) pairs."""
    c = container(ruler)
    patterns = [p.strip() for p in env(c)["STRATA_RULES_RULE_FILES"].split(",") if p.strip()]
    assert patterns
    volumes = {v["name"]: v for v in ruler["spec"]["template"]["spec"]["volumes"]}
    loaded = []
    for pattern in patterns:
        folder, glob = pattern.rsplit("/", 1)
        mounts = [m for m in c["volumeMounts"] if m["mountPath"].rstrip("/") == folder]
        assert len(mounts) == 1, f"{pattern}: no volume mounted at {folder}"
        assert "subPath" not in mounts[0], "a subPath mount is not updated on edits"
        cm_name = volumes[mounts[0]["name"]]["configMap"]["name"]
        cms = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == cm_name]
        assert len(cms) == 1, f"{pattern}: no ConfigMap {cm_name}"
        keys = [k for k in cms[0]["data"] if fnmatch.fnmatchcase(k, glob)]
        assert keys, f"{pattern} matches no key of ConfigMap {cm_name}"
        loaded += [(cms[0], k) for k in keys]
    return loaded


def check_ruler(docs, write_to):
    """What a ruler needs in the layout `docs`: role, reader cache, a
    write_url that reaches `write_to`'s Service, an advertise_url of its
    own pod, rule files from a ConfigMap, a Service and budget."""
    ruler = next(d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == "strata-ruler")
    assert ruler["spec"]["replicas"] >= 2
    c = container(ruler)
    assert flag(c, "--role") == "ruler"
    cache_dir = flag(c, "--cache-dir")
    mount = next(m for m in c["volumeMounts"] if m["mountPath"] == cache_dir)
    volume = next(v for v in ruler["spec"]["template"]["spec"]["volumes"] if v["name"] == mount["name"])
    assert "emptyDir" in volume or "persistentVolumeClaim" in volume or "ephemeral" in volume
    variables = env(c)
    service_port_target(docs, variables["STRATA_RULER_WRITE_URL"], write_to)
    # advertise_url: this pod's own address on its HTTP port, from the
    # downward API, defined before the variable that refers to it.
    names = list(variables)
    assert variables["POD_IP"] == {"fieldRef": {"fieldPath": "status.podIP"}}
    assert names.index("POD_IP") < names.index("STRATA_RULER_ADVERTISE_URL")
    port = {p["name"]: p["containerPort"] for p in c["ports"]}["http"]
    assert variables["STRATA_RULER_ADVERTISE_URL"] == f"http://$(POD_IP):{port}"
    assert rule_file_keys(docs, ruler)
    service_port_target(docs, "http://strata-ruler:9470", "ruler")
    budgets = [d for d in docs if d["kind"] == "PodDisruptionBudget" and d["metadata"]["name"] == "strata-ruler"]
    assert len(budgets) == 1
    return ruler


def test_ruler_reads_like_a_reader_and_writes_to_the_writer_service():
    check_ruler(resources(), "writer")


def test_only_rulers_are_given_rule_files():
    # A writer given rule files evaluates them too: it and the rulers would
    # both write the recorded series and ALERTS.
    assert "rule_files" not in tomllib.loads(configmap_toml()).get("rules", {})
    for doc in workloads(resources()):
        c = container(doc)
        if flag(c, "--role") != "ruler":
            assert "STRATA_RULES_RULE_FILES" not in env(c), doc["metadata"]["name"]


def test_example_rule_files_are_prometheus_rule_files():
    docs = resources()
    ruler = find("Deployment", "strata-ruler")
    for cm, key in rule_file_keys(docs, ruler):
        parsed = yaml.safe_load(cm["data"][key])
        assert set(parsed) == {"groups"}, key
        names = [g["name"] for g in parsed["groups"]]
        assert len(names) == len(set(names)), f"{key}: duplicate group names"
        for group in parsed["groups"]:
            assert group["rules"], f"{key}: group {group['name']} has no rules"
            for rule in group["rules"]:
                assert ("record" in rule) != ("alert" in rule), rule
                assert rule["expr"].strip(), rule
                if "record" in rule:
                    assert re.fullmatch(r"[a-zA-Z_:][a-zA-Z0-9_:]*", rule["record"])
                    assert "for" not in rule and "annotations" not in rule


def strata_binary():
    import os

    for candidate in (
        os.environ.get("STRATA_BIN", ""),
        str(REPO / "target" / "debug" / "strata"),
        str(REPO / "target" / "release" / "strata"),
    ):
        if candidate and pathlib.Path(candidate).is_file():
            return candidate
    return None


def test_example_rule_files_pass_strata_rules_check(tmp_path):
    binary = strata_binary()
    if binary is None:
        pytest.skip("no strata binary (set STRATA_BIN, or cargo build -p strata-server)")
    files = []
    for cm, key in rule_file_keys(resources(), find("Deployment", "strata-ruler")):
        f = tmp_path / key
        f.write_text(cm["data"][key])
        files.append(str(f))
    r = subprocess.run([binary, "rules", "check", *files], capture_output=True, text=True)
    assert r.returncode == 0 and "SUCCESS" in r.stdout + r.stderr, r.stdout + r.stderr


@pytest.mark.parametrize(
    "kind,name",
    [("StatefulSet", "strata-writer"), ("Deployment", "strata-reader"), ("Deployment", "strata-ruler")],
)
def test_workload_probes_resources_scraping_and_config(kind, name):
    w = find(kind, name)
    pod = w["spec"]["template"]
    c = container(w)
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert ports == {"http": 9470}
    # Not /-/healthy: it turns 503 during a long store outage, when a
    # restart would lose a writer's unflushed writes.
    assert c["livenessProbe"]["tcpSocket"]["port"] == "http"
    assert c["readinessProbe"]["httpGet"]["path"] == "/-/ready"
    assert c["resources"]["requests"]["cpu"] and c["resources"]["requests"]["memory"]
    ann = pod["metadata"]["annotations"]
    assert ann["prometheus.io/scrape"] == "true"
    assert ann["prometheus.io/port"] == "9470"
    assert ann["prometheus.io/path"] == "/metrics"
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
    assert flag(c, "--config") == "/etc/strata/strata.toml"
    config_volume = next(v for v in pod["spec"]["volumes"] if "configMap" in v)
    assert config_volume["configMap"]["name"] == "strata-config"
    mount = next(m for m in c["volumeMounts"] if m["name"] == config_volume["name"])
    assert mount["mountPath"] == "/etc/strata"
    assert pod["spec"]["serviceAccountName"] == find("ServiceAccount", "strata")["metadata"]["name"]
    secret_refs = [e["secretRef"] for e in c.get("envFrom", []) if "secretRef" in e]
    assert secret_refs == [{"name": "strata-s3", "optional": True}]
    find("Secret", "strata-s3")


def test_services_and_budgets_select_pods_that_exist():
    pod_labels = [
        d["spec"]["template"]["metadata"]["labels"]
        for d in resources()
        if d["kind"] in ("Deployment", "StatefulSet")
    ]

    def selects(selector):
        return any(all(labels.get(k) == v for k, v in selector.items()) for labels in pod_labels)

    for doc in resources():
        if doc["kind"] == "Service":
            assert selects(doc["spec"]["selector"]), doc["metadata"]["name"]
            for port in doc["spec"]["ports"]:
                assert port["port"] == 9470 and port["targetPort"] == "http"
        if doc["kind"] == "PodDisruptionBudget":
            assert selects(doc["spec"]["selector"]["matchLabels"]), doc["metadata"]["name"]


def test_dockerfile_is_multi_stage_non_root_and_serves_9470():
    text = (REPO / "deploy" / "Dockerfile").read_text()
    stages = re.findall(r"^FROM\s+(\S+)", text, re.M)
    assert len(stages) >= 2 and stages[0].startswith("rust:")
    assert "cargo build --release --locked -p strata-server" in text
    user = re.findall(r"^USER\s+(\S+)", text, re.M)
    assert user and not user[-1].startswith(("root", "0:", "0")), user
    assert re.search(r"^EXPOSE\s+9470\b", text, re.M)
    assert re.search(r'^ENTRYPOINT \["strata", "serve"\]', text, re.M)
    for copied in re.findall(r"^COPY\s+(?!--)(.+)\s+\S+$", text, re.M):
        for src in copied.split():
            assert (REPO / src).exists(), f"Dockerfile copies missing {src}"


def _ignored(rel, patterns):
    """Whether `rel` (a path in the context) is left out by .dockerignore
    `patterns`: the last pattern matching it or one of its parent folders
    wins, `!` re-includes, a leading `**/` matches at any depth."""
    parts = rel.split("/")
    paths = ["/".join(parts[: i + 1]) for i in range(len(parts))]

    def matches(pat):
        if pat.startswith("**/"):
            tail = pat[3:]
            return any(
                fnmatch.fnmatchcase("/".join(p.split("/")[i:]), tail)
                for p in paths
                for i in range(p.count("/") + 1)
            )
        return any(fnmatch.fnmatchcase(p, pat) for p in paths)

    out = False
    for pattern in patterns:
        negate = pattern.startswith("!")
        if matches(pattern.lstrip("!").strip("/")):
            out = not negate
    return out


def test_dockerfile_build_context_resolves_the_workspace(tmp_path):
    """Assembles exactly what the build stage sees (its COPY lines, the
    context filtered by Dockerfile.dockerignore) and resolves the workspace
    in it offline, as `cargo build --locked` would first."""
    text = (REPO / "deploy" / "Dockerfile").read_text()
    build_stage = re.split(r"^FROM\s", text, flags=re.M)[1]
    patterns = [
        line.strip()
        for line in (REPO / "deploy" / "Dockerfile.dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    context = tmp_path / "context"
    copied = 0
    for line in re.findall(r"^COPY\s+(?!--)(.+)$", build_stage, re.M):
        *sources, dest = line.split()
        for src in sources:
            root = REPO / src
            assert root.exists(), f"Dockerfile copies missing {src}"
            files = [root] if root.is_file() else [p for p in root.rglob("*") if p.is_file()]
            for f in files:
                rel = f.relative_to(REPO).as_posix()
                if _ignored(rel, patterns):
                    continue
                if dest.endswith("/"):
                    target = context / dest / (f.name if root.is_file() else f.relative_to(root))
                else:
                    target = context / dest / f.relative_to(root) if root.is_dir() else context / dest
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(f, target)
                copied += 1
    assert copied > 0
    assert (context / "Cargo.toml").is_file() and (context / "Cargo.lock").is_file()
    host = re.search(
        r"^host: (\S+)$", subprocess.run(["rustc", "-vV"], capture_output=True, text=True).stdout, re.M
    ).group(1)
    out = subprocess.run(
        [
            "cargo", "metadata", "--offline", "--locked", "--format-version", "1",
            "--filter-platform", host,
        ],
        cwd=context,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, f"the image's build context does not resolve:\n{out.stderr}"
    members = json.loads(out.stdout)["workspace_members"]
    assert any("strata-server" in m for m in members), members


def test_dockerignore_matching():
    patterns = ["**/target", ".git", "bench/*", "!bench/loadgen", "docs"]
    assert _ignored("target/release/strata", patterns)
    assert _ignored("crates/strata-codec/target/x", patterns)
    assert _ignored("bench/compare", patterns)
    assert not _ignored("bench/loadgen/Cargo.toml", patterns)
    assert not _ignored("crates/strata-server/src/main.rs", patterns)
    assert _ignored("docs/benchmarks.md", patterns)
