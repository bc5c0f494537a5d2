"""The route table (from the operation table) and the parsing of a request's path, query
and JSON body, as the adapter reads them.

Routing works on the raw (still percent-encoded) path, like pylance's own axum
adapter: ``/v1/table/a%2Fb/describe`` is DescribeTable of the name ``a/b``.
Malformed query values and bodies that are not a JSON object are code 13.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn
from urllib.parse import unquote

import attrs

from .. import errors
from .._core.operations import OPERATIONS, Operation
from ._starlette import (
    QueryParams,
)

if TYPE_CHECKING:
    pass


# -- the route table -------------------------------------------------------------


@dataclass(frozen=True)
class Route:
    """One operation of spec/rest.yaml as the adapter serves it (from the operation table)."""

    #: HTTP method
    http_method: str
    #: path template, e.g. ``/v1/table/{id}/describe``
    path: str
    #: operation id of the spec
    operation_id: str
    #: backend coroutine called with the request dict
    method: str
    #: query parameters copied into the request (``delimiter`` is always read)
    query: tuple[str, ...] = ()
    #: whether the request has a body (a JSON model, a bare JSON object or Arrow rows)
    body: bool = True
    #: 200 with an empty body (the Exists operations)
    empty_response: bool = False
    #: the operation's table entry
    operation: Operation | None = None

    @property
    def segments(self) -> tuple[str, ...]:
        return tuple(self.path.strip("/").split("/"))


def _route_of(operation: Operation) -> Route:
    return Route(
        operation.http_method,
        operation.path,
        operation.operation_id,
        operation.method,
        query=tuple(name for name in operation.query_names if name != "delimiter"),
        body=operation.request_body != "none",
        empty_response=operation.response_body == "empty",
        operation=operation,
    )


#: Every route, in the order of spec/rest.yaml.
ROUTES: tuple[Route, ...] = tuple(_route_of(operation) for operation in OPERATIONS)


_PARAM_KINDS: dict[str, str] = {
    param.name: param.kind for operation in OPERATIONS for param in operation.query_params
}


#: query parameters sent once per item of a list (MergeInsertIntoTable's ``on``)
_REPEATED = frozenset(name for name, kind in _PARAM_KINDS.items() if kind == "array")


_PLANS = frozenset({"ExplainTableQueryPlan", "AnalyzeTableQueryPlan"})


_ARROW_STREAM = "application/vnd.apache.arrow.stream"


_ARROW_FILE = "application/vnd.apache.arrow.file"


# -- errors the adapter itself raises ----------------------------------------------
# They are InvalidInput (code 13) on the wire, with the HTTP status of what went
# wrong, so clients that only read the code still see a caller error.


class _UnknownRouteError(errors.InvalidInputError):
    http_status = 404


class _MethodNotAllowedError(errors.InvalidInputError):
    http_status = 405

    def __init__(self, message: str, allowed: list[str]) -> None:
        super().__init__(message)
        self.allowed = allowed


class _PayloadTooLargeError(errors.InvalidInputError):
    http_status = 413


# -- request parsing -----------------------------------------------------------------

_INTEGER = re.compile(r"-?[0-9]{1,19}")


_JSON_MEDIA_TYPE = re.compile(r"application/(?:[\w.+-]+\+)?json", re.IGNORECASE)


_Layouts = dict[int, list[tuple[tuple[int, ...], dict[tuple[str, ...], list[int]]]]]


def _route_index() -> _Layouts:
    """Route positions by segment count, then by which segments are parameters, then by
    the literal segments: a lookup is a dict hit per parameter layout, not a scan of all."""
    index: dict[int, dict[tuple[int, ...], dict[tuple[str, ...], list[int]]]] = {}
    for position, route in enumerate(ROUTES):
        template = route.segments
        params = tuple(
            i for i, part in enumerate(template) if part.startswith("{") and part.endswith("}")
        )
        literals = tuple(part for i, part in enumerate(template) if i not in params)
        layouts = index.setdefault(len(template), {})
        layouts.setdefault(params, {}).setdefault(literals, []).append(position)
    return {size: list(layouts.items()) for size, layouts in index.items()}


_ROUTE_INDEX = _route_index()


_TEMPLATES = tuple(route.segments for route in ROUTES)


def _match(segments: list[str]) -> tuple[list[Route], dict[str, str]]:
    """The routes whose template fits ``segments`` (in spec order) and their (still
    encoded) path values, those of the last route found."""
    positions: list[int] = []
    for params, by_literals in _ROUTE_INDEX.get(len(segments), ()):
        literals = tuple(part for i, part in enumerate(segments) if i not in params)
        positions.extend(by_literals.get(literals, ()))
    if not positions:
        return [], {}
    positions.sort()
    template = _TEMPLATES[positions[-1]]
    values = {
        part[1:-1]: segments[i]
        for i, part in enumerate(template)
        if part.startswith("{") and part.endswith("}")
    }
    return [ROUTES[p] for p in positions], values


def _decode_segment(value: str) -> str:
    try:
        return unquote(value, errors="strict")
    except UnicodeDecodeError:
        raise errors.InvalidInputError("the id path parameter is not valid UTF-8") from None


def _single(query: QueryParams, name: str) -> str | None:
    values = query.getlist(name)
    if not values:
        return None
    if len(values) > 1:
        raise errors.InvalidInputError(f"query parameter {name!r} given more than once")
    return values[0]


def _query_value(name: str, raw: str) -> Any:
    """Convert one query parameter to its JSON type, or refuse it with code 13."""
    kind = _PARAM_KINDS.get(name)
    if kind == "boolean":
        lowered = raw.lower()
        if lowered not in ("true", "false"):
            raise errors.InvalidInputError(f"query parameter {name!r} must be true or false")
        return lowered == "true"
    if kind == "integer":
        if not _INTEGER.fullmatch(raw):
            raise errors.InvalidInputError(f"query parameter {name!r} must be an integer")
        return int(raw)
    return raw


def _reject_constant(value: str) -> NoReturn:
    raise ValueError(f"{value} is not valid JSON")


def _parse_json_object(raw: bytes) -> dict[str, Any]:
    """The request body as a JSON object; an empty body is the empty object."""
    if not raw:  # no body at all; whitespace alone is not JSON (refused below)
        return {}
    try:
        parsed = json.loads(raw, parse_constant=_reject_constant, parse_float=_integral_float)
    except (ValueError, RecursionError) as exc:
        # ValueError covers JSONDecodeError and bodies that are not UTF-8
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else "not valid JSON"
        raise errors.InvalidInputError(f"malformed JSON body: {reason}") from None
    if not isinstance(parsed, dict):
        raise errors.InvalidInputError("the JSON body must be an object")
    return parsed


def _integral_float(text: str) -> float | int:
    # JSON Schema counts 1.0 as an integer, and every number a request body of
    # spec/rest.yaml holds is an integer (versions): read 1.0 as 1
    value = float(text)
    return int(value) if value.is_integer() else value


@functools.cache
def _non_nullable_fields(method: str) -> frozenset[str]:
    """The body fields the operation's request schema declares and does not allow null."""
    from .. import models
    from .._core.base import OPERATIONS_BY_METHOD

    model = getattr(models, OPERATIONS_BY_METHOD[method].request_model)
    return frozenset(
        name
        for name, field in attrs.fields_dict(model).items()
        if name != "additional_properties"
        and "None" not in str(field.type).replace(" ", "").split("|")
    )


