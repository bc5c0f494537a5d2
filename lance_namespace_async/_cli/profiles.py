"""Connection profiles of the ``lance-ns`` command line, the way pyiceberg users know them.

A connection is an ``impl`` plus the string properties :func:`connect` takes. It comes
from three layers, later ones winning key by key (pyiceberg's ``.pyiceberg.yaml`` <
``PYICEBERG_CATALOG__<NAME>__<KEY>`` < explicit arguments)::

    profile in the config file  <  LANCE_NS_<PROFILE>__<KEY> variables  <  --impl / --prop

The config file is ``--config PATH``, else ``$LANCE_NS_CONFIG``, else
``$XDG_CONFIG_HOME/lance-ns/config.yaml`` (``~/.config/lance-ns/config.yaml``)::

    default-profile: prod
    profiles:
      prod:
        impl: rest
        uri: https://catalog.example.com
        header.x-tenant: sales
      local:
        impl: dir
        root: /data/lance

Every scalar is read as text, as pyiceberg's strictyaml does (``max_retries: 3`` is
``"3"``, ``0755`` stays ``"0755"``); lists, nested maps and duplicate keys are errors.
Profile names are case-insensitive; property keys are taken as written.

Environment variables: ``LANCE_NS_<PROFILE>__<KEY>``. The name is lower-cased, the
profile ends at the first ``__``, and in the key every further ``__`` is a ``.``
while a single ``_`` stays ``_``: ``LANCE_NS_PROD__AUTH_TOKEN`` is ``auth_token``,
``LANCE_NS_PROD__STORAGE__AWS_REGION`` is ``storage.aws_region``. (pyiceberg turns a
single ``_`` into ``-`` because its keys use dashes; Lance keys use underscores.) A
key segment may not start or end with ``_`` (``___`` would be ambiguous); keys with
other characters (``-``, capitals) belong in the file or ``--prop``.

Profile choice: ``--profile``, else ``$LANCE_NS_PROFILE``, else the file's
``default-profile``, else ``default``. ``--impl`` without ``--profile`` is a connection
from the command line alone (no file, no variables, ``$LANCE_NS_PROFILE`` ignored);
``--profile p --impl x`` takes profile ``p`` and overrides its impl.

Every problem is an ``InvalidInputError`` naming the file (or variable) and the key,
never a value.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from ..errors import REDACTED, InvalidInputError, MissingDependencyError, redact

__all__ = [
    "CONFIG_ENV",
    "ENV_PREFIX",
    "PROFILE_ENV",
    "ConfigFile",
    "Connection",
    "default_config_path",
    "environment_profiles",
    "is_secret_key",
    "load_config_file",
    "mask_secrets",
    "resolve_connection",
]

ENV_PREFIX = "LANCE_NS_"
CONFIG_ENV = "LANCE_NS_CONFIG"
PROFILE_ENV = "LANCE_NS_PROFILE"
DEFAULT_PROFILE = "default"
IMPL_KEY = "impl"

#: ``serve``: the options of ``lance-ns serve --config`` (``_cli.serve_config``)
_TOP_LEVEL_KEYS = ("profiles", "default-profile", "serve")
_PROFILE_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")
_ENV_SEGMENT = re.compile(r"^[a-z0-9](?:[a-z0-9_]*[a-z0-9])?$")

# Keys whose values are credentials. Broader than the backends' own secret flags on
# purpose: the CLI also prints namespace and table properties and storage options.
_SECRET_KEY = re.compile(
    r"(?i)(secret|token|passw|credential|authoriz|bearer|cookie|signature|"
    r"api[_-]?key|(?:^|[._-])key$)"
)

#: property families whose every value is masked when shown (the backends flag them secret)
SECRET_FAMILIES = ("storage.", "header.", "credential_vendor.")

#: where each property came from, for ``lance-ns config``
SOURCE_FILE = "file"
SOURCE_ENV = "env"
SOURCE_ARGS = "command line"


def is_secret_key(key: str) -> bool:
    """True when a property called ``key`` probably holds a credential."""
    return bool(_SECRET_KEY.search(key))


def mask_secrets(value: Any, extra_secret_keys: frozenset[str] = frozenset()) -> Any:
    """``value`` (JSON-like) with the values of secret-looking keys replaced, at any depth.

    Strings under other keys still go through :func:`errors.redact`, which hides
    ``user:password@`` in URLs and ``token=...`` pairs.
    """
    if isinstance(value, Mapping):
        return {
            k: (
                REDACTED
                if isinstance(k, str)
                and (k in extra_secret_keys or is_secret_key(k))
                and v not in (None, "")
                else mask_secrets(v, extra_secret_keys)
            )
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [mask_secrets(v, extra_secret_keys) for v in value]
    if isinstance(value, str):
        return redact(value)
    return value


# -- the config file ---------------------------------------------------------------------------


@attrs.frozen
class ConfigFile:
    """A parsed config file: the profiles by lower-cased name, checked when one is used.

    A broken profile does not stop the others from working; the file's own shape
    (valid YAML, known top-level keys, profile names) is checked on load.
    """

    path: Path
    raw_profiles: Mapping[str, Any] = attrs.field(repr=False)
    default_profile: str | None = None

    def profile_names(self) -> list[str]:
        return sorted(name.lower() for name in self.raw_profiles)

    def profile(self, name: str) -> dict[str, str] | None:
        """The string properties of profile ``name`` (lower-case), None when absent."""
        for written, body in self.raw_profiles.items():
            if written.lower() == name:
                return _profile_properties(self.path, written, body)
        return None


def _profile_properties(path: Path, name: str, body: Any) -> dict[str, str]:
    where = f"config file {path}: profiles.{name}"
    if body in (None, ""):
        return {}
    if not isinstance(body, dict):
        raise InvalidInputError(f"{where} must be a mapping of properties")
    properties: dict[str, str] = {}
    for key, value in body.items():
        if not isinstance(key, str) or not key:
            raise InvalidInputError(f"{where} has an empty or non-text property key")
        if not isinstance(value, str):
            kind = "a list" if isinstance(value, list) else "a mapping"
            hint = (
                " (write dotted keys, e.g. 'header.x-name: value')" if kind == "a mapping" else ""
            )
            raise InvalidInputError(f"{where}.{key} must be a string, got {kind}{hint}")
        properties[key] = value
    return properties


def default_config_path(environ: Mapping[str, str]) -> Path:
    base = environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "lance-ns" / "config.yaml"


def _yaml_loader() -> Any:
    try:
        import yaml
    except ImportError as exc:
        raise MissingDependencyError(
            "reading the lance-ns config file needs pyyaml, a dependency of "
            "lance-namespace-async that is missing here: pip install 'pyyaml>=6'"
        ) from exc

    class StrictTextLoader(yaml.BaseLoader):
        """BaseLoader (every scalar is text, nothing is constructed) refusing duplicate keys."""

        def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
            seen: set[Any] = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=deep)
                if isinstance(key, str) and key in seen:
                    line = key_node.start_mark.line + 1
                    raise _DuplicateKey(f"duplicate key {key!r} on line {line}")
                if isinstance(key, str):
                    seen.add(key)
            return super().construct_mapping(node, deep=deep)

    return StrictTextLoader


class _DuplicateKey(Exception):
    pass


def _yaml_problem(exc: Exception) -> str:
    """Where and what, without the snippet of the file PyYAML quotes (it may hold a secret)."""
    problem = getattr(exc, "problem", None) or "cannot be parsed"
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    return f"{problem}{where}"


def _toml_as_text(path: Path, text: str) -> Any:
    """A TOML config file, its profiles' scalars as text (as the YAML file reads them)."""
    import tomllib

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:  # names line and column, never the value
        raise InvalidInputError(f"config file {path} is not valid TOML: {exc}") from None
    profiles = data.get("profiles")
    if isinstance(profiles, dict):
        for body in profiles.values():
            if isinstance(body, dict):
                for key, value in body.items():
                    if isinstance(value, bool):
                        body[key] = "true" if value else "false"
                    elif isinstance(value, int | float):
                        body[key] = str(value)
    return data


