"""Iceberg's errors as typed errors: the ErrorModel's ``error.type`` names the condition.

The REST spec's exception names are more precise than the status (a 404 is a missing
namespace or table, a 409 an existing one or a lost commit), so they decide first; an
answer without one falls back to the status, as every HTTP backend does
(:mod:`.._transport.catalog`, which also flags a retry after an ambiguous failure).
"""

from __future__ import annotations

from typing import Any

from .. import errors
from .._transport.catalog import ErrorClass

__all__ = ["ICEBERG_ERROR_TYPES", "classify_iceberg_error"]

ICEBERG_ERROR_TYPES: dict[str, ErrorClass] = {
    "NoSuchNamespaceException": errors.NamespaceNotFoundError,
    "NoSuchTableException": errors.TableNotFoundError,
    "NoSuchViewException": errors.TableNotFoundError,
    "NamespaceNotEmptyException": errors.NamespaceNotEmptyError,
    "CommitFailedException": errors.ConcurrentModificationError,
    "CommitStateUnknownException": errors.ServiceUnavailableError,
    "NotAuthorizedException": errors.UnauthenticatedError,
    "ForbiddenException": errors.PermissionDeniedError,
    "BadRequestException": errors.InvalidInputError,
    "IllegalArgumentException": errors.InvalidInputError,
    "ValidationException": errors.InvalidInputError,
    "ServiceUnavailableException": errors.ServiceUnavailableError,
    "UnsupportedOperationException": errors.UnsupportedOperationError,
}


def classify_iceberg_error(
    status: int, body: dict[str, Any], not_found: ErrorClass, conflict: ErrorClass
) -> tuple[ErrorClass | None, str]:
    """The class ``{"error": {"type", "message"}}`` names (AlreadyExists: the call's
    ``conflict``; any 409 without a known type too), and the message."""
    error_type = message = ""
    nested = body.get("error")
    if isinstance(nested, dict):
        error_type = str(nested.get("type") or "")
        message = str(nested.get("message") or "")
    cls = ICEBERG_ERROR_TYPES.get(error_type)
    if error_type == "AlreadyExistsException" or (cls is None and status == 409):
        cls = conflict
    return cls, message
