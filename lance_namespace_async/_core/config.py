"""Typed backend configuration parsed from the string map users already pass.

lance_namespace users configure a namespace with ``dict[str, str]``. Each
backend declares its keys once as an attrs class whose fields carry a
:func:`prop` description (key, parser, secret flag, map prefix); parsing is
then uniform: unknown or malformed keys are an ``InvalidInputError`` naming the
key, secrets never show in a repr, and the original map is kept so a sync facade
pickled to a Spark executor can re-connect with exactly the same settings.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, TypeVar

import attrs

from ..errors import REDACTED, InvalidInputError

__all__ = [
    "BackendConfig",
    "call_timeout_prop",
    "close_match",
    "mask_url_userinfo",
    "max_response_bytes_prop",
    "parse_bool",
    "parse_positive_int",
    "prop",
]

_PROP = "lance_namespace_async.prop"

C = TypeVar("C", bound="BackendConfig")


@attrs.frozen
class _Prop:
    key: str
    parse: Callable[[str], Any]
    secret: bool
    prefix: str | None
    required: bool
    doc: str
    shown: Callable[[str], str] | None = None


def parse_bool(value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in ("true", "1", "yes", "on"):
        return True
    if lowered in ("false", "0", "no", "off"):
        return False
    raise ValueError("expected true or false")


def parse_positive_int(value: str) -> int:
    number = int(value.strip())
    if number < 1:
        raise ValueError("expected an integer >= 1")
    return number


def parse_non_negative_int(value: str) -> int:
    number = int(value.strip())
    if number < 0:
        raise ValueError("expected an integer >= 0")
    return number


def close_match(word: str, choices: list[str]) -> str | None:
    """The choice ``word`` is most likely a typo of (``roott`` -> ``root``,
    ``storage_region`` -> ``storage.*``), or None when none is close."""
    import difflib

    stems = {choice.removesuffix("*").rstrip("."): choice for choice in choices}
    found = difflib.get_close_matches(word, list(stems), n=1, cutoff=0.75)
    if not found:
        head = word.replace("_", ".").partition(".")[0]
        found = difflib.get_close_matches(head, list(stems), n=1, cutoff=0.75)
    return stems[found[0]] if found else None


def mask_url_userinfo(url: str) -> str:
    """``url`` safe to show: the password of a ``user:password@`` (or a lone user,
    which may be a token) replaced by ``***``."""
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url
    userinfo, _, host = parts.netloc.rpartition("@")
    user, colon, _ = userinfo.partition(":")
    shown = f"{user}:{REDACTED}" if colon else REDACTED
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{shown}@{host}"))


def _secret_repr(value: object) -> str:
    return "None" if value is None else repr(REDACTED)


def _secret_map_repr(value: Mapping[str, str]) -> str:
    return repr(dict.fromkeys(value, REDACTED))


def call_timeout_prop(doc: str) -> Any:
    """``call_timeout``: the deadline of one catalog call in ms (60000), retries included;
    a caller's ``timeout=`` replaces it for that call (:func:`.timeout.chosen_total`)."""
    return prop(default=60000, parse=parse_positive_int, doc=doc)


def max_response_bytes_prop(doc: str) -> Any:
    """``max_response_bytes``: the most of one catalog answer a backend reads (64 MiB)."""
    return prop(default=64 * 1024 * 1024, parse=parse_positive_int, doc=doc)


def prop(
    key: str | None = None,
    *,
    default: Any = attrs.NOTHING,
    parse: Callable[[str], Any] = str,
    secret: bool = False,
    prefix: str | None = None,
    doc: str = "",
    shown: Callable[[str], str] | None = None,
) -> Any:
    """Declare one configuration key of a backend.

    ``prefix`` declares a family of keys (``storage.region`` ...) collected into
    a ``dict[str, str]`` with the prefix stripped. A field without a default is
    required. ``shown`` masks part of a value wherever it is shown (a URL's
    password), where ``secret`` hides all of it.
    """
    required = default is attrs.NOTHING and prefix is None
    metadata = {_PROP: _Prop(key or "", parse, secret, prefix, required, doc, shown)}
    if prefix is not None:
        return attrs.field(
            factory=dict,
            metadata=metadata,
            repr=_secret_map_repr if secret else True,
            kw_only=True,
        )
    value_repr: Any = True
    if secret:
        value_repr = _secret_repr
    elif shown is not None:
        mask = shown

        def value_repr(value: object) -> str:
            return repr(mask(value) if isinstance(value, str) else value)

    return attrs.field(
        default=None if required else default,
        metadata=metadata,
        repr=value_repr,
        kw_only=True,
    )


