"""pylance's side of the interface: its ``lance_namespace`` errors and response models.

pylance and ``lance_namespace`` users catch ``lance_namespace.TableNotFoundError``
and read pydantic response models; ours are typed errors and attrs models. The sync
facade (pylance's ``namespace_client``) and the iceberg backend's managed tables
(pylance calling back into the namespace) both answer pylance in its own types.
"""

from __future__ import annotations

import enum
import functools
import threading
from typing import Any

import lance_namespace

from .. import errors
from .operations import Operation

__all__ = [
    "ArrowIpcQueryTableResponse",
    "Caller",
    "_caller",
    "_compat_error",
    "_peer_answer",
    "_peer_request",
    "_speaks_peer",
]

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


class ArrowIpcQueryTableResponse(bytes):
    """``query_table``'s answer to pylance-style callers: the Arrow IPC file itself,
    which also reads as ``lance_namespace.QueryTableResponse``.

    LanceDB 0.40's pushdown (``namespace_client_pushdown_operations=["QueryTable"]``)
    hands ``query_table``'s answer to ``pyarrow.py_buffer``, which needs bytes; the
    ``lance_namespace`` interface (and pylance's own DirectoryNamespace) answer a
    ``QueryTableResponse`` whose ``.data`` holds those bytes. On Python 3.11 no
    object can be both a pydantic model and a buffer, so this is the bytes with
    the response's reading side: ``.data``, ``model_dump()``, ``to_dict()``.
    ``isinstance(answer, QueryTableResponse)`` is False; read ``.data``.
    """

    __slots__ = ()

    @property
    def data(self) -> bytes:
        """The Arrow IPC file (as ``QueryTableResponse.data``)."""
        return bytes(self)

    def model_dump(self, **_options: Any) -> dict[str, bytes]:
        return {"data": bytes(self)}

    def to_dict(self) -> dict[str, bytes]:
        return {"data": bytes(self)}

    def __repr__(self) -> str:
        return f"ArrowIpcQueryTableResponse(data=<{len(self)} bytes of Arrow IPC>)"


class Caller(enum.Enum):
    """Who is calling, as far as the answer's type goes."""

    OURS = "ours"  # our attrs models or a plain partial dict: our types back
    PEER = "peer"  # lance_namespace's models, pylance's Rust dicts, a model_dump()
    PEER_DICT = "dict"  # a plain dict to an operation pylance types dict -> dict


# pylance's interface names a different model than ours for these operations
_PEER_REQUEST_MODEL = {"list_all_tables": "ListTablesRequest"}
_PEER_RESPONSE_MODEL = {"create_table_scalar_index": "CreateTableIndexResponse"}
# pylance's DirectoryNamespace and RestNamespace take and answer plain dicts here
_DICT_OPERATIONS = frozenset(
    {"create_table_version", "describe_table_version", "batch_delete_table_versions"}
)


def _speaks_peer(request: Any) -> bool:
    """Whether the caller is pylance: its pydantic models, or the dicts its Rust side
    passes (a ``dict`` subclass with ``model_dump``), which want pydantic answers back
    (Rust serialises the answer through ``model_dump``)."""
    return type(request).__module__.startswith(_PEER_MODEL_MODULE) or (
        isinstance(request, dict) and callable(getattr(request, "model_dump", None))
    )


def _caller(operation: Operation, request: Any) -> Caller:
    """Decide which types to answer in, the way pylance's own namespaces would.

    A plain dict gets a dict where pylance's namespaces answer dicts (the version
    operations); a plain dict holding every field of pylance's request model is a
    ``model_dump()`` (pylance's docs and tests call that way) and gets pylance's
    answer; any other plain dict is our users' shorthand and gets our models.
    """
    if _speaks_peer(request):
        return Caller.PEER
    if type(request) is not dict:
        return Caller.OURS
    if operation.method in _DICT_OPERATIONS:
        return Caller.PEER_DICT
    fields = _peer_request_fields(operation)
    if fields and fields.issubset(request):
        return Caller.PEER
    return Caller.OURS


@functools.cache  # asked on every plain-dict call through the facade
def _peer_request_fields(operation: Operation) -> frozenset[str]:
    name = _PEER_REQUEST_MODEL.get(operation.method, operation.request_model)
    model = getattr(lance_namespace, name, None)
    return frozenset(getattr(model, "model_fields", None) or ())


def _peer_request(request: Any) -> Any:
    """A pylance-style dict without its unset fields: ``model_dump()`` writes ``None``
    for every field never set, at any depth, which means "not given"."""
    if isinstance(request, dict):
        return _without_none(request)
    return request


def _without_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _without_none(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_without_none(item) for item in value]
    return value


def _peer_response(operation: Operation, result: Any) -> Any:
    """Our generated response model as the lance_namespace (pydantic) model."""
    name = _PEER_RESPONSE_MODEL.get(operation.method, type(result).__name__)
    peer = getattr(lance_namespace, name, None)
    if peer is None:
        return result
    return peer.from_dict(result.to_dict())


def _peer_answer(operation: Operation, result: Any, caller: Caller = Caller.PEER) -> Any:
    """The answer in the type pylance's own namespaces give for the same call."""
    if caller is Caller.OURS:
        return result
    if caller is Caller.PEER_DICT:
        return result.to_dict()
    if operation.response_body == "string":  # explain/analyze: the plan text itself
        return getattr(result, operation.response_field or "")
    if operation.returns_arrow:  # the IPC file bytes from query_table_ipc
        return ArrowIpcQueryTableResponse(result)
    return _peer_response(operation, result)
