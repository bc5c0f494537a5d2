"""pylance's side of the interface: its ``lance_namespace`` errors and response models.

pylance and ``lance_namespace`` users catch ``lance_namespace.TableNotFoundError``
and read pydantic response models; ours are typed errors and attrs models. The sync
facade (pylance's ``namespace_client``) and the iceberg backend's managed tables
(pylance calling back into the namespace) both answer pylance in its own types.
"""

from __future__ import annotations

import threading
from typing import Any

import lance_namespace

from .. import errors
from .operations import Operation

__all__ = ["_compat_error", "_peer_answer", "_speaks_peer"]

_PEER_MODEL_MODULE = "lance_namespace_urllib3_client"
_compat_classes: dict[type[errors.LanceNamespaceError], type[errors.LanceNamespaceError]] = {}
_compat_lock = threading.Lock()


def _compat_error(exc: errors.LanceNamespaceError) -> errors.LanceNamespaceError:
    """The same error, also an instance of lance_namespace's class for its code.

    pylance and lance_namespace users catch ``lance_namespace.TableNotFoundError``;
    our users catch ours. One object satisfies both.
    """
    cls = type(exc)
    with _compat_lock:
        compat = _compat_classes.get(cls)
        if compat is None:
            peer = lance_namespace.errors.from_error_code(exc.code, "").__class__
            compat = type(cls.__name__, (cls, peer), {"__module__": cls.__module__})
            _compat_classes[cls] = compat
    twin = compat(exc.message, detail=exc.detail, instance=exc.instance)
    twin.code = exc.code  # type: ignore[misc]
    return twin


def _peer_response(result: Any) -> Any:
    """Our generated response model as the lance_namespace (pydantic) model."""
    peer = getattr(lance_namespace, type(result).__name__, None)
    if peer is None:
        return result
    return peer.from_dict(result.to_dict())


def _speaks_peer(request: Any) -> bool:
    """Whether the caller is pylance: its pydantic models, or the dicts its Rust side
    passes (a ``dict`` subclass with ``model_dump``), which want pydantic answers back
    (Rust serialises the answer through ``model_dump``)."""
    return type(request).__module__.startswith(_PEER_MODEL_MODULE) or (
        isinstance(request, dict) and callable(getattr(request, "model_dump", None))
    )


def _peer_answer(operation: Operation, result: Any) -> Any:
    """The answer in the type pylance's ``LanceNamespace`` interface declares."""
    if operation.response_body == "string":  # explain/analyze: the plan text itself
        return getattr(result, operation.response_field or "")
    return _peer_response(result)
