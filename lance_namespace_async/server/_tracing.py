"""OpenTelemetry spans of the server: one per request, one per backend call beneath it.

Off unless configured, and configured the OpenTelemetry way only:

* :func:`configure_from_environment` (``serve`` calls it) hands the standard ``OTEL_*``
  variables to the SDK's own configurator, the one ``opentelemetry-instrument`` runs:
  ``OTEL_TRACES_EXPORTER`` (``otlp``, ``console``...) chooses the exporters,
  ``OTEL_EXPORTER_OTLP_*`` where they send, ``OTEL_SERVICE_NAME`` /
  ``OTEL_RESOURCE_ATTRIBUTES`` the resource, ``OTEL_TRACES_SAMPLER`` the sampling, and
  ``OTEL_SDK_DISABLED=true`` turns it all off. Unset or ``none``: no SDK is loaded.
  ``otlp`` without ``OTEL_EXPORTER_OTLP_PROTOCOL`` means http/protobuf here (the
  ``otel`` extra installs that exporter, not the gRPC one);
* an application embedding :func:`create_app` that set a ``TracerProvider`` of its own
  gets spans too (:func:`tracer`).

The request span continues the trace of the incoming ``traceparent`` (W3C trace
context, through the globally configured propagator) and the catalog HTTP calls under
it carry their own span's ``traceparent`` (``_core.observe``). Spans hold the
operation, the table or namespace id, the status and the protocol code: never a body,
a header's value or a credential.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from .._core import observe

__all__ = ["configure_from_environment", "tracer"]

logger = logging.getLogger("lance_namespace_async.server")

_SCOPE = "lance_namespace_async.server"


def configure_from_environment() -> bool:
    """Set up the OpenTelemetry SDK from the ``OTEL_*`` variables when they ask for traces;
    whether tracing is now on."""
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporters = os.environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if not exporters or exporters == "none":
        return tracer() is not None  # maybe the embedding program set a provider
    try:
        from opentelemetry.sdk._configuration import _OTelSDKConfigurator
    except ImportError as exc:
        from .. import errors

        raise errors.MissingDependencyError(
            "OTEL_TRACES_EXPORTER asks for traces, which need the OpenTelemetry SDK: "
            f"pip install 'lance-namespace-async[otel]' ({exc})"
        ) from exc
    if "otlp" in exporters.split(",") and not (
        os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
    ):
        os.environ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"] = "http/protobuf"
    # the SDK's own reading of OTEL_*: exporters, sampler, resource, batch processor
    _OTelSDKConfigurator().configure()  # type: ignore[no-untyped-call]
    return tracer() is not None


def tracer(provider: Any = None) -> Any | None:
    """The tracer of ``provider`` (default: the globally configured one), or None when
    there is none (then no spans at all, not even the API's no-op ones)."""
    try:
        from opentelemetry import trace
    except ImportError:
        return None
    if provider is None:
        provider = trace.get_tracer_provider()
    if isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
        return None
    return provider.get_tracer(_SCOPE)


class BackendSpans:
    """The backend-call listener (``_core.observe``): a client span per call, the current
    span while it runs, and its ``traceparent`` for the call's outgoing requests."""

    def __init__(self, tracer: Any) -> None:
        from opentelemetry import context, propagate, trace

        self._tracer = tracer
        self._context = context
        self._propagate = propagate
        self._trace = trace
        self._client = trace.SpanKind.CLIENT

    def start(self, backend: str, kind: str, name: str, detail: str | None) -> Any:
        attributes = {"lance.backend": backend, "lance.backend.kind": kind}
        if detail:
            attributes["lance.backend.call"] = detail
        span = self._tracer.start_span(
            f"{backend} {kind} {name}", kind=self._client, attributes=attributes
        )
        context = self._trace.set_span_in_context(span)
        return span, context, self._context.attach(context)

    def end(self, token: Any, error: BaseException | None) -> None:
        span, _, attached = token
        self._context.detach(attached)
        if error is not None:
            span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, type(error).__name__))
            code = getattr(error, "code", None)
            if isinstance(code, int):
                span.set_attribute("lance.error.code", code)
        span.end()

    def headers(self, token: Any, carrier: dict[str, str]) -> None:
        self._propagate.inject(carrier, context=token[1])

    def refused(self, status: int, limit: str) -> None:
        return None


_listening: dict[int, BackendSpans] = {}


def listen_to_backend_calls(tracer: Any) -> BackendSpans:
    """Give every later backend call of this process a span from ``tracer`` (one listener
    per tracer); ``observe.remove_listener`` of what it returns stops that."""
    listener = _listening.get(id(tracer))
    if listener is None or listener._tracer is not tracer:
        listener = _listening[id(tracer)] = BackendSpans(tracer)
    observe.add_listener(listener)
    return listener
