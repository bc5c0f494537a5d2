"""A Lance table's transactions as DescribeTransaction and AlterTransaction see them,
read and kept the way pylance 14.0.2's DirectoryNamespace does, so a table answers the
same whether a directory or a catalog (Iceberg, Unity, Glue, Hive) holds it.

What pylance's directory answers, found by running it (tests/test_catalog_transactions.py
pins each point against it):

* A transaction is named by the table's id followed by one element: a version number
  (Rust's unsigned parse: digits, an optional ``+``, below 2**64), else the ``uuid`` of
  the transaction a write answered as ``transaction_id``. A version without a manifest
  or a transaction, or a uuid no version committed, is TransactionNotFound (10).
* Its description is ``status`` (``SUCCEEDED`` until an AlterTransaction set another,
  kept as spelled) and ``properties``: the transaction's own ``transaction_properties``
  (those a writer passed), then the altered ones, then four that describe the commit and
  may never be altered: ``version``, ``uuid``, ``read_version`` and ``operation`` (the
  name of Lance's operation, ``Append``, ``Delete``, ``ReserveFragments`` ...).
* Alterations are kept beside the table, in ``<table>/_alter_transactions/<uuid>.json``
  as ``{"status", "properties", "removed_properties"}`` (a writer's property that was
  unset is listed in ``removed_properties``), so either side reads what the other
  altered. An AlterTransaction applies its actions in order on a copy and writes the
  copy once: one failing action changes nothing.

How the Lance transaction itself is read: pylance's Python ``read_transaction`` answers
the writer's properties but cannot convert every operation (a compaction that rewrote
an index raises TypeError, several others come back as ``BaseOperation``), so the uuid,
the version read and the operation's name come from the Rust description of the
transaction (``lance.debug.list_transactions``), the first lines of which are stable
(``read_version``, ``uuid``, ``operation: <Name>``).
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Mapping
from typing import Any

import attrs

from .. import errors
from .places import local_path

__all__ = [
    "ALTERATIONS_DIR",
    "MAX_ACTIONS",
    "MAX_KEY_CHARS",
    "MAX_PROPERTIES",
    "MAX_VALUE_CHARS",
    "RESERVED",
    "Alteration",
    "Found",
    "apply_actions",
    "checked_actions",
    "find_transaction",
    "read_alteration",
    "write_alteration",
]

#: where pylance's directory keeps altered transactions, inside the table
ALTERATIONS_DIR = "_alter_transactions"
#: the properties that describe the commit: never set nor unset
RESERVED = frozenset({"version", "uuid", "read_version", "operation"})
#: bounds of one AlterTransaction and of what is kept for one transaction
MAX_ACTIONS = 100
MAX_KEY_CHARS = 256
MAX_VALUE_CHARS = 16_384
MAX_PROPERTIES = 1_000
#: an alteration file larger than this is not read (nothing written here comes close)
MAX_ALTERATION_BYTES = 4 * 1024 * 1024

_VERSION = re.compile(r"\+?[0-9]{1,20}")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_HEADER = re.compile(
    r"\s*Transaction \{\s*read_version: (\d+),\s*uuid: \"([0-9a-fA-F-]{36})\",\s*operation: (\w+)"
)
_STATUSES = frozenset({"queued", "running", "succeeded", "failed", "canceled"})
_SET_MODES = frozenset({"overwrite", "fail", "skip"})
_UNSET_MODES = frozenset({"skip", "fail"})
_ACTIONS = ("setPropertyAction", "unsetPropertyAction", "setStatusAction")


@attrs.frozen
class Found:
    """A committed transaction: the version it wrote and what Lance recorded of it."""

    version: int
    uuid: str
    read_version: int
    operation: str
    #: what the writer passed as ``transaction_properties``
    properties: Mapping[str, str]


@attrs.define
class Alteration:
    """What AlterTransaction changed of one transaction (pylance's JSON, as kept)."""

    status: str | None = None
    properties: dict[str, str] = attrs.field(factory=dict)
    removed_properties: list[str] = attrs.field(factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "properties": self.properties,
            "removed_properties": self.removed_properties,
        }


def described(found: Found, alteration: Alteration) -> dict[str, Any]:
    """DescribeTransaction's answer (and AlterTransaction's) for ``found`` as altered."""
    removed = set(alteration.removed_properties)
    properties = {k: v for k, v in found.properties.items() if k not in removed}
    properties.update(alteration.properties)
    properties.update(
        version=str(found.version),
        uuid=found.uuid,
        read_version=str(found.read_version),
        operation=found.operation,
    )
    return {"status": alteration.status or "SUCCEEDED", "properties": properties}


# -- finding a transaction ------------------------------------------------------------------


def find_transaction(
    location: str, options: Mapping[str, str] | None, wanted: str, newest: int | None
) -> Found | None:
    """The transaction ``wanted`` names in the table at ``location`` (a version number,
    else a uuid), among the versions up to ``newest`` (None: all); None if it has none.
    Blocking: run it on a worker thread."""
    if _VERSION.fullmatch(wanted) and int(wanted) < 2**64:
        version = int(wanted)
        if newest is not None and version > newest:
            return None  # not (yet) a version of the table, whatever storage holds
        return _transaction_of(location, options, version)
    if not _UUID.fullmatch(wanted):
        return None
    for read_version in _read_versions_of(location, options, wanted):
        # the commit lands after the version it read: usually the next, later on a retry
        version = read_version + 1
        while newest is None or version <= newest:
            found = _transaction_of(location, options, version)
            if found is None:
                break
            if found.uuid == wanted:
                return found
            version += 1
    return None


def _read_versions_of(location: str, options: Mapping[str, str] | None, uuid: str) -> list[int]:
    """The versions read by the transaction files of ``uuid`` (Lance names them
    ``_transactions/<read_version>-<uuid>.txn``)."""
    suffix = f"-{uuid}.txn"
    names: list[str]
    path = local_path(location)
    if path is not None:
        try:
            names = os.listdir(os.path.join(path, "_transactions"))
        except (FileNotFoundError, NotADirectoryError):
            return []
    else:
        from lance.file import LanceFileSession

        session = LanceFileSession(location, storage_options=dict(options or {}) or None)
        try:
            names = [entry.rpartition("/")[2] for entry in session.list("_transactions")]
        except OSError:
            return []
    found = []
    for name in names:
        head = name[: -len(suffix)]
        if name.endswith(suffix) and head.isdigit():
            found.append(int(head))
    return sorted(found)


def _transaction_of(location: str, options: Mapping[str, str] | None, version: int) -> Found | None:
    """The transaction that wrote ``version`` (None: no such version, or no record)."""
    import lance
    import lance.debug

    try:
        dataset = lance.dataset(
            location, version=version, storage_options=dict(options or {}) or None
        )
    except (ValueError, OSError) as exc:
        if "not found" in str(exc).lower():
            return None
        raise
    try:
        transaction = dataset.read_transaction(version)
    except TypeError:  # pylance's Python cannot convert this operation; it exists
        transaction = None
        convertible = False
    else:
        convertible = True
        if transaction is None:
            return None
    listed = lance.debug.list_transactions(dataset, 1)
    header = _HEADER.match(listed[0]) if listed else None
    if header is None:
        return None
    if convertible:
        properties = dict(getattr(transaction, "transaction_properties", None) or {})
    else:
        properties = _debug_properties(listed[0])
    return Found(
        version=version,
        uuid=header.group(2),
        read_version=int(header.group(1)),
        operation=header.group(3),
        properties={str(k): str(v) for k, v in properties.items()},
    )


_PROPERTIES_BLOCK = re.compile(
    r"\n    transaction_properties: Some\(\s*\{(.*)\},\s*\),\s*\}\s*$", re.S
)
_DEBUG_ENTRY = re.compile(r'\s*"((?:[^"\\]|\\.)*)": "((?:[^"\\]|\\.)*)",')
_DEBUG_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "0": "\0", "\\": "\\", '"': '"', "'": "'"}


