"""Typed errors of the Lance Namespace protocol.

Every error a backend raises is a :class:`LanceNamespaceError` carrying the
protocol's integer ``code`` (the ``ErrorResponse.code`` of the REST protocol),
so callers can catch one base class or one precise condition, whichever backend
is behind the namespace::

    LanceNamespaceError                    (base; .code, .http_status)
    ├── UnsupportedOperationError          0   406
    │   └── MissingDependencyError             (also ImportError: a pip extra is missing)
    ├── NotFoundError                          (abstract: any "not found")
    │   ├── NamespaceNotFoundError         1   404
    │   ├── TableNotFoundError             4   404
    │   ├── TableIndexNotFoundError        6   404
    │   ├── TableTagNotFoundError          8   404
    │   ├── TransactionNotFoundError      10   404
    │   ├── TableVersionNotFoundError     11   404
    │   ├── TableColumnNotFoundError      12   404
    │   └── TableBranchNotFoundError      22   404
    ├── AlreadyExistsError                     (abstract: any "already exists")
    │   ├── NamespaceAlreadyExistsError    2   409
    │   ├── TableAlreadyExistsError        5   409
    │   ├── TableIndexAlreadyExistsError   7   409
    │   ├── TableTagAlreadyExistsError     9   409
    │   └── TableBranchAlreadyExistsError 23   409
    ├── NamespaceNotEmptyError             3   409
    ├── InvalidInputError                 13   400
    ├── ConcurrentModificationError       14   409
    ├── PermissionDeniedError             15   403
    ├── UnauthenticatedError              16   401
    ├── ServiceUnavailableError           17   503
    ├── InternalError                     18   500
    ├── InvalidTableStateError            19   409
    ├── TableSchemaValidationError        20   400
    └── ThrottlingError                   21   429

Messages never carry secrets: backends build them from identifiers and
server messages only, and :func:`redact` scrubs anything that looks like a
credential before it reaches an exception.
"""

from __future__ import annotations

import re
from typing import ClassVar

__all__ = [
    "AlreadyExistsError",
    "ConcurrentModificationError",
    "ErrorCode",
    "InternalError",
    "InvalidInputError",
    "InvalidTableStateError",
    "LanceNamespaceError",
    "MissingDependencyError",
    "NamespaceAlreadyExistsError",
    "NamespaceNotEmptyError",
    "NamespaceNotFoundError",
    "NotFoundError",
    "PermissionDeniedError",
    "ServiceUnavailableError",
    "TableAlreadyExistsError",
    "TableBranchAlreadyExistsError",
    "TableBranchNotFoundError",
    "TableColumnNotFoundError",
    "TableIndexAlreadyExistsError",
    "TableIndexNotFoundError",
    "TableNotFoundError",
    "TableSchemaValidationError",
    "TableTagAlreadyExistsError",
    "TableTagNotFoundError",
    "TableVersionNotFoundError",
    "ThrottlingError",
    "TransactionNotFoundError",
    "UnauthenticatedError",
    "UnsupportedOperationError",
    "from_code",
    "redact",
]


class ErrorCode:
    """The protocol's integer error codes, by name."""

    UNSUPPORTED = 0
    NAMESPACE_NOT_FOUND = 1
    NAMESPACE_ALREADY_EXISTS = 2
    NAMESPACE_NOT_EMPTY = 3
    TABLE_NOT_FOUND = 4
    TABLE_ALREADY_EXISTS = 5
    TABLE_INDEX_NOT_FOUND = 6
    TABLE_INDEX_ALREADY_EXISTS = 7
    TABLE_TAG_NOT_FOUND = 8
    TABLE_TAG_ALREADY_EXISTS = 9
    TRANSACTION_NOT_FOUND = 10
    TABLE_VERSION_NOT_FOUND = 11
    TABLE_COLUMN_NOT_FOUND = 12
    INVALID_INPUT = 13
    CONCURRENT_MODIFICATION = 14
    PERMISSION_DENIED = 15
    UNAUTHENTICATED = 16
    SERVICE_UNAVAILABLE = 17
    INTERNAL = 18
    INVALID_TABLE_STATE = 19
    TABLE_SCHEMA_VALIDATION_ERROR = 20
    THROTTLING = 21
    TABLE_BRANCH_NOT_FOUND = 22
    TABLE_BRANCH_ALREADY_EXISTS = 23


