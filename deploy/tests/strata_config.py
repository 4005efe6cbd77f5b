"""The keys of config/strata.toml, for the deployment and documentation tests.

A key counts when the file sets it, or when the file shows it commented out
in its section as `# key = value` (the optional [object_store.s3] keys).
"""

import pathlib
import re
import tomllib

REPO = pathlib.Path(__file__).resolve().parents[2]
CONFIG = REPO / "config" / "strata.toml"

_SECTION = re.compile(r"^\[([a-z0-9_.]+)\]\s*$")
_COMMENTED_KEY = re.compile(r"^#\s*([a-z][a-z0-9_]*\s*=.*)$")


def flatten(table, prefix=""):
    """Dotted key -> value for every non-table value of a parsed TOML table."""
    out = {}
    for key, value in table.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten(value, name + "."))
        else:
            out[name] = value
    return out


def documented_keys(path=CONFIG):
    """Dotted key -> example value for every key the file sets or shows."""
    text = path.read_text()
    keys = flatten(tomllib.loads(text))
    section = ""
    for line in text.splitlines():
        line = line.strip()
        m = _SECTION.match(line)
        if m:
            section = m.group(1)
            continue
        m = _COMMENTED_KEY.match(line)
        if not m:
            continue
        try:
            parsed = tomllib.loads(m.group(1))
        except tomllib.TOMLDecodeError:
            continue  # prose that happens to contain '='
        for key, value in parsed.items():
            if not isinstance(value, dict):
                keys.setdefault(f"{section}.{key}", value)
    return keys


def live_keys(path=CONFIG):
    """Dotted key -> default value for the keys the file actually sets."""
    return flatten(tomllib.loads(path.read_text()))


def env_var(dotted):
    """The STRATA_<SECTION>_<KEY> variable that overrides a key."""
    return "STRATA_" + dotted.replace(".", "_").upper()


def toml_literal(value):
    """A value as TOML writes it: "text", 123, true."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return str(value)


def check_against_defaults(toml_text, where):
    """Problems with a TOML file meant for `strata serve --config`: keys the
    default file does not know, and values of another type than its own."""
    known = documented_keys()
    problems = []
    for key, value in flatten(tomllib.loads(toml_text)).items():
        if key not in known:
            problems.append(f"{where}: {key} is not a key of config/strata.toml")
        elif type(value) is not type(known[key]):
            problems.append(
                f"{where}: {key} = {value!r} is a {type(value).__name__}, "
                f"config/strata.toml has a {type(known[key]).__name__}"
            )
    return problems


def env_value(raw):
    """What the server makes of an environment variable's value: a TOML
    value when the text is one (not a table), else the text as a string."""
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw
    return raw if isinstance(value, dict) else value


def check_env(name, raw, where):
    """Problems with a STRATA_* environment variable: one that names no key
    of config/strata.toml, or whose value the key's type does not take (a
    list also takes one comma-separated string)."""
    known = documented_keys()
    by_env = {env_var(key): key for key in known}
    key = by_env.get(name)
    if key is None:
        return [f"{where}: {name} names no key of config/strata.toml"]
    value, default = env_value(raw), known[key]
    if isinstance(default, list) and isinstance(value, str):
        return []
    if type(value) is not type(default):
        return [
            f"{where}: {name}={raw!r} is a {type(value).__name__}, "
            f"{key} in config/strata.toml is a {type(default).__name__}"
        ]
    return []
