"""pylance's failures as typed errors: the one translation every storage backend uses.

An OS error (in Rust's Debug form or its Display), an unknown object-store scheme,
a missing manifest, column or schema field, a Rust panic: each becomes the
protocol's error (NotFound, PermissionDenied, InvalidInput, Internal) with the
Rust source locations taken out of the message.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from .. import errors

if TYPE_CHECKING:
    pass


_RUST_SOURCE_SUFFIX = re.compile(r",\s*/home/runner/\S+?\.rs:\d+:\d+")


#: pylance's storage failures: an OS error, as Rust's Debug form or as its Display
_OS_ERROR_DEBUG = re.compile(r'Os \{ code: (\d+), kind: \w+, message: "([^"]*)" \}')


_OS_ERROR_DISPLAY = re.compile(r"(?:operation on|path) (\S+?): ([^,(]+?) \(os error (\d+)\)")


_UNKNOWN_SCHEME = re.compile(r"No object store provider found for scheme: '([^']*)'")


#: errnos that mean "this path cannot hold a table or catalog": ENOENT, ENOTDIR,
#: EISDIR, EROFS, ENAMETOOLONG; EPERM and EACCES are a permission problem
_BAD_PATH_ERRNOS = frozenset({2, 20, 21, 30, 36})


_PERMISSION_ERRNOS = frozenset({1, 13})


def storage_failure(exc: BaseException) -> errors.LanceNamespaceError | None:
    """pylance's failure to reach storage as a typed error with a one-line cause.

    pylance reports them as ``InternalError``/``OSError`` whose text is a Rust
    debug dump (source locations of its build machine included). The typed error
    keeps the OS's own words and the path; the full text stays on the exception
    chain (``lance-ns --verbose`` prints it).
    """
    text = str(exc)
    scheme = _UNKNOWN_SCHEME.search(text)
    if scheme:
        return errors.InvalidInputError(f"no storage provider for the scheme {scheme.group(1)!r}")
    display = _OS_ERROR_DISPLAY.search(text)
    debug = _OS_ERROR_DEBUG.search(text)
    if display:
        path, cause, errno = display.group(1), display.group(2), int(display.group(3))
        message = f"{cause} (at {path})"
    elif debug:
        errno, message = int(debug.group(1)), debug.group(2)
    else:
        return None
    if errno in _PERMISSION_ERRNOS:
        return errors.PermissionDeniedError(message)
    if errno in _BAD_PATH_ERRNOS:
        return errors.InvalidInputError(message)
    return errors.InternalError(f"storage error: {message}")


_MISSING_MANIFEST = re.compile(r"_versions/\d+\.manifest was not found")


_MISSING_COLUMN = re.compile(r"Column \S+ does not exist")


_NOT_IN_SCHEMA = re.compile(r"\S+ not found in schema")


def _data_failure(exc: BaseException, message: str) -> errors.LanceNamespaceError | None:
    """A failure of pylance's dataset API (not its namespace) that is the caller's.

    The dataset API raises plain ValueError/OSError/KeyError/RuntimeError; their
    words say what went wrong: rows of another schema (20), a filter or expression
    it cannot use (13), a missing or existing tag (8, 9), a missing version (11), a
    missing index (6) or column (12).
    """
    if "with different schema" in message or "SchemaMismatch" in message:
        return errors.TableSchemaValidationError(message)
    if "Invalid user input" in message or "LanceError(Schema)" in message:
        return errors.InvalidInputError(message)  # pylance's words for a caller's mistake
    if "Ref not found" in message:
        return errors.TableTagNotFoundError(message)
    if "Ref conflict" in message:
        return errors.TableTagAlreadyExistsError(message)
    if "Version not found" in message or _MISSING_MANIFEST.search(message):
        return errors.TableVersionNotFoundError(message)
    if "Failed to open dataset" in message and "was not found" in message:
        # a declared table (or one whose data went away): nothing to read or change yet;
        # 4, as pylance's namespace answers the other data operations on such a table
        return errors.TableNotFoundError(
            "the table has no Lance data at its location yet (a declared table has none "
            "until data is written)"
        )
    lowered = message.lower()
    if "index" in lowered and "not found" in lowered and isinstance(exc, KeyError | RuntimeError):
        return errors.TableIndexNotFoundError(message.strip("'\""))
    if isinstance(exc, ValueError) and _MISSING_COLUMN.search(message):
        return errors.TableColumnNotFoundError(message)
    if isinstance(exc, KeyError) and _NOT_IN_SCHEMA.search(message):
        # create_scalar_index/create_index on a column the table does not have
        return errors.TableColumnNotFoundError(message.strip("'\""))
    return None


#: a filter or expression naming a column the table lacks: the query engine's words, as
#: Rust Debug text (``FieldNotFound { field: Column { relation: None, name: "x" }, ...``,
#: every valid field listed) or as prose (``No field named x. Valid fields are ...``)
_FIELD_NOT_FOUND = re.compile(
    r'FieldNotFound \{ field: Column \{ relation: [^,]*, name: "([^"]{1,200})"'
    r"|No field named ([^\s]{1,200}?)\.? Valid fields"
)
#: how much of the engine's text an error keeps as its ``detail``
_DETAIL_CHARS = 300


#: serde's words when a request (a dict pylance turns into its Rust model) does not fit
_SERDE_REQUEST = re.compile(
    r"(missing field|unknown field|unknown variant|invalid type|invalid value|invalid length)"
    r" `?"
)


def _unknown_column(message: str) -> str | None:
    found = _FIELD_NOT_FOUND.search(message)
    if found is None:
        return None
    return (found.group(1) or found.group(2)).strip("\"'`")


def is_native_panic(exc: BaseException) -> bool:
    """Whether ``exc`` is a Rust panic pyo3 raised (``PanicException``, a BaseException)."""
    return type(exc).__name__ == "PanicException"


#: Rust's ``Location { file: "...", line: N, column: N }`` (a source position in a message)
_RUST_LOCATION = re.compile(r",?\s*location:\s*Location\s*\{[^}]*\}|Location\s*\{[^}]*\}")


def translate(exc: BaseException) -> errors.LanceNamespaceError:
    """Turn an exception of pylance or the OS into our typed error."""
    if isinstance(exc, errors.LanceNamespaceError):
        return exc
    code = getattr(exc, "code", None)
    untyped = code is None or code == errors.ErrorCode.INTERNAL
    if untyped and not isinstance(exc, FileNotFoundError | PermissionError):
        storage = storage_failure(exc)
        if storage is not None:
            return storage
    message = _RUST_LOCATION.sub("", _RUST_SOURCE_SUFFIX.sub("", str(exc)))
    if is_native_panic(exc):  # the native code failed, not the request
        return errors.InternalError(f"the storage engine failed: {message}")
    column = _unknown_column(message)
    if column is not None:
        return errors.InvalidInputError(
            f"the table has no column {column!r} (a filter or expression of the request "
            "refers to it)",
            detail=message[:_DETAIL_CHARS],
        )
    if isinstance(code, int) and type(exc).__module__.startswith("lance_namespace"):
        if code == errors.ErrorCode.INTERNAL:
            # pylance 14.0.2 reports a caller's mistake inside a data operation as
            # Internal: a filter Lance cannot parse, rows of another schema
            reason = message.removeprefix("Internal error: ")
            if "InvalidInput {" in message:
                return errors.InvalidInputError(reason)
            if "with different schema" in message or "SchemaMismatch" in message:
                return errors.TableSchemaValidationError(reason)
        return errors.from_code(int(code), message)
    data = _data_failure(exc, message)
    if data is not None:
        return data
    if type(exc) is Exception and _SERDE_REQUEST.match(message):
        # pylance could not read the request into its Rust model (a nested object
        # without a field its type requires, an unknown variant): the request is wrong
        return errors.InvalidInputError(f"the request does not fit the protocol: {message}")
    if "JSON number out of range" in message:  # a number serde_json cannot hold
        return errors.InvalidInputError(f"a number of the request is out of range: {message}")
    if isinstance(exc, OverflowError):  # a number pylance cannot hold (k=10**20, ...)
        return errors.InvalidInputError(f"a number of the request is out of range: {message}")
    if isinstance(exc, NotImplementedError):
        return errors.UnsupportedOperationError(message)
    if isinstance(exc, FileNotFoundError):
        return errors.TableNotFoundError(message)
    if isinstance(exc, PermissionError):
        return errors.PermissionDeniedError(message)
    return errors.InternalError(f"{type(exc).__name__}: {message}")