_SECRET_PATTERNS = (
    # key=value / key: value pairs whose key names a secret
    re.compile(
        r"(?i)\b([\w.-]*(?:secret|token|password|passwd|credential|api[_-]?key|"
        r"access[_-]?key|session[_-]?key|authorization)[\w.-]*)(\s*[=:]\s*)"
        # "Authorization: Bearer <value>": the scheme is a word, the next pattern takes the value
        r"(?!(?:bearer|basic)\s)(\"[^\"]*\"|'[^']*'|[^\s,;&\"'}]+)"
    ),
    # an Authorization value; "missing bearer token" is prose, not a credential
    re.compile(
        r"(?i)\b(bearer|basic)(\s+)"
        r"(?!(?:token|tokens|auth|authentication|authorization|scheme|header|credentials?)\b)"
        r"([A-Za-z0-9._~+/=-]+)"
    ),
    # user:password@ in URLs
    re.compile(r"(//[^/\s:@]+:)([^@\s/]+)(@)"),
)

REDACTED = "***"


def redact(text: str) -> str:
    """Scrub values that look like credentials out of ``text``.

    Used on every message that may echo server or user input, so a token
    pasted into the wrong field never ends up in a log line or traceback.
    """
    text = _SECRET_PATTERNS[1].sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)
    text = _SECRET_PATTERNS[0].sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)
    return _SECRET_PATTERNS[2].sub(lambda m: f"{m.group(1)}{REDACTED}{m.group(3)}", text)


class LanceNamespaceError(Exception):
    """Base of every error raised by lance-namespace-async.

    ``code`` is the protocol's integer error code; ``detail`` an optional longer
    explanation; ``instance`` identifies the occurrence (a request id or route).
    """

    code: ClassVar[int] = ErrorCode.INTERNAL
    http_status: ClassVar[int] = 500
    #: True when a retried non-idempotent call got this after an ambiguous failure
    #: (its own earlier attempt may have succeeded): check the object's state
    retried_ambiguously: bool = False

    def __init__(
        self,
        message: str = "",
        *,
        detail: str | None = None,
        instance: str | None = None,
    ) -> None:
        self.message = redact(message) if message else type(self).__name__
        self.detail = redact(detail) if detail else None
        self.instance = instance
        super().__init__(self.message)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code}, message={self.message!r})"

    def to_error_response(self) -> dict[str, object]:
        """The protocol's ``ErrorResponse`` body for this error."""
        body: dict[str, object] = {"code": self.code, "error": self.message}
        if self.detail:
            body["detail"] = self.detail
        if self.instance:
            body["instance"] = self.instance
        return body


class NotFoundError(LanceNamespaceError):
    """An object the call names does not exist."""

    http_status = 404


class AlreadyExistsError(LanceNamespaceError):
    """An object the call would create exists already."""

    http_status = 409


class UnsupportedOperationError(LanceNamespaceError):
    code = ErrorCode.UNSUPPORTED
    http_status = 406


class MissingDependencyError(UnsupportedOperationError, ImportError):
    """A backend's optional dependencies are not installed; the message names the extra."""

    @classmethod
    def for_extra(cls, what: str, extra: str, missing: ImportError) -> MissingDependencyError:
        """``what`` (``impl 'glue'``) needs the extra ``extra``; ``missing`` is the
        ImportError that showed it: one sentence naming the module and the command."""
        module = missing.name or str(missing)
        return cls(
            f"{what} needs the optional dependency {module!r}, which is not installed: "
            f"pip install 'lance-namespace-async[{extra}]' "
            f"(from a clone: pip install -e '.[{extra}]')"
        )


class NamespaceNotFoundError(NotFoundError):
    code = ErrorCode.NAMESPACE_NOT_FOUND


class NamespaceAlreadyExistsError(AlreadyExistsError):
    code = ErrorCode.NAMESPACE_ALREADY_EXISTS