def load_config_file(path: Path) -> ConfigFile:
    """Read and check one config file; every error names the file and the key."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InvalidInputError(f"config file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise InvalidInputError(f"cannot read config file {path}: {reason}") from None
    if path.suffix.lower() == ".toml":
        data = _toml_as_text(path, text)
    else:
        loader = _yaml_loader()
        import yaml

        try:
            data = yaml.load(text, Loader=loader)  # BaseLoader builds only str/list/dict
        except _DuplicateKey as exc:
            raise InvalidInputError(f"config file {path}: {exc}") from None
        except yaml.YAMLError as exc:
            raise InvalidInputError(
                f"config file {path} is not valid YAML: {_yaml_problem(exc)}"
            ) from None
    if data is None or data == "":
        return ConfigFile(path, {})
    if not isinstance(data, dict):
        raise InvalidInputError(f"config file {path} must be a mapping with a 'profiles' key")
    for key in data:
        if key not in _TOP_LEVEL_KEYS:
            raise InvalidInputError(
                f"config file {path}: unknown top-level key {key!r} "
                f"(expected {' or '.join(_TOP_LEVEL_KEYS)})"
            )
    default = data.get("default-profile")
    if default is not None and (not isinstance(default, str) or not default.strip()):
        raise InvalidInputError(f"config file {path}: 'default-profile' must be a profile name")
    raw_profiles = data.get("profiles")
    if raw_profiles in (None, ""):
        raw_profiles = {}
    if not isinstance(raw_profiles, dict):
        raise InvalidInputError(f"config file {path}: 'profiles' must be a mapping of names")
    seen: set[str] = set()
    for name in raw_profiles:
        where = f"config file {path}: profiles.{name}"
        lowered = name.lower()
        if not _PROFILE_NAME.match(lowered):
            raise InvalidInputError(
                f"{where}: a profile name uses letters, digits, '_', '-' and '.'"
            )
        if lowered in seen:
            raise InvalidInputError(
                f"{where}: profile names are case-insensitive; this one repeats"
            )
        seen.add(lowered)
    return ConfigFile(path, raw_profiles, default.strip().lower() if default else None)


# -- environment variables -------------------------------------------------------------------


def environment_profiles(environ: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """The profiles ``LANCE_NS_<PROFILE>__<KEY>`` variables define, by lower-cased name.

    Variables with the prefix but no ``__`` (``LANCE_NS_CONFIG``, ``LANCE_NS_PROFILE``)
    are the CLI's own settings, not profile keys.
    """
    profiles: dict[str, dict[str, str]] = {}
    for variable in sorted(environ):
        lowered = variable.lower()
        if not lowered.startswith(ENV_PREFIX.lower()):
            continue
        rest = lowered[len(ENV_PREFIX) :]
        if "__" not in rest:
            continue
        profile, _, key_part = rest.partition("__")
        segments = key_part.split("__")
        if not _ENV_SEGMENT.match(profile) or not all(_ENV_SEGMENT.match(s) for s in segments):
            raise InvalidInputError(
                f"environment variable {variable}: expected {ENV_PREFIX}<PROFILE>__<KEY> with "
                "'__' between key segments (a segment may not start or end with '_'); "
                "set keys like this one in the config file or with --prop"
            )
        profiles.setdefault(profile, {})[".".join(segments)] = environ[variable]
    return profiles


# -- resolution ----------------------------------------------------------------------------------


@attrs.frozen
class Connection:
    """What ``lance-ns`` connects to and where each setting came from (never shown raw)."""

    impl: str
    properties: Mapping[str, str] = attrs.field(repr=False)
    sources: Mapping[str, str]
    profile: str | None = None
    config_path: Path | None = None
    impl_source: str = SOURCE_ARGS
    available_profiles: Sequence[str] = ()

    def secret_values(self, extra_secret_keys: frozenset[str] = frozenset()) -> list[str]:
        """The values to scrub from any text the CLI prints (longest first).

        Families the backends mask wholesale (``storage.*``, ``header.*``) count only
        where the key itself looks secret: scrubbing a region or a tenant name out of
        every message would garble them for nothing.
        """
        values = {
            value
            for key, value in self.properties.items()
            if len(value) >= 4
            and (is_secret_key(key) or (key in extra_secret_keys and "." not in key))
        }
        return sorted(values, key=len, reverse=True)

    def masked_properties(self, extra_secret_keys: frozenset[str] = frozenset()) -> dict[str, str]:
        """The properties safe to show: secret-looking keys, the backend's secret keys and
        the families backends keep secret (storage options, headers) are ``***``."""
        return {
            key: REDACTED
            if key in extra_secret_keys or is_secret_key(key) or key.startswith(SECRET_FAMILIES)
            else redact(value)
            for key, value in sorted(self.properties.items())
        }


def parse_assignments(items: Sequence[str], option: str) -> dict[str, str]:
    """``KEY=VALUE`` items as a map; errors name the item's position, never its text."""
    result: dict[str, str] = {}
    for position, item in enumerate(items, start=1):
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep:
            raise InvalidInputError(f"{option} #{position} must be KEY=VALUE (no '=' found)")
        if not key:
            raise InvalidInputError(f"{option} #{position} has an empty key")
        if key in result:
            raise InvalidInputError(f"{option} {key} is given more than once")
        result[key] = value
    return result


