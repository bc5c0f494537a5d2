"""Glue's failures as this SDK's typed errors.

Glue names a failure by its error code; seed 004 asks for access denied as code 16
and an unavailable service as 17 (throttling is 21). What "not found" and "already
exists" mean depends on the call (a namespace or a table), so each call routes them.
Apart from the client so that the whole translation, and the test of whether an
endpoint lacks an operation, reads in one place.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import errors
from .._transport.failures import flag_ambiguous

if TYPE_CHECKING:
    from botocore.exceptions import ClientError

__all__ = ["NoCatalogApis", "glue_error", "unknown_operation"]

#: error codes of endpoints that do not know an operation
_UNKNOWN_OPERATION_CODES = frozenset(
    {
        "UnknownOperationException",
        "UnknownOperation",
        "InvalidAction",
        "InvalidActionException",
        "UnsupportedOperation",
        "UnsupportedOperationException",
        "NotImplemented",
        "NotImplementedException",
    }
)

_GLUE_CODES: dict[str, type[errors.LanceNamespaceError]] = {
    "AccessDeniedException": errors.UnauthenticatedError,  # code 16, as seed 004 says
    "UnrecognizedClientException": errors.UnauthenticatedError,
    "InvalidSignatureException": errors.UnauthenticatedError,
    "IncompleteSignature": errors.UnauthenticatedError,
    "IncompleteSignatureException": errors.UnauthenticatedError,
    "MissingAuthenticationTokenException": errors.UnauthenticatedError,
    "SignatureDoesNotMatch": errors.UnauthenticatedError,
    "InvalidClientTokenId": errors.UnauthenticatedError,
    "ExpiredTokenException": errors.UnauthenticatedError,
    "ThrottlingException": errors.ThrottlingError,
    "ResourceNumberLimitExceededException": errors.ThrottlingError,
    "InternalServiceException": errors.ServiceUnavailableError,
    "ServiceUnavailableException": errors.ServiceUnavailableError,
    "OperationTimeoutException": errors.ServiceUnavailableError,
    "InvalidInputException": errors.InvalidInputError,
    "ValidationException": errors.InvalidInputError,
    "ConcurrentModificationException": errors.ConcurrentModificationError,
    "FederationSourceException": errors.ServiceUnavailableError,
}


class NoCatalogApis(errors.UnsupportedOperationError):
    """The endpoint has no catalog APIs: namespaces are databases on this connection."""


def unknown_operation(exc: ClientError) -> bool:
    """Whether an answer says the endpoint lacks the operation (not that an entity does)."""
    error = exc.response.get("Error") or {}
    code = str(error.get("Code") or "")
    if code in _UNKNOWN_OPERATION_CODES:
        return True
    # no AWS error document, only a status (botocore then uses it as the code): an HTML
    # page of a 500 (moto: "The ... action has not been implemented"), or 404/405/501
    status = int((exc.response.get("ResponseMetadata") or {}).get("HTTPStatusCode") or 0)
    message = str(error.get("Message") or "").lstrip()
    if code != str(status):
        return False
    return status in (404, 405, 501) or (status == 500 and message.startswith("<"))


def glue_error(
    exc: ClientError,
    what: str,
    *,
    not_found: type[errors.LanceNamespaceError] = errors.InternalError,
    exists: type[errors.LanceNamespaceError] = errors.ConcurrentModificationError,
) -> errors.LanceNamespaceError:
    """The typed error of a Glue (or STS) error answer."""
    error = exc.response.get("Error") or {}
    code = str(error.get("Code") or "")
    message = str(error.get("Message") or "")
    text = f"{what}: {message}" if message else f"{what}: {code}"
    if code == "EntityNotFoundException":
        return not_found(text)
    if code in ("AlreadyExistsException", "ResourceAlreadyExistsException"):
        # botocore retries every call (creates too) after resets, timeouts and 5xx:
        # the earlier attempt may have created what the retry finds
        retried = int((exc.response.get("ResponseMetadata") or {}).get("RetryAttempts") or 0)
        return flag_ambiguous(exists(text), retried > 0)
    cls = _GLUE_CODES.get(code)
    if cls is not None:
        return cls(text)
    status = int((exc.response.get("ResponseMetadata") or {}).get("HTTPStatusCode") or 500)
    if status in (502, 503, 504):
        return errors.ServiceUnavailableError(text)
    if status == 429:
        return errors.ThrottlingError(text)
    if 400 <= status < 500:
        return errors.InvalidInputError(text)
    return errors.InternalError(text)
