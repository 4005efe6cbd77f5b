"""Checks of deploy/ec2: the systemd units (with `systemd-analyze verify`
where systemd is installed) and the example configuration."""

import configparser
import os
import pathlib
import shutil
import subprocess

import pytest

from strata_config import REPO, check_against_defaults

EC2 = REPO / "deploy" / "ec2"
UNITS = sorted(EC2.glob("*.service"))
BINARY = "/usr/local/bin/strata"


def unit(path):
    # systemd allows repeated keys (SystemCallFilter=); keep the last.
    p = configparser.ConfigParser(strict=False, interpolation=None, delimiters=("=",))
    p.optionxform = str
    p.read_string(path.read_text())
    return p


def test_both_units_exist():
    assert [u.name for u in UNITS] == ["strata-reader.service", "strata-writer.service"]


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


def test_reader_unit_owns_its_cache_directory():
    s = unit(EC2 / "strata-reader.service")["Service"]
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
