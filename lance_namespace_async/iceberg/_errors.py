"""Iceberg's errors as typed errors: the ErrorModel's ``error.type`` names the condition.

The REST spec's exception names are more precise than the status (a 404 is a missing
namespace or table, a 409 an existing one or a lost commit), so they decide first; an
answer without one falls back to the status, as every HTTP backend does
(:func:`~.._http.error_from_response`). A retry after an ambiguous failure is flagged.
"""

from __future__ import annotations

import httpx

from .. import errors
from .._http import error_from_response, flag_ambiguous

__all__ = ["ICEBERG_ERROR_TYPES", "iceberg_error"]

ICEBERG_ERROR_TYPES: dict[str, type[errors.LanceNamespaceError]] = {
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


def iceberg_error(
    response: httpx.Response,
    what: str,
    not_found: type[errors.LanceNamespaceError],
    conflict: type[errors.LanceNamespaceError],
    retried_ambiguously: bool,
) -> errors.LanceNamespaceError:
    """Iceberg's ErrorModel (``error.type``) names the condition; else the status does."""
    error_type = ""
    message = ""
    try:
        body = response.json()
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            error_type = str(body["error"].get("type") or "")
            message = str(body["error"].get("message") or "")
    except ValueError:
        pass
    cls = ICEBERG_ERROR_TYPES.get(error_type)
    if error_type == "AlreadyExistsException" or (cls is None and response.status_code == 409):
        cls = conflict
    if cls is not None:
        return flag_ambiguous(cls(f"{what}: {message}" if message else what), retried_ambiguously)
    return error_from_response(
        response.status_code,
        response.content,
        not_found=not_found,
        conflict=conflict,
        what=what,
        retried_ambiguously=retried_ambiguously,
    )
