"""The operation table: every operation of spec/rest.yaml, read from the generated package.

``scripts/codegen.py`` derives ``operations.json`` from spec/rest.yaml next to the
client it generates (``--check`` keeps both in step), and this module turns it into
:data:`OPERATIONS`. Everything that enumerates operations uses it: the public
coroutines of :class:`~lance_namespace_async.AsyncLanceNamespace`, the sync facade,
the adapter server's routes, the REST backend's calls, the conformance kit and the
CLI. Adding an operation to the spec is a change there plus its implementations.
"""

from __future__ import annotations

import functools
import importlib
import json
from dataclasses import dataclass
from importlib import resources
from typing import Any, Literal

__all__ = [
    "OPERATIONS",
    "OPERATIONS_BY_ID",
    "OPERATIONS_BY_METHOD",
    "Operation",
    "QueryParam",
    "generated_module",
]

#: how a request travels: JSON model, nothing (path and query only), an Arrow IPC
#: stream (fields in the query), or one field of the model as the bare JSON body
RequestBody = Literal["json", "none", "arrow", "object"]
#: how the answer travels: JSON model, nothing (the status), an Arrow IPC file, or
#: one field of the response model as a bare JSON value
ResponseBody = Literal["json", "empty", "arrow", "integer", "string", "object"]


@dataclass(frozen=True, slots=True)
class QueryParam:
    """A query parameter of an operation: its name, JSON type and whether it is required."""

    name: str
    kind: Literal["string", "integer", "boolean"]
    required: bool


@dataclass(frozen=True, slots=True)
class Operation:
    """One operation of spec/rest.yaml."""

    #: the spec's operationId, e.g. ``InsertIntoTable``
    operation_id: str
    #: the snake_case method name, e.g. ``insert_into_table``
    method: str
    #: HTTP method and path template of the route
    http_method: str
    path: str
    #: module of the generated client under ``lance_namespace_rest_client.api``
    api_module: str
    #: whether a client may retry it blindly (``x-idempotent``)
    idempotent: bool
    path_params: tuple[str, ...]
    query_params: tuple[QueryParam, ...]
    request_body: RequestBody
    #: the request model's field that is the bare body (``request_body == "object"``)
    request_field: str | None
    request_model: str
    response_model: str
    response_body: ResponseBody
    #: the response model's field the bare answer fills (integer/string/object answers)
    response_field: str | None
    success_status: int

    @property
    def takes_data(self) -> bool:
        """Whether the operation carries Arrow rows (``create_table(request, data)``)."""
        return self.request_body == "arrow"

    @property
    def returns_arrow(self) -> bool:
        return self.response_body == "arrow"

    @property
    def query_names(self) -> tuple[str, ...]:
        return tuple(param.name for param in self.query_params)

    def request_class(self) -> Any:
        from .. import models

        return getattr(models, self.request_model)

    def response_class(self) -> Any:
        from .. import models

        return getattr(models, self.response_model)

    def generated(self) -> Any:
        """The generated client's module of this operation: ``_get_kwargs`` builds its
        request, ``asyncio_detailed`` sends it, ``_parse_response`` reads the answer."""
        return generated_module(self.api_module)


@functools.cache
def generated_module(module: str) -> Any:
    """The generated client's module ``lance_namespace_rest_client.api.<module>``
    (``table.describe_table``, ...)."""
    return importlib.import_module(f"lance_namespace_rest_client.api.{module}")


def _load() -> tuple[Operation, ...]:
    text = resources.files("lance_namespace_rest_client").joinpath("operations.json").read_text()
    operations = []
    for entry in json.loads(text):
        entry["path_params"] = tuple(entry["path_params"])
        entry["query_params"] = tuple(QueryParam(*param) for param in entry["query_params"])
        operations.append(Operation(**entry))
    return tuple(operations)


#: Every operation of spec/rest.yaml, in the order of the spec.
OPERATIONS: tuple[Operation, ...] = _load()
OPERATIONS_BY_METHOD: dict[str, Operation] = {op.method: op for op in OPERATIONS}
OPERATIONS_BY_ID: dict[str, Operation] = {op.operation_id: op for op in OPERATIONS}
