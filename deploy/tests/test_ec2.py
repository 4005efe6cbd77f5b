"""Checks of deploy/ec2: the systemd units (with `systemd-analyze verify`
where systemd is installed) and the example configuration."""

import configparser
import os
import pathlib
import shutil
import subprocess

import pytest

from strata_config import REPO, check_against_defaults, check_env

EC2 = REPO / "deploy" / "ec2"
UNITS = sorted(EC2.glob("*.service"))
BINARY = "/usr/local/bin/strata"


def unit(path):
    # systemd allows repeated keys (SystemCallFilter=); keep the last.
    p = configparser.ConfigParser(strict=False, interpolation=None, delimiters=("=",))
    p.optionxform = str
    p.read_string(path.read_text())
    return p


def test_every_role_has_its_unit():
    assert [u.name for u in UNITS] == [
        "strata-reader.service",
        "strata-ruler.service",
        "strata-writer.service",
    ]


@pytest.mark.parametrize("path", UNITS, ids=lambda p: p.name)
def test_unit_runs_as_strata_stops_gracefully_and_restarts_on_failure(path):
    s = unit(path)["Service"]
    assert s["User"] == "strata"
    assert s["Restart"] == "on-failure"
    assert s["TimeoutStopSec"] == "60"
    assert s["KillSignal"] == "SIGTERM"
    assert s["NoNewPrivileges"] == "yes"
    assert s["ProtectSystem"] == "strict"
    role = path.name.removeprefix("strata-").removesuffix(".service")
    assert s["ExecStart"].startswith(f"{BINARY} serve --config /etc/strata/strata.toml --role {role}")


@pytest.mark.parametrize("name", ["strata-reader.service", "strata-ruler.service"])
def test_reading_units_own_their_cache_directory(name):
    s = unit(EC2 / name)["Service"]
    assert "--cache-dir /var/cache/strata" in s["ExecStart"]
    assert s["CacheDirectory"] == "strata"
    assert "/var/cache/strata" in s["ReadWritePaths"]


def test_units_pass_systemd_analyze_verify(tmp_path):
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed")
    # verify insists that ExecStart's binary exists: stand one in.
    stub = tmp_path / "strata"
    stub.write_text("#!/bin/sh\n")
    stub.chmod(0o755)
    copies = []
    for path in UNITS:
        copy = tmp_path / path.name
        copy.write_text(path.read_text().replace(BINARY, str(stub)))
        copies.append(str(copy))
    r = subprocess.run(
        ["systemd-analyze", "verify", *copies],
        capture_output=True,
        text=True,
        env={**os.environ, "SYSTEMD_LOG_COLOR": "0"},
    )
    # verify exits 0 on unknown keys and bad values, and only warns: any
    # line about our units is a failure.
    about_ours = [line for line in (r.stdout + r.stderr).splitlines() if str(tmp_path) in line]
    assert r.returncode == 0 and not about_ours, r.stdout + r.stderr


def test_example_config_uses_known_keys_and_no_static_credentials():
    text = (EC2 / "strata.toml").read_text()
    assert check_against_defaults(text, "deploy/ec2/strata.toml") == []
    import tomllib

    cfg = tomllib.loads(text)
    assert cfg["object_store"]["url"].startswith("s3://")
    s3 = cfg["object_store"].get("s3", {})
    assert "access_key_id" not in s3 and "secret_access_key" not in s3


def environment(s):
    """The unit's Environment= assignments (the last such line): name -> value."""
    return dict(pair.split("=", 1) for pair in s.get("Environment", "").split())


@pytest.mark.parametrize("path", UNITS, ids=lambda p: p.name)
def test_unit_environment_names_settings(path):
    s = unit(path)["Service"]
    assert s["EnvironmentFile"] == "-/etc/default/strata"
    for name, value in environment(s).items():
        assert check_env(name, value, path.name) == []


def test_only_the_ruler_unit_gets_rule_files():
    import tomllib

    # A writer given rule files evaluates them too: it and the rulers would
    # both write the recorded series and ALERTS.
    assert "rule_files" not in tomllib.loads((EC2 / "strata.toml").read_text()).get("rules", {})
    for path in UNITS:
        env = environment(unit(path)["Service"])
        if path.name == "strata-ruler.service":
            patterns = env["STRATA_RULES_RULE_FILES"].split(",")
            assert patterns and all(p.startswith("/etc/strata/rules/") for p in patterns)
        else:
            assert "STRATA_RULES_RULE_FILES" not in env, path.name


def test_ruler_unit_reloads_rules_and_writes_to_an_http_url():
    import tomllib

    s = unit(EC2 / "strata-ruler.service")["Service"]
    assert s["ExecReload"] == "/bin/kill -HUP $MAINPID"
    cfg = tomllib.loads((EC2 / "strata.toml").read_text())
    assert cfg["ruler"]["write_url"].startswith(("http://", "https://"))
    # advertise_url differs per instance: /etc/default/strata, not here.
    assert "advertise_url" not in cfg["ruler"]


def test_commented_alerting_example_uses_known_keys():
    text = (EC2 / "strata.toml").read_text()
    lines = text[text.index("# [alerting]") :].splitlines()
    block = "\n".join(line.removeprefix("# ") for line in lines if line.startswith("# "))
    import tomllib

    cfg = tomllib.loads(block)
    assert cfg["alerting"]["alertmanagers"][0]["urls"]
    assert check_against_defaults(block, "deploy/ec2/strata.toml [alerting] example") == []