def _debug_properties(text: str) -> dict[str, str]:
    """The ``transaction_properties`` of a transaction's Rust description (used only
    where pylance's Python cannot convert the transaction)."""
    block = _PROPERTIES_BLOCK.search(text)
    if block is None:
        return {}
    return {_unescape(key): _unescape(value) for key, value in _DEBUG_ENTRY.findall(block.group(1))}


def _unescape(text: str) -> str:
    out: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char != "\\":
            out.append(char)
            index += 1
            continue
        code = text[index + 1]
        if code == "u":  # \u{1f600}
            end = text.index("}", index)
            out.append(chr(int(text[index + 3 : end], 16)))
            index = end + 1
        else:
            out.append(_DEBUG_ESCAPES.get(code, code))
            index += 2
    return "".join(out)


# -- the kept alterations -------------------------------------------------------------------


def _alteration_name(uuid: str) -> str:
    if not _UUID.fullmatch(uuid):  # never a path of our making from other text
        raise errors.InvalidTableStateError(f"transaction uuid {uuid!r} is not a uuid")
    return f"{ALTERATIONS_DIR}/{uuid}.json"


def read_alteration(location: str, options: Mapping[str, str] | None, uuid: str) -> Alteration:
    """What was altered of transaction ``uuid`` (nothing: an empty alteration).
    Blocking."""
    name = _alteration_name(uuid)
    path = local_path(location)
    if path is not None:
        data = _read_local(os.path.join(path, name), name)
    else:
        data = _read_remote(location, options, name)
    if data is None:
        return Alteration()
    return _parsed(data, name)


