"""The mounting namespace's properties: one flat string map holding every mount's own.

A mount is ``mount.<name>.impl`` plus ``mount.<name>.<key>`` for each of its backend's
properties. Flat strings on purpose: the map is what ``connect("mounts", ...)``,
lance_namespace's ``Cls(**properties)``, a pickled sync facade and the server's storage
workers all rebuild a backend from, so a mounting namespace travels exactly like any
other backend.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from .._core.config import BackendConfig, prop
from ..errors import REDACTED, InvalidInputError

__all__ = ["MOUNT_NAME", "MountsConfig", "flatten_mounts", "split_mounts"]

PREFIX = "mount."
IMPL_KEY = "impl"
#: a mount's name: a namespace name every backend and every delimiter accepts, with no
#: "." so ``mount.<name>.<key>`` splits one way only
MOUNT_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}\Z")


def check_mount_name(name: object) -> str:
    """``name`` if it may name a mount, else InvalidInputError saying what a name may be."""
    if not isinstance(name, str) or not MOUNT_NAME.match(name):
        shown = repr(name)[:40] if isinstance(name, str) else type(name).__name__
        raise InvalidInputError(
            f"mount name {shown} must be 1-64 letters, digits, '_' or '-' "
            "(it becomes the first name of every id under the mount)"
        )
    return name


def split_mounts(properties: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """``mount.<name>.<key>`` properties as ``{name: {key: value}}``, each with its impl."""
    mounts: dict[str, dict[str, str]] = {}
    for key, value in properties.items():
        if not key.startswith(PREFIX):
            continue
        name, dot, inner = key[len(PREFIX) :].partition(".")
        check_mount_name(name)
        if not dot or not inner:
            raise InvalidInputError(
                f"configuration key {key!r}: expected mount.{name}.impl or mount.{name}.<key>"
            )
        mounts.setdefault(name, {})[inner] = value
    if not mounts:
        raise InvalidInputError(
            "a mounting namespace needs at least one mount: mount.<name>.impl=<backend> "
            "and its properties as mount.<name>.<key>"
        )
    for name, given in mounts.items():
        if not given.get(IMPL_KEY):
            raise InvalidInputError(f"configuration key 'mount.{name}.impl' is required")
    return mounts


def flatten_mounts(mounts: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """``{name: {"impl": ..., key: value}}`` (a config file's ``[mount.<name>]`` tables) as
    the flat properties :func:`connect` takes; every value must be a string."""
    if not isinstance(mounts, Mapping):
        raise InvalidInputError("mounts must map each mount name to its impl and properties")
    flat: dict[str, str] = {}
    for name, given in mounts.items():
        check_mount_name(name)
        if not isinstance(given, Mapping):
            raise InvalidInputError(f"mount {name!r} must be a table of its impl and properties")
        for key, value in given.items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise InvalidInputError(
                    f"mount {name!r}: property {key!r} must map a string to a string"
                )
            flat[f"{PREFIX}{name}.{key}"] = value
    split_mounts(flat)  # the same checks as properties given flat
    return flat


@attrs.frozen
class MountsConfig(BackendConfig):
    """The mounting namespace's configuration: the ``mount.*`` family, checked by
    :func:`split_mounts`. ``shown`` is the map with each mount's secrets masked by that
    mount's own backend (its configuration knows which of its keys are secret)."""

    family: Mapping[str, str] = prop(prefix=PREFIX, doc="mount.<name>.impl, mount.<name>.<key>")
    shown: Mapping[str, str] = attrs.field(factory=dict, repr=False, kw_only=True)

    def redacted_properties(self) -> dict[str, str]:
        return dict(self.shown)

    def __repr__(self) -> str:
        names = sorted({key.split(".")[1] for key in self.properties if key.startswith(PREFIX)})
        return f"MountsConfig(mounts={names})"


def masked_mount_properties(
    name: str, given: Mapping[str, str], redacted: Callable[[], Mapping[str, str]] | None
) -> dict[str, str]:
    """One mount's ``mount.<name>.*`` properties as its backend shows them (secrets
    masked); the impl stays readable."""
    shown = dict(redacted()) if redacted is not None else {}
    out = {f"{PREFIX}{name}.{IMPL_KEY}": given[IMPL_KEY]}
    for key in given:
        if key != IMPL_KEY:
            # a backend without a configuration that knows its secrets shows none of them
            out[f"{PREFIX}{name}.{key}"] = shown.get(key, REDACTED)
    return out