@attrs.frozen
class BackendConfig:
    """Base of every backend's configuration.

    Subclasses are frozen attrs classes whose fields are declared with
    :func:`prop`; ``from_properties`` is the only way users build them.
    """

    #: keys accepted and ignored (documented compatibility keys of peers)
    ignored_keys: ClassVar[frozenset[str]] = frozenset()
    #: the original string map, kept to re-connect elsewhere (never shown)
    properties: Mapping[str, str] = attrs.field(factory=dict, repr=False, kw_only=True)

    @classmethod
    def from_properties(cls: type[C], properties: Mapping[str, str] | None) -> C:
        properties = dict(properties or {})
        for key, value in properties.items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise InvalidInputError(
                    f"configuration key {key!r} must map a string to a string, "
                    f"got {type(value).__name__}"
                )
        cls._refuse_unknown_keys(properties)
        values: dict[str, Any] = {}
        for field in attrs.fields(cls):
            spec: _Prop | None = field.metadata.get(_PROP)
            if spec is None:
                continue
            if spec.prefix is not None:
                family = {
                    k[len(spec.prefix) :]: v
                    for k, v in properties.items()
                    if k.startswith(spec.prefix) and len(k) > len(spec.prefix)
                }
                values[field.name] = family
                continue
            key = spec.key or field.name
            if key not in properties:
                if spec.required:
                    raise InvalidInputError(f"configuration key {key!r} is required")
                continue
            raw = properties[key]
            try:
                values[field.name] = spec.parse(raw)
            except (ValueError, TypeError) as exc:
                shown = REDACTED if spec.secret else repr(raw)
                raise InvalidInputError(
                    f"configuration key {key!r} has an invalid value {shown}: {exc}"
                ) from None
        return cls(properties=properties, **values)

    @classmethod
    def _refuse_unknown_keys(cls, properties: Mapping[str, str]) -> None:
        """An unknown key is refused before a missing required one is: ``roott=`` is a
        typo of ``root``, and saying so (with the close match) is the useful answer."""
        known = cls.known_keys()
        exact = {key for key in known if not key.endswith("*")} | set(cls.ignored_keys)
        prefixes = [key.removesuffix("*") for key in known if key.endswith("*")]
        unknown = sorted(
            key
            for key in properties
            if key not in exact
            and not any(key.startswith(p) and len(key) > len(p) for p in prefixes)
        )
        if not unknown:
            return
        hint = close_match(unknown[0], [*sorted(exact), *(f"{p}*" for p in prefixes)])
        raise InvalidInputError(
            f"unknown configuration key {unknown[0]!r} for {cls.__name__}"
            + (f" (did you mean {hint!r}?)" if hint else "")
            + (f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else "")
            + f"; known keys: {', '.join(known)}"
        )

    @classmethod
    def known_keys(cls) -> list[str]:
        keys: list[str] = []
        for field in attrs.fields(cls):
            spec: _Prop | None = field.metadata.get(_PROP)
            if spec is not None:
                keys.append(f"{spec.prefix}*" if spec.prefix else spec.key or field.name)
        return keys

    def redacted_properties(self) -> dict[str, str]:
        """The original map with secret values replaced (and URLs' passwords), safe to print."""
        secret_keys: set[str] = set()
        secret_prefixes: list[str] = []
        masks: dict[str, Callable[[str], str]] = {}
        for field in attrs.fields(type(self)):
            spec: _Prop | None = field.metadata.get(_PROP)
            if spec is not None and spec.secret:
                if spec.prefix:
                    secret_prefixes.append(spec.prefix)
                else:
                    secret_keys.add(spec.key or field.name)
            elif spec is not None and spec.shown is not None:
                masks[spec.key or field.name] = spec.shown
        return {
            k: REDACTED
            if k in secret_keys or k.startswith(tuple(secret_prefixes))
            else masks[k](v)
            if k in masks
            else v
            for k, v in self.properties.items()
        }
