"""One REST call of a hand-written catalog backend (iceberg, unity), written once for both.

A call goes through the backend's :class:`~.transport.HttpTransport`, which owns the
policy: the call's deadline, retries of what is safe to retry, auth, and an answer
read within ``max_response_bytes``. What the catalogs then do alike lives here:

* a 2xx answer's body is decoded as a JSON object; an answer that is not JSON, not an
  object, or too large is :class:`~.errors.InternalError` (18) naming the call and the
  catalog: the catalog's answer is unusable, and asking again gets the same answer;
* any other status is a typed error. The backend's :data:`Classifier` reads the error
  body in the catalog's own dialect (Iceberg's ``error.type``, Unity's ``error_code``),
  which is more precise than the status; without a verdict there, the status decides
  (:func:`~.failures.error_from_response`: 404 is the call's ``not_found``, 409 its
  ``conflict``). An AlreadyExists after an ambiguous retry says so
  (:func:`~.failures.flag_ambiguous`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import Any

import httpx
import orjson

from .. import errors
from .failures import error_from_response, flag_ambiguous
from .transport import HttpTransport

__all__ = ["CatalogHttp", "Classifier", "ErrorClass"]

ErrorClass = type[errors.LanceNamespaceError]

#: ``(status, error body, not_found, conflict) -> (class or None, message)``: the error a
#: failed answer's JSON object names in the catalog's dialect, and the catalog's message
Classifier = Callable[[int, dict[str, Any], ErrorClass, ErrorClass], tuple[ErrorClass | None, str]]


class CatalogHttp:
    """The calls of one catalog backend: ``send`` for an answer whose body is not
    needed (HEAD, DELETE, commits), ``call`` for its JSON object."""

    __slots__ = ("_classify", "catalog", "transport")

    def __init__(self, transport: HttpTransport, *, catalog: str, classify: Classifier) -> None:
        self.transport = transport
        #: how messages name the server: "the Iceberg catalog", "Unity"
        self.catalog = catalog
        self._classify = classify

    async def send(
        self,
        method: str,
        path: str,
        *,
        what: str,
        idempotent: bool,
        not_found: ErrorClass,
        conflict: ErrorClass = errors.ConcurrentModificationError,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> httpx.Response:
        """The 2xx answer of one call, else its typed error."""
        try:
            response, state = await self.transport.request(
                method,
                path,
                what=what,
                idempotent=idempotent,
                params=params,
                json=json,
                headers=headers,
            )
        except errors.InternalError as exc:  # the answer was unreadable (too large, say)
            raise errors.InternalError(f"{what}: {exc.message}") from None
        if response.status_code < 300:
            return response
        raise self.error(response, what, not_found, conflict, state.retried_ambiguously)

    async def call(self, method: str, path: str, *, what: str, **options: Any) -> dict[str, Any]:
        """The JSON object one call answers, else its typed error (``options``: those of
        :meth:`send`)."""
        response = await self.send(method, path, what=what, **options)
        return self.decode(response.content, what)

    def decode(self, content: bytes, what: str) -> dict[str, Any]:
        """A 2xx answer's JSON object (InternalError for anything else)."""
        try:
            body = orjson.loads(content)
        except orjson.JSONDecodeError:  # not JSON, not UTF-8, or nested past 1,024 levels
            raise errors.InternalError(f"{what}: {self.catalog} sent no JSON") from None
        if not isinstance(body, dict):
            raise errors.InternalError(
                f"{what}: {self.catalog} sent a JSON {type(body).__name__} where an object belongs"
            )
        return body

    def error(
        self,
        response: httpx.Response,
        what: str,
        not_found: ErrorClass,
        conflict: ErrorClass,
        retried_ambiguously: bool,
    ) -> errors.LanceNamespaceError:
        """The typed error of a failed answer: the catalog's own error body first."""
        body: Any = None
        with contextlib.suppress(orjson.JSONDecodeError):  # a proxy's HTML: the status decides
            body = orjson.loads(response.content) if response.content else None
        if isinstance(body, dict):
            cls, message = self._classify(response.status_code, body, not_found, conflict)
            if cls is not None:
                text = f"{what}: {message}" if message else what
                return flag_ambiguous(cls(text), retried_ambiguously)
        return error_from_response(
            response.status_code,
            response.content,
            not_found=not_found,
            conflict=conflict,
            what=what,
            retried_ambiguously=retried_ambiguously,
        )
