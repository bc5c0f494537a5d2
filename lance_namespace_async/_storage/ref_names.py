"""Branch and tag names as pylance can hold them, checked before pylance sees them.

pylance keeps a branch as ``<table>/tree/<name>`` and a tag as a file named after it: a
name that is no path segment (``.``, ``a//b``) or a very long one (5,000 characters) made
its internal error (500). Here such a name is InvalidInput (code 13), on every backend.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .. import errors

__all__ = ["MAX_REF_NAME_BYTES", "branch_of", "check_ref_names"]

#: the most bytes of a branch or tag name (pylance keeps them as path segments)
MAX_REF_NAME_BYTES = 255
#: a branch or tag name: path segments of letters, digits, ``_``, ``-`` and ``.``,
#: none of them ``.`` or ``..``
_REF_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*(?:/[A-Za-z0-9_][A-Za-z0-9_.-]*)*")


def branch_of(body: Mapping[str, Any]) -> str | None:
    """The branch a request names, or None for main."""
    branch = body.get("branch")
    if branch is None or branch in ("", "main"):
        return None
    if not isinstance(branch, str):
        raise errors.InvalidInputError("branch must be a string")
    return branch


def check_ref_names(operation_id: str, body: Mapping[str, Any]) -> None:
    """Refuse a branch or tag name pylance cannot hold (InvalidInput, code 13)."""
    fields = ["branch"]
    if operation_id in ("CreateTableBranch", "DeleteTableBranch"):
        fields += ["name", "from_branch"]
    if "Tag" in operation_id:
        fields.append("tag")
    for field in fields:
        value = body.get(field)
        if value is None or (field == "branch" and value == ""):
            continue
        if not isinstance(value, str):
            raise errors.InvalidInputError(f"{field} must be a string")
        if len(value.encode()) > MAX_REF_NAME_BYTES:
            raise errors.InvalidInputError(
                f"{field} is longer than {MAX_REF_NAME_BYTES} bytes ({len(value.encode())})"
            )
        if not _REF_NAME.fullmatch(value) or ".." in value or value.endswith(".lock"):
            raise errors.InvalidInputError(
                f"{field} {value[:100]!r} is not a valid name: '/'-separated segments of "
                "letters, digits, '_', '-' and '.', each starting with a letter, digit or '_'"
            )
