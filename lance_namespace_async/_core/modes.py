"""Case-insensitive operation modes of the protocol.

``Create``, ``CREATE``, ``create`` are one value, and so are ``ExistOk``,
``EXIST_OK`` and ``exist_ok``: the protocol and its implementations accept every
form. Clients send the PascalCase spelling returned here.
"""

from __future__ import annotations

from typing import Any

from ..errors import InvalidInputError

__all__ = [
    "CREATE_MODES",
    "DROP_BEHAVIORS",
    "DROP_MODES",
    "REGISTER_MODES",
    "parse_mode",
]

CREATE_MODES = ("Create", "ExistOk", "Overwrite")
REGISTER_MODES = ("Create", "Overwrite")
DROP_MODES = ("Fail", "Skip")
DROP_BEHAVIORS = ("Restrict", "Cascade")


def _fold(value: str) -> str:
    return value.replace("_", "").replace("-", "").lower()


def parse_mode(value: Any, allowed: tuple[str, ...], *, default: str, what: str = "mode") -> str:
    """Return the PascalCase form of ``value`` (``default`` when unset)."""
    if value is None or value == "" or type(value).__name__ == "Unset":
        return default
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be a string, got {type(value).__name__}")
    folded = _fold(value)
    for candidate in allowed:
        if _fold(candidate) == folded:
            return candidate
    raise InvalidInputError(f"invalid {what} {value!r}; expected one of {', '.join(allowed)}")