def _read_local(path: str, name: str) -> bytes | None:
    directory = os.path.dirname(path)
    if os.path.islink(directory):
        raise errors.InvalidTableStateError(f"{ALTERATIONS_DIR} of the table is a link")
    try:
        handle = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise errors.InvalidTableStateError(f"{name} of the table cannot be read: {exc}") from None
    with os.fdopen(handle, "rb") as file:
        data = file.read(MAX_ALTERATION_BYTES + 1)
    return data


def _read_remote(location: str, options: Mapping[str, str] | None, name: str) -> bytes | None:
    from lance.file import LanceFileSession

    session = LanceFileSession(location, storage_options=dict(options or {}) or None)
    if not session.contains(name):
        return None
    with tempfile.TemporaryDirectory() as scratch:
        copy = os.path.join(scratch, "alteration.json")
        session.download_file(name, copy)
        with open(copy, "rb") as file:
            return file.read(MAX_ALTERATION_BYTES + 1)


def _parsed(data: bytes, name: str) -> Alteration:
    bad = errors.InvalidTableStateError(f"{name} of the table is not an alteration pylance wrote")
    if len(data) > MAX_ALTERATION_BYTES:
        raise bad
    try:
        loaded = json.loads(data)
    except ValueError:
        raise bad from None
    if not isinstance(loaded, dict):
        raise bad
    status = loaded.get("status")
    properties = loaded.get("properties") or {}
    removed = loaded.get("removed_properties") or []
    if (
        not (status is None or isinstance(status, str))
        or not isinstance(properties, dict)
        or not all(isinstance(v, str) for v in properties.values())
        or not isinstance(removed, list)
        or not all(isinstance(k, str) for k in removed)
    ):
        raise bad
    return Alteration(status, dict(properties), list(removed))


