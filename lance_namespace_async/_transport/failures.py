"""The typed error of a failed HTTP answer or of a network failure that survived retries.

The body's ``ErrorResponse.code`` decides the exception, else the HTTP status; a body
that is not JSON (a proxy's HTML 502) is still typed. An AlreadyExists after an
ambiguous retry says it may be the call's own doing.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

import httpx

from .. import errors

__all__ = ["error_from_response", "flag_ambiguous", "transport_error"]


def _status_error(status: int) -> type[errors.LanceNamespaceError] | None:
    return {
        400: errors.InvalidInputError,
        401: errors.UnauthenticatedError,
        403: errors.PermissionDeniedError,
        406: errors.UnsupportedOperationError,
        413: errors.InvalidInputError,
        422: errors.InvalidInputError,
        429: errors.ThrottlingError,
        503: errors.ServiceUnavailableError,
    }.get(status)


def error_from_response(
    status: int,
    content: bytes,
    *,
    not_found: type[errors.LanceNamespaceError],
    conflict: type[errors.LanceNamespaceError],
    what: str,
    retried_ambiguously: bool = False,
) -> errors.LanceNamespaceError:
    """The typed error of a failed HTTP response; never a JSON decoding error."""
    message = ""
    error: errors.LanceNamespaceError | None = None
    body: Any = None
    with contextlib.suppress(ValueError, UnicodeDecodeError):
        body = json.loads(content) if content else None
    if isinstance(body, dict):
        nested = body.get("error")
        if isinstance(nested, dict):  # Iceberg-style {"error": {"message", "code"}}
            message = str(nested.get("message") or "")
        else:
            message = str(body.get("error") or body.get("message") or "")
        code = body.get("code")
        detail = body.get("detail") if isinstance(body.get("detail"), str) else None
        instance = body.get("instance") if isinstance(body.get("instance"), str) else None
        if isinstance(code, int) and not isinstance(code, bool) and 0 <= code <= 23:
            text = f"{what}: {message}" if message else what
            error = errors.from_code(code, text, detail=detail, instance=instance)
    if error is None:
        text = f"{what}: {message}" if message else f"{what}: HTTP {status}"
        if status == 404:
            error = not_found(text)
        elif status == 409:
            error = conflict(text)
        elif (cls := _status_error(status)) is not None:
            error = cls(text)
        elif status >= 500:
            error = errors.InternalError(text)
        else:
            error = errors.InvalidInputError(text)
    return flag_ambiguous(error, retried_ambiguously)


def flag_ambiguous(
    error: errors.LanceNamespaceError, retried_ambiguously: bool
) -> errors.LanceNamespaceError:
    """AlreadyExists after an ambiguous retry may be this call's own doing: say so."""
    if not (retried_ambiguously and isinstance(error, errors.AlreadyExistsError)):
        return error
    flagged = type(error)(
        f"{error.message} (an earlier attempt of this call failed ambiguously and may "
        "have created it)",
        detail=error.detail,
        instance=error.instance,
    )
    flagged.retried_ambiguously = True
    return flagged


def transport_error(exc: httpx.HTTPError, what: str) -> errors.LanceNamespaceError:
    """A network failure that survived the retries."""
    if isinstance(exc, httpx.TimeoutException):
        return errors.ServiceUnavailableError(f"{what}: timed out ({type(exc).__name__})")
    return errors.ServiceUnavailableError(f"{what}: {type(exc).__name__}: {exc}")
