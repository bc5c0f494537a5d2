"""One request observed: its metrics (``_metrics``) and its span (``_tracing``).

The adapter hands each request here only when metrics or tracing are on, so a server
without them pays one attribute test per request. The adapter leaves the route it found in
the ASGI scope (``_access_log.ROUTE_KEY``); a span, named before the adapter runs, routes the path
itself. The error code is read from the ErrorResponse the adapter answered with.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import orjson

from ._access_log import ROUTE_KEY
from ._routes import _decode_segment

if TYPE_CHECKING:
    from ._adapter import _Adapter
    from ._metrics import ServerMetrics
    from ._starlette import Request, Response, Scope

#: the operation label of a request no route matched (or refused before routing)
UNROUTED = "none"


def _route_of(adapter: _Adapter, method: str, path: str) -> tuple[str, str | None]:
    """The operation id and the decoded id of a request, or (UNROUTED, None)."""
    try:
        route, values = adapter._route(method, path)
    except Exception:  # unknown route or method: the adapter answers it
        return UNROUTED, None
    return _named(route, values)


def _named(route: Any, values: dict[str, str]) -> tuple[str, str | None]:
    raw_id = values.get("id")
    return route.operation_id, _decode_segment(raw_id) if raw_id else None


def _code_of(response: Response) -> int | None:
    if response.status_code < 400:
        return None
    try:
        code = orjson.loads(response.body).get("code")
    except (orjson.JSONDecodeError, AttributeError, TypeError):
        return None
    return code if isinstance(code, int) else None


class RequestObserver:
    """Times, counts and traces the requests of one app."""

    def __init__(self, metrics: ServerMetrics | None, tracer: Any | None) -> None:
        self.metrics = metrics
        self.tracer = tracer
        if tracer is not None:
            from opentelemetry import propagate, trace

            self._extract = propagate.extract
            self._trace = trace

    async def __call__(
        self,
        adapter: _Adapter,
        request: Request,
        path: str,
        scope: Scope,
        answer: Callable[[], Awaitable[Response]],
    ) -> Response:
        """Observe ``answer()`` (the adapter answering and sending); return its response."""
        started = time.perf_counter()
        metrics = self.metrics
        if metrics is not None:
            metrics.in_flight.inc()
        span = None
        try:
            if self.tracer is None:
                response = await answer()
            else:
                span, response = await self._traced(adapter, request, path, answer)
        finally:
            if metrics is not None:
                metrics.in_flight.dec()
        code = _code_of(response)
        if span is not None:
            self._finish(span, response.status_code, code)
        if metrics is not None:
            routed = scope.get(ROUTE_KEY)
            operation = routed[0] if routed is not None and routed[0] else UNROUTED
            size = len(response.body) if isinstance(getattr(response, "body", None), bytes) else 0
            metrics.request_done(
                operation, response.status_code, code, time.perf_counter() - started, size
            )
        return response

    async def _traced(
        self,
        adapter: _Adapter,
        request: Request,
        path: str,
        answer: Callable[[], Awaitable[Response]],
    ) -> tuple[Any, Response]:
        trace = self._trace
        operation, identifier = _route_of(adapter, request.method, path)
        # only the trace context headers are read, never another header's value
        carrier = {
            name: value
            for name, value in request.headers.items()
            if name in ("traceparent", "tracestate")
        }
        attributes: dict[str, Any] = {
            "lance.operation": operation,
            "http.request.method": request.method,
        }
        if identifier is not None:
            attributes["lance.id"] = identifier
        assert self.tracer is not None
        with self.tracer.start_as_current_span(
            operation,
            context=self._extract(carrier),
            kind=trace.SpanKind.SERVER,
            attributes=attributes,
            end_on_exit=False,
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            try:
                response = await answer()
            except BaseException as exc:
                span.set_status(trace.Status(trace.StatusCode.ERROR, type(exc).__name__))
                span.end()
                raise
        return span, response

    def _finish(self, span: Any, status: int, code: int | None) -> None:
        span.set_attribute("http.response.status_code", status)
        if code is not None:
            span.set_attribute("lance.error.code", code)
        if status >= 500:
            span.set_status(self._trace.Status(self._trace.StatusCode.ERROR))
        span.end()