@functools.cache
def _body_fields(method: str) -> frozenset[str]:
    """Every body field the operation's request schema declares (nullable ones too)."""
    from .. import models
    from .._core.base import OPERATIONS_BY_METHOD, request_fields

    return request_fields(getattr(models, OPERATIONS_BY_METHOD[method].request_model))


def _refuse_nulls(body: dict[str, Any], method: str) -> None:
    """Refuse null in a declared field the request schema does not make nullable.

    The backends read None as "unset" (peer models send their unset fields so),
    so the wire's null is refused here; unknown fields stay ignored, null or not.
    (QueryTableRequest's ``vector``, ``columns`` ... are nullable: null passes.)
    """
    for name in _non_nullable_fields(method):
        if name in body and body[name] is None:
            raise errors.InvalidInputError(f"body field {name!r} must not be null")


def _is_json_media_type(content_type: str) -> bool:
    return bool(_JSON_MEDIA_TYPE.fullmatch(content_type.split(";", 1)[0].strip()))


@functools.cache
def _json_encoded_query(method: str) -> frozenset[str]:
    """Query parameters that carry a JSON object in a string (CreateTable's maps).

    They are the string parameters whose request-model field is not a string.
    """
    from .. import models
    from .._core.base import OPERATIONS_BY_METHOD

    operation = OPERATIONS_BY_METHOD[method]
    fields = attrs.fields_dict(getattr(models, operation.request_model))
    return frozenset(
        param.name
        for param in operation.query_params
        if param.kind == "string"
        and param.name in fields
        and "str" not in str(fields[param.name].type).replace(" ", "").split("|")
    )


def _json_query_object(name: str, raw: str) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except ValueError:
        raise errors.InvalidInputError(f"query parameter {name!r} must be a JSON object") from None
    if not isinstance(value, dict):
        raise errors.InvalidInputError(f"query parameter {name!r} must be a JSON object")
    return value
