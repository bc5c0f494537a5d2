"""``lance-ns serve --mount NAME=SPEC``: several backends behind one endpoint (``mounts``).

``SPEC`` is ``IMPL:KEY=VALUE,KEY=VALUE`` (the backend and its properties; ``IMPL:``
for none) or a profile name (no ``:``), resolved as ``--profile`` would be. In a value,
``\\,`` is a comma and ``\\\\`` a backslash; anything else is taken as written, ``=``
and ``:`` included (``uri=http://host:8181``). A class path names its backend in the
dotted form (``my_pkg.module.MyNamespace``), since ``:`` ends the impl.

A config file gives the same as a list of these strings (``mount = ["sales=glue:..."]``)
or as one table per mount (``[mount.sales]`` with ``impl = "glue"`` and the properties):
:func:`mount_connection` takes either, so both arrive as one ``Connection`` of impl
``mounts`` whose properties are ``mount.<name>.impl`` and ``mount.<name>.<key>``.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from typing import Any

from .. import errors
from .profiles import SOURCE_ARGS, Connection, resolve_connection

__all__ = ["add_arguments", "mount_connection", "mount_specs", "parse_mount"]


def add_arguments(serve: argparse.ArgumentParser) -> None:
    serve.add_argument(
        "--mount",
        action="append",
        default=[],
        metavar="NAME=IMPL:K=V,...",
        help="serve a backend under the root as NAME (repeatable: one endpoint for several "
        "catalogs). IMPL:K=V,K=V gives the backend and its properties ('\\,' for a comma in "
        "a value), a bare PROFILE a profile's. Every id under NAME$ goes to that backend "
        "with NAME stripped; ListNamespaces of the root lists the mounts. Replaces "
        "--impl/--profile/--prop",
    )


def _split_items(text: str) -> list[str]:
    """``text`` split at the commas no backslash escapes, the escapes resolved."""
    items: list[str] = []
    current: list[str] = []
    escaped = False
    for char in text:
        if escaped:
            current.append(char if char in ",\\" else "\\" + char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == ",":
            items.append("".join(current))
            current = []
        else:
            current.append(char)
    if escaped:
        current.append("\\")
    items.append("".join(current))
    return items


def parse_mount(text: str) -> tuple[str, str | None, dict[str, str]]:
    """``NAME=IMPL:K=V,...`` as (name, impl, properties), or (name, None, {"profile": P})
    for ``NAME=PROFILE``. Errors name the mount and the item's position, never a value."""
    if not isinstance(text, str):
        raise errors.InvalidInputError("--mount must be NAME=IMPL:KEY=VALUE,... or NAME=PROFILE")
    name, equals, spec = text.partition("=")
    name = name.strip()
    if not equals or not name or not spec:
        raise errors.InvalidInputError(
            "--mount must be NAME=IMPL:KEY=VALUE,... or NAME=PROFILE (got no '=' or an empty side)"
        )
    impl, colon, rest = spec.partition(":")
    if not colon:
        return name, None, {"profile": spec.strip()}
    if not impl.strip():
        raise errors.InvalidInputError(f"--mount {name}: the backend before ':' is empty")
    properties: dict[str, str] = {}
    for position, item in enumerate(_split_items(rest) if rest else [], start=1):
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise errors.InvalidInputError(
                f"--mount {name}: property {position} is not KEY=VALUE "
                "(a comma inside a value is written '\\,')"
            )
        if key.strip() in properties:
            raise errors.InvalidInputError(f"--mount {name}: property {key.strip()!r} given twice")
        properties[key.strip()] = value
    return name, impl.strip(), properties


def _escaped(value: str) -> str:
    return value.replace("\\", "\\\\").replace(",", "\\,")


def mount_specs(tables: Mapping[str, Any], where: str) -> list[str]:
    """A config file's ``mount`` tables (``{name: {"impl": IMPL, key: value}}``, or
    ``{name: "IMPL:..."}``) as ``--mount`` strings, so they meet the command line's
    ``--mount`` the way a list does (the command line's replace the file's). Errors name
    the mount and the key, never a value."""
    specs: list[str] = []
    for name, body in tables.items():
        if isinstance(body, str):
            specs.append(f"{name}={body}")
            continue
        if not isinstance(body, Mapping):
            raise errors.InvalidInputError(f"{where}.{name} must be a table or a string")
        impl = body.get("impl")
        if not isinstance(impl, str) or not impl.strip():
            raise errors.InvalidInputError(f"{where}.{name} needs impl (its backend)")
        items: list[str] = []
        for key, value in body.items():
            if key == "impl":
                continue
            if not isinstance(key, str) or not key or any(c in key for c in "=,\\"):
                raise errors.InvalidInputError(
                    f"{where}.{name}: a property name may not hold '=', ',' or '\\'"
                )
            if isinstance(value, bool):
                text = "true" if value else "false"
            elif isinstance(value, str | int | float):
                text = str(value)
            else:
                raise errors.InvalidInputError(f"{where}.{name}.{key} must be a single value")
            items.append(f"{key}={_escaped(text)}")
        specs.append(f"{name}={impl.strip()}:{','.join(items)}")
    return specs


def _mount_of(
    name: str, impl: str | None, given: Mapping[str, str], config: str | None
) -> dict[str, str]:
    if impl is not None:
        return {"impl": impl, **given}
    profile = resolve_connection(
        impl=None, properties={}, profile=given["profile"], config=config, environ=os.environ
    )
    return {"impl": profile.impl, **profile.properties}


def mount_connection(
    mounts: Sequence[str] | Mapping[str, Any], *, config: str | None = None
) -> Connection:
    """The ``mounts`` connection of ``--mount`` strings, or of a config file's tables
    (``{name: {"impl": ..., key: value}}`` or ``{name: "IMPL:..."}``)."""
    from ..mounts import flatten_mounts

    found: dict[str, dict[str, str]] = {}
    if isinstance(mounts, Mapping):
        entries: list[tuple[str, str | None, dict[str, str]]] = []
        for name, value in mounts.items():
            if isinstance(value, str):
                entries.append(parse_mount(f"{name}={value}"))
            elif isinstance(value, Mapping):
                entries.append((str(name), "", dict(value)))  # "": the table names its impl
            else:
                raise errors.InvalidInputError(f"mount {name!r} must be a table or a string")
    else:
        entries = [parse_mount(text) for text in mounts]
    for name, impl, given in entries:
        if name in found:
            raise errors.InvalidInputError(f"mount {name!r} is given twice")
        if impl == "":  # a table: its own impl key
            found[name] = {key: str(value) for key, value in given.items()}
        else:
            found[name] = _mount_of(name, impl, given, config)
    properties = flatten_mounts(found)
    return Connection("mounts", properties, dict.fromkeys(properties, SOURCE_ARGS))


def connection_of(parser: argparse.ArgumentParser, args: argparse.Namespace) -> Connection | None:
    """The ``mounts`` connection ``--mount`` describes, or None without it."""
    mounts = getattr(args, "mount", None)
    if not mounts:
        return None
    clashing = [flag for flag in ("impl", "profile", "prop", "top_prop") if hasattr(args, flag)]
    if clashing:
        parser.error(
            f"--mount replaces --{clashing[0].removeprefix('top_')}: "
            "give each mount its backend and properties"
        )
    try:
        return mount_connection(mounts, config=getattr(args, "config", None))
    except errors.InvalidInputError as exc:
        parser.error(exc.message)