def resolve_connection(
    *,
    impl: str | None,
    properties: Mapping[str, str],
    profile: str | None,
    config: str | None,
    environ: Mapping[str, str],
) -> Connection:
    """Layer file < environment < command line into one connection (see the module doc)."""
    if impl is not None and not profile:
        return Connection(impl, dict(properties), dict.fromkeys(properties, SOURCE_ARGS))
    explicit = profile or environ.get(PROFILE_ENV) or None

    path_text = config or environ.get(CONFIG_ENV) or None
    path = Path(path_text).expanduser() if path_text else default_config_path(environ)
    config_file: ConfigFile | None = None
    if path_text or path.is_file():
        config_file = load_config_file(path)
    env = environment_profiles(environ)

    if explicit is not None:
        name = explicit.strip().lower()
    elif config_file is not None and config_file.default_profile:
        name = config_file.default_profile
    else:
        name = DEFAULT_PROFILE
    file_profile = config_file.profile(name) if config_file else None
    available = sorted(set(config_file.profile_names() if config_file else ()) | set(env))
    if file_profile is None and name not in env:
        where = (
            f"in config file {config_file.path}" if config_file else f"(no config file at {path})"
        )
        known = f"; known profiles: {', '.join(available)}" if available else ""
        hint = "" if explicit or config_file else "; give --impl or --profile"
        raise InvalidInputError(
            f"profile {name!r} not found {where} nor in "
            f"{ENV_PREFIX}{name.upper()}__* variables{known}{hint}"
        )

    merged: dict[str, str] = {}
    sources: dict[str, str] = {}
    for layer, source in (
        (file_profile or {}, SOURCE_FILE),
        (env.get(name, {}), SOURCE_ENV),
        (properties, SOURCE_ARGS),
    ):
        for key, value in layer.items():
            merged[key] = value
            sources[key] = source
    chosen_impl = merged.pop(IMPL_KEY, None)
    impl_source = sources.pop(IMPL_KEY, SOURCE_ARGS)
    if impl is not None:
        chosen_impl, impl_source = impl, SOURCE_ARGS
    if not chosen_impl or not chosen_impl.strip():
        raise InvalidInputError(
            f"profile {name!r} sets no impl (key 'impl' in the config file or "
            f"{ENV_PREFIX}{name.upper()}__IMPL); or give --impl"
        )
    return Connection(
        chosen_impl.strip(),
        merged,
        sources,
        profile=name,
        config_path=config_file.path if config_file else None,
        impl_source=impl_source,
        available_profiles=available,
    )
