"""docs/configuration.md documents exactly the keys of config/strata.toml,
each with its environment variable and, where the file sets it, its
default as the file writes it."""

import re

import pytest

from strata_config import REPO, documented_keys, env_var, live_keys, toml_literal

DOC = REPO / "docs" / "configuration.md"
# | `section.key` | type | `default` | `STRATA_...` | meaning |
ROW = re.compile(r"^\|\s*`([a-z0-9_]+(?:\.[a-z0-9_]+)+)`\s*\|(.*)$")


def rows():
    out = {}
    for line in DOC.read_text().splitlines():
        m = ROW.match(line)
        if not m:
            continue
        key = m.group(1)
        assert key not in out, f"docs/configuration.md lists {key} twice"
        out[key] = [c.strip() for c in m.group(2).rstrip().rstrip("|").split("|")]
    return out


def test_doc_lists_exactly_the_keys_of_the_default_config():
    doc, config = set(rows()), set(documented_keys())
    assert not config - doc, f"keys missing from docs/configuration.md: {sorted(config - doc)}"
    assert not doc - config, f"keys not in config/strata.toml: {sorted(doc - config)}"


@pytest.mark.parametrize("key", sorted(documented_keys()))
def test_row_names_the_env_var_and_default(key):
    cells = rows().get(key)
    assert cells is not None, f"docs/configuration.md does not list {key}"
    assert len(cells) == 4, f"{key}: expected type, default, env var, meaning: {cells}"
    type_, default, env, meaning = cells
    assert type_ and meaning, key
    assert env == f"`{env_var(key)}`", f"{key}: env var cell {env!r}"
    live = live_keys()
    if key in live:
        assert default == f"`{toml_literal(live[key])}`", f"{key}: default cell {default!r}"
    else:
        assert default == "unset", f"{key} is commented out in config/strata.toml: {default!r}"