def write_alteration(
    location: str, options: Mapping[str, str] | None, uuid: str, alteration: Alteration
) -> None:
    """Keep ``alteration`` of transaction ``uuid`` beside the table, replacing what was
    kept in one step (a reader sees the old alteration or the new one). Blocking."""
    name = _alteration_name(uuid)
    data = json.dumps(alteration.to_json(), separators=(",", ":")).encode()
    path = local_path(location)
    if path is None:
        from lance.file import LanceFileSession

        session = LanceFileSession(location, storage_options=dict(options or {}) or None)
        with tempfile.TemporaryDirectory() as scratch:
            copy = os.path.join(scratch, "alteration.json")
            with open(copy, "wb") as file:
                file.write(data)
            session.upload_file(copy, name)
        return
    directory = os.path.join(path, ALTERATIONS_DIR)
    if os.path.islink(directory):
        raise errors.InvalidTableStateError(f"{ALTERATIONS_DIR} of the table is a link")
    os.makedirs(directory, exist_ok=True)
    handle, staged = tempfile.mkstemp(prefix=f".{uuid}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
        os.replace(staged, os.path.join(directory, f"{uuid}.json"))
    except BaseException:
        if os.path.exists(staged):
            os.unlink(staged)
        raise


# -- AlterTransaction's actions -------------------------------------------------------------


def _mode(action: Mapping[str, Any], allowed: frozenset[str], default: str, what: str) -> str:
    mode = action.get("mode")
    if mode is None:
        return default
    spelled = mode.replace("_", "").lower() if isinstance(mode, str) else None
    if spelled not in allowed:
        raise errors.InvalidInputError(
            f"{what}: mode must be one of {', '.join(sorted(allowed))}, got {mode!r}"
        )
    return spelled


def _key(action: Mapping[str, Any], what: str) -> str:
    key = action.get("key")
    if not isinstance(key, str) or not key:
        raise errors.InvalidInputError(f"{what} needs a non-empty property key")
    if len(key) > MAX_KEY_CHARS:
        raise errors.InvalidInputError(
            f"{what}: a property key has at most {MAX_KEY_CHARS} characters"
        )
    return key


def checked_actions(body: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """AlterTransaction's actions in order as (kind, action), each checked for shape and
    bounds before anything is read or written (InvalidInput, 13)."""
    actions = body.get("actions")
    if not isinstance(actions, list):
        raise errors.InvalidInputError("AlterTransaction needs a list of actions")
    if len(actions) > MAX_ACTIONS:
        raise errors.InvalidInputError(
            f"AlterTransaction takes at most {MAX_ACTIONS} actions, got {len(actions)}"
        )
    checked: list[tuple[str, Mapping[str, Any]]] = []
    for position, action in enumerate(actions):
        what = f"AlterTransaction action {position}"
        if not isinstance(action, Mapping):
            raise errors.InvalidInputError(f"{what} must be an object")
        unknown = sorted(str(k) for k in action if k not in _ACTIONS)
        if unknown:
            raise errors.InvalidInputError(
                f"{what}: unknown action {unknown[0]!r} (known: {', '.join(_ACTIONS)})"
            )
        # pylance applies the parts of one action in this order; one naming none (null
        # parts) is nothing to do, as there: pylance 14.0.2's Python client sends every
        # action so (its model_dump() names fields in snake_case, which its Rust drops)
        for kind in _ACTIONS:
            part = action.get(kind)
            if part is None:
                continue
            if not isinstance(part, Mapping):
                raise errors.InvalidInputError(f"{what}: {kind} must be an object")
            _check_part(kind, part, f"{what} {kind}")
            checked.append((kind, part))
    return checked


def _check_part(kind: str, part: Mapping[str, Any], what: str) -> None:
    if kind == "setStatusAction":
        status = part.get("status")
        spelled = status.replace("_", "").lower() if isinstance(status, str) else None
        if spelled not in _STATUSES:
            raise errors.InvalidInputError(
                f"{what}: status must be one of Queued, Running, Succeeded, Failed, "
                f"Canceled, got {status!r}"
            )
        return
    _key(part, what)
    if kind == "setPropertyAction":
        value = part.get("value")
        if not isinstance(value, str):
            raise errors.InvalidInputError(f"{what} needs a string value")
        if len(value) > MAX_VALUE_CHARS:
            raise errors.InvalidInputError(
                f"{what}: a property value has at most {MAX_VALUE_CHARS} characters"
            )
        _mode(part, _SET_MODES, "overwrite", what)
    else:
        _mode(part, _UNSET_MODES, "skip", what)


def apply_actions(
    found: Found, kept: Alteration, actions: list[tuple[str, Mapping[str, Any]]]
) -> Alteration:
    """``kept`` with ``actions`` applied in order, as a new alteration (``kept`` is left
    as it was, so a failing action changes nothing)."""
    altered = Alteration(kept.status, dict(kept.properties), list(kept.removed_properties))
    for kind, part in actions:
        what = f"AlterTransaction {kind}"
        if kind == "setStatusAction":
            altered.status = str(part["status"])
            continue
        key = _key(part, what)
        if key in RESERVED:
            raise errors.InvalidInputError(f"property {key!r} is reserved and cannot be modified")
        # as pylance's: a writer's property counts as present even once unset
        present = key in altered.properties or key in found.properties
        if kind == "setPropertyAction":
            mode = _mode(part, _SET_MODES, "overwrite", what)
            if present and mode == "fail":
                raise errors.ConcurrentModificationError(
                    f"property {key!r} already exists and mode is 'Fail'"
                )
            if present and mode == "skip":
                continue
            altered.properties[key] = str(part["value"])  # shown over the removal
        else:
            mode = _mode(part, _UNSET_MODES, "skip", what)
            if not present:
                if mode == "fail":
                    raise errors.InvalidInputError(
                        f"property {key!r} does not exist and mode is 'Fail'"
                    )
                continue
            altered.properties.pop(key, None)
            if key in found.properties and key not in altered.removed_properties:
                altered.removed_properties.append(key)
    if len(altered.properties) > MAX_PROPERTIES:
        raise errors.InvalidInputError(
            f"a transaction keeps at most {MAX_PROPERTIES} altered properties"
        )
    return altered