class NamespaceNotEmptyError(LanceNamespaceError):
    code = ErrorCode.NAMESPACE_NOT_EMPTY
    http_status = 409


class TableNotFoundError(NotFoundError):
    code = ErrorCode.TABLE_NOT_FOUND


class TableAlreadyExistsError(AlreadyExistsError):
    code = ErrorCode.TABLE_ALREADY_EXISTS


class TableIndexNotFoundError(NotFoundError):
    code = ErrorCode.TABLE_INDEX_NOT_FOUND


class TableIndexAlreadyExistsError(AlreadyExistsError):
    code = ErrorCode.TABLE_INDEX_ALREADY_EXISTS


class TableTagNotFoundError(NotFoundError):
    code = ErrorCode.TABLE_TAG_NOT_FOUND


class TableTagAlreadyExistsError(AlreadyExistsError):
    code = ErrorCode.TABLE_TAG_ALREADY_EXISTS


class TransactionNotFoundError(NotFoundError):
    code = ErrorCode.TRANSACTION_NOT_FOUND


class TableVersionNotFoundError(NotFoundError):
    code = ErrorCode.TABLE_VERSION_NOT_FOUND


class TableColumnNotFoundError(NotFoundError):
    code = ErrorCode.TABLE_COLUMN_NOT_FOUND


class InvalidInputError(LanceNamespaceError):
    code = ErrorCode.INVALID_INPUT
    http_status = 400


class ConcurrentModificationError(LanceNamespaceError):
    code = ErrorCode.CONCURRENT_MODIFICATION
    http_status = 409


class PermissionDeniedError(LanceNamespaceError):
    code = ErrorCode.PERMISSION_DENIED
    http_status = 403


class UnauthenticatedError(LanceNamespaceError):
    code = ErrorCode.UNAUTHENTICATED
    http_status = 401


class ServiceUnavailableError(LanceNamespaceError):
    code = ErrorCode.SERVICE_UNAVAILABLE
    http_status = 503


class InternalError(LanceNamespaceError):
    code = ErrorCode.INTERNAL
    http_status = 500


class InvalidTableStateError(LanceNamespaceError):
    code = ErrorCode.INVALID_TABLE_STATE
    http_status = 409


class TableSchemaValidationError(LanceNamespaceError):
    code = ErrorCode.TABLE_SCHEMA_VALIDATION_ERROR
    http_status = 400


class ThrottlingError(LanceNamespaceError):
    code = ErrorCode.THROTTLING
    http_status = 429


class TableBranchNotFoundError(NotFoundError):
    code = ErrorCode.TABLE_BRANCH_NOT_FOUND


class TableBranchAlreadyExistsError(AlreadyExistsError):
    code = ErrorCode.TABLE_BRANCH_ALREADY_EXISTS


_BY_CODE: dict[int, type[LanceNamespaceError]] = {
    cls.code: cls
    for cls in (
        UnsupportedOperationError,
        NamespaceNotFoundError,
        NamespaceAlreadyExistsError,
        NamespaceNotEmptyError,
        TableNotFoundError,
        TableAlreadyExistsError,
        TableIndexNotFoundError,
        TableIndexAlreadyExistsError,
        TableTagNotFoundError,
        TableTagAlreadyExistsError,
        TransactionNotFoundError,
        TableVersionNotFoundError,
        TableColumnNotFoundError,
        InvalidInputError,
        ConcurrentModificationError,
        PermissionDeniedError,
        UnauthenticatedError,
        ServiceUnavailableError,
        InternalError,
        InvalidTableStateError,
        TableSchemaValidationError,
        ThrottlingError,
        TableBranchNotFoundError,
        TableBranchAlreadyExistsError,
    )
}


def error_class(code: int) -> type[LanceNamespaceError]:
    """The exception class of a protocol code; unknown codes are Internal."""
    return _BY_CODE.get(code, InternalError)


def from_code(
    code: int,
    message: str = "",
    *,
    detail: str | None = None,
    instance: str | None = None,
) -> LanceNamespaceError:
    """Build the typed error for a protocol code (an unknown code gives InternalError)."""
    return error_class(code)(message, detail=detail, instance=instance)
