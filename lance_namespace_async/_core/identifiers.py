"""Object identifiers: list <-> string, and the names a backend may accept.

An identifier is the list of object names below the root namespace (as the Lance
Namespace specification defines it); the root itself is the empty list. Its
string form joins the names with a delimiter (``$`` on the REST wire, ``.`` for
people). Validation happens here, once, before any backend touches a catalog or
storage, so bad names are an ``InvalidInputError`` that changes nothing.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from ..errors import InvalidInputError

__all__ = [
    "DEFAULT_DELIMITER",
    "Identifier",
    "join_identifier",
    "parse_identifier",
    "validate_identifier",
    "validate_name",
]

DEFAULT_DELIMITER = "$"

Identifier = tuple[str, ...]

_PATH_SEPARATORS = ("/", "\\")
#: a file name's usual limit (NAME_MAX), in UTF-8 bytes
MAX_STORAGE_NAME_BYTES = 255


#: names every check of :func:`validate_name` passes whatever the flags (short ASCII
#: letters, digits, "_", "-", "." and not a dot segment): most names, checked by one match
_PLAIN_NAME = re.compile(r"(?!\.\.?\Z)[A-Za-z0-9_.\-]{1,255}\Z")


def _has_control_character(name: str) -> bool:
    if name.isascii():  # most names: ASCII's controls are exactly its unprintable ones
        return not name.isprintable()
    return any(unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") for ch in name)


def validate_name(
    name: str,
    *,
    delimiter: str = DEFAULT_DELIMITER,
    storage_backed: bool = False,
    what: str = "name",
) -> str:
    """Check one object name; return it unchanged or raise InvalidInputError.

    ``storage_backed`` names become path segments (directory backend, default
    table locations), so path separators and the dot segments are refused to
    keep every object inside its root, and so is ``%``: storage URIs are
    percent-decoded, which would turn ``%2e%2e`` into ``..``.
    """
    if not isinstance(name, str):
        raise InvalidInputError(f"{what} must be a string, got {type(name).__name__}")
    if name == "":
        raise InvalidInputError(f"{what} must not be empty")
    if delimiter and delimiter in name:
        raise InvalidInputError(f"{what} {name!r} must not contain the delimiter {delimiter!r}")
    if _has_control_character(name):
        raise InvalidInputError(f"{what} {name!r} must not contain control characters")
    if storage_backed:
        if name in (".", ".."):
            raise InvalidInputError(f"{what} {name!r} is not allowed")
        if any(sep in name for sep in _PATH_SEPARATORS):
            raise InvalidInputError(f"{what} {name!r} must not contain a path separator")
        if ":" in name:
            raise InvalidInputError(f"{what} {name!r} must not contain ':'")
        if "%" in name:
            raise InvalidInputError(f"{what} {name!r} must not contain '%'")
        if len(name.encode("utf-8")) > MAX_STORAGE_NAME_BYTES:
            raise InvalidInputError(
                f"{what} {name[:32]!r}... is longer than {MAX_STORAGE_NAME_BYTES} bytes"
            )
    return name


def validate_identifier(
    parts: Sequence[str] | None,
    *,
    delimiter: str = DEFAULT_DELIMITER,
    storage_backed: bool = False,
    allow_root: bool = True,
    what: str = "identifier",
) -> Identifier:
    """Validate every name of an identifier and return it as a tuple."""
    if parts is None:
        parts = ()
    if isinstance(parts, str) or not isinstance(parts, list | tuple):
        raise InvalidInputError(
            f"{what} must be a list of names, got {type(parts).__name__} {parts!r}"
        )
    plain = _PLAIN_NAME.match
    result = tuple(
        p
        if type(p) is str and plain(p) and (not delimiter or delimiter not in p)
        else validate_name(
            p, delimiter=delimiter, storage_backed=storage_backed, what=f"{what} part"
        )
        for p in parts
    )
    if not result and not allow_root:
        raise InvalidInputError(f"{what} must not be empty")
    return result


def parse_identifier(
    value: str | Sequence[str] | None,
    delimiter: str = DEFAULT_DELIMITER,
) -> Identifier:
    """Turn a string or list identifier into a validated tuple.

    The empty string, ``None`` and the bare delimiter all name the root
    namespace, as the REST protocol addresses it (``/v1/namespace/$/list``).
    """
    if not delimiter:
        raise InvalidInputError("delimiter must not be empty")
    if value is None or value == "" or value == delimiter:
        return ()
    if isinstance(value, str):
        parts = value.split(delimiter)
        if "" in parts:
            # "identifier part must not be empty" would not say which, nor why
            raise InvalidInputError(
                f"identifier {value!r} has an empty name: {delimiter!r} separates names, so a "
                f"leading, trailing or doubled {delimiter!r} leaves one empty"
            )
        try:
            return validate_identifier(parts, delimiter=delimiter)
        except InvalidInputError as exc:
            raise InvalidInputError(f"identifier {value!r}: {exc.message}") from None
    return validate_identifier(value, delimiter=delimiter)


def join_identifier(parts: Sequence[str], delimiter: str = DEFAULT_DELIMITER) -> str:
    """The string form of an identifier; the root is the empty string."""
    return delimiter.join(parts)
