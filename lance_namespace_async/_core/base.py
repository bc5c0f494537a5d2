"""The async namespace interface every backend implements.

One coroutine per protocol operation, named in snake_case after the operation
id, taking the generated request model and returning the generated response
model. The coroutines are made here from the operation table (:mod:`.operations`,
derived from spec/rest.yaml), not written out one by one: each does the uniform
part (accepting ``None``, a mapping, or a peer's pydantic model as the request,
checking it before any I/O, the per-call timeout) and awaits the private
``_<operation>`` twin a backend overrides. An operation a backend does not
override raises ``UnsupportedOperationError`` (code 0), and
:meth:`AsyncLanceNamespace.list_operations` reports exactly the overridden ones.

Arrow travels as users hold it: ``create_table(request, data)``,
``insert_into_table(request, data)`` and ``merge_insert_into_table(request, data)``
take a ``pyarrow.Table``, ``RecordBatchReader`` or IPC bytes (the backend's twin
gets an :class:`~.arrow_data.ArrowData`); ``query_table(request)`` returns a
``pyarrow.Table``, ``query_table_ipc`` the IPC file the protocol carries and
``query_table_batches`` the record batches one by one. A backend's
``_query_table`` returns the IPC file bytes.
"""

from __future__ import annotations

import enum
import functools
import json
from collections.abc import AsyncIterator, Callable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, ClassVar, Self

import attrs

from ..errors import InvalidInputError, UnsupportedOperationError
from .arrow_data import ArrowData
from .arrow_guard import read_ipc_file
from .operation_methods import OperationMethods
from .operations import OPERATIONS, OPERATIONS_BY_METHOD, Operation
from .pipeline_hook import METHODS as PIPELINE_METHODS
from .pipeline_hook import available as pipeline_available
from .pipeline_hook import handler as pipeline_handler
from .pipeline_hook import takes as pipeline_takes
from .request_rules import normalize_request
from .timeout import USE_DEFAULT, TimeoutTypes, call_timeout

if TYPE_CHECKING:
    import pyarrow as pa

    from .config import BackendConfig

__all__ = [
    "OPERATIONS",
    "OPERATIONS_BY_METHOD",
    "AsyncLanceNamespace",
    "Operation",
    "coerce_request",
]


def coerce_request(request: object, model_name: str) -> Any:
    """Accept the generated model, ``None``, a mapping, or a pydantic peer model.

    pylance hands its own pydantic request models to a namespace client; users
    may prefer plain dicts, or build our model with plain dicts in its map and
    object fields (``CreateNamespaceRequest(id=[...], properties={"k": "v"})``).
    Everything becomes a well-formed generated model here, once, before any I/O;
    a value of the wrong shape is InvalidInputError naming the field.
    """
    from .. import models

    model: Any = getattr(models, model_name)
    if request is None:
        return model.from_dict({})
    if isinstance(request, model):
        body: Any = json_data(request)
    elif isinstance(request, Mapping):
        body = dict(request)
        _check_known_keys(model, body, model_name)
    elif hasattr(request, "to_dict") and callable(request.to_dict):
        body = request.to_dict()
    else:
        raise InvalidInputError(
            f"expected a {model_name}, a mapping or None, got {type(request).__name__}"
        )
    if not isinstance(body, Mapping):
        raise InvalidInputError(f"malformed {model_name}: not an object")
    body = normalize_request(model_name, _drop_none(body, _required(model)))
    _check_field_types(model, body, model_name)
    try:
        return model.from_dict(body)
    except KeyError as exc:
        # the generated from_dict indexes required fields: a KeyError is a missing one
        raise InvalidInputError(f"{model_name}: missing required field {exc.args[0]!r}") from None
    except (TypeError, ValueError, AttributeError) as exc:
        raise InvalidInputError(f"malformed {model_name}: {exc}") from None


@functools.cache
def request_fields(model: type) -> frozenset[str]:
    """The fields a generated request model declares: JSON names and Python names."""
    names = frozenset(attrs.fields_dict(model)) - {"additional_properties"}
    return names | frozenset(_json_names(model).values())


def _check_known_keys(model: type, body: Mapping[str, Any], model_name: str) -> None:
    """A key the model does not declare is a typo until proven otherwise: a mistyped
    ``idd`` would otherwise be kept as an extra property and the call fail later with
    a misleading "id must not be empty"."""
    known = request_fields(model)
    if known.issuperset(body):
        return
    unknown = sorted(str(key) for key in body if key not in known)
    if unknown:
        raise InvalidInputError(
            f"{model_name} has no field {unknown[0]!r} (fields: {', '.join(sorted(known))})"
        )


def json_data(value: Any) -> Any:
    """A generated model (possibly holding dicts where models belong) as JSON data.

    Field names are the wire names, so renamed fields (``manifestSize`` ->
    ``manifest_size``) keep their JSON spelling.
    """
    model: type[Any] = type(value)
    if attrs.has(model):
        json_names = _json_names(model)
        out: dict[str, Any] = {}
        for field in attrs.fields(model):
            item = getattr(value, field.name)
            if field.name == "additional_properties":
                out.update({key: json_data(v) for key, v in item.items()})
            elif not _is_unset(item):
                out[json_names.get(field.name, field.name)] = json_data(item)
        return out
    if isinstance(value, Mapping):
        return {key: json_data(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [json_data(item) for item in value]
    if isinstance(value, enum.Enum):
        return value.value
    return value


@functools.cache
def _field_names() -> dict[str, dict[str, str]]:
    """Model class -> {Python name: JSON name} of renamed fields (``field_names.json``,
    written by scripts/codegen.py with the generator's own naming rules)."""
    from importlib import resources

    text = resources.files("lance_namespace_rest_client").joinpath("field_names.json").read_text()
    table: dict[str, dict[str, str]] = json.loads(text)
    return table


def _json_names(model: type[Any]) -> dict[str, str]:
    """Python field name -> JSON name for the fields of ``model`` whose names differ."""
    return _field_names().get(model.__name__, {})


def _is_unset(value: Any) -> bool:
    from ..models import Unset

    return isinstance(value, Unset)


@functools.cache
def _field_annotations(model: type) -> dict[str, tuple[str, ...]]:
    """JSON field -> the alternatives of its annotation (``Unset`` left out).

    The generated ``from_dict`` copies values without looking at their type, so
    ``{"location": True}`` would reach a backend; the annotations are the spec's
    types.
    """
    json_names = _json_names(model)
    return {
        json_names.get(field.name, field.name): tuple(
            p.strip() for p in str(field.type).split("|") if p.strip() != "Unset"
        )
        for field in attrs.fields(model)
    }


def _check_field_types(model: type, body: Mapping[str, Any], where: str) -> None:
    """Raise InvalidInputError for a value whose JSON type the spec does not allow.

    The message names the field and the type only, never the value (it may be a
    credential of ``identity``).
    """
    fields, extra = _field_checks(model)
    rules = _constraints().get(model.__name__)
    by_name = _field_checks_by_name(model)
    present = (
        [by_name[name] for name in body if name in by_name] if len(body) < len(fields) else fields
    )
    for name, checks, annotation in present:
        if name in body:
            value = body[name]
            field_where = f"{where}.{name}"
            if not any(check(value, field_where) for check in checks):
                raise InvalidInputError(
                    f"{where}.{name} must be {' or '.join(annotation)}, got {type(value).__name__}"
                )
            if rules is not None and name in rules and value is not None:
                _check_rules(value, rules[name], field_where)
    if extra is not None:
        kind, check, declared = extra
        for key, value in body.items():
            if key not in declared and not check(value, f"{where}.{key}"):
                if kind == "str":  # Context, *Properties: string maps
                    raise InvalidInputError(f"{where} values must be strings")
                raise InvalidInputError(f"{where}.{key} must be {kind}")


@functools.cache
def _constraints() -> dict[str, dict[str, Any]]:
    """Model class -> {JSON field: constraints} (``constraints.json``, from spec/rest.yaml
    by scripts/codegen.py): what a JSON Schema states beyond a field's type."""
    from importlib import resources

    text = resources.files("lance_namespace_rest_client").joinpath("constraints.json").read_text()
    table: dict[str, dict[str, Any]] = json.loads(text)
    return table


def _check_rules(value: Any, rules: Mapping[str, Any], where: str) -> None:
    """InvalidInputError when ``value`` breaks one of the spec's constraints on it; the
    message names the field and the rule, never the value."""
    if isinstance(value, str):
        if len(value) < rules.get("minLength", 0):
            short = "empty" if rules["minLength"] == 1 else f"shorter than {rules['minLength']}"
            raise InvalidInputError(f"{where} must not be {short}")
        if "maxLength" in rules and len(value) > rules["maxLength"]:
            raise InvalidInputError(f"{where} must be at most {rules['maxLength']} characters")
    elif isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in rules and value < rules["minimum"]:
            raise InvalidInputError(f"{where} must be >= {rules['minimum']}")
        if "maximum" in rules and value > rules["maximum"]:
            raise InvalidInputError(f"{where} must be <= {rules['maximum']}")
    elif isinstance(value, list | tuple):
        if len(value) < rules.get("minItems", 0):
            raise InvalidInputError(f"{where} must have at least {rules['minItems']} items")
        if "maxItems" in rules and len(value) > rules["maxItems"]:
            raise InvalidInputError(f"{where} must have at most {rules['maxItems']} items")
        if rules.get("uniqueItems") and len(
            {json.dumps(item, sort_keys=True) for item in value}
        ) < len(value):
            raise InvalidInputError(f"{where} must not repeat an item")
        if "items" in rules:
            for index, item in enumerate(value):
                _check_rules(item, rules["items"], f"{where}[{index}]")
    elif isinstance(value, Mapping) and "values" in rules:
        for key, item in value.items():
            _check_rules(item, rules["values"], f"{where}.{key}")


_Check = Callable[[Any, str], bool]


@functools.cache
def _field_checks(
    model: type,
) -> tuple[
    tuple[tuple[str, tuple[_Check, ...], tuple[str, ...]], ...],
    tuple[str, _Check, frozenset[str]] | None,
]:
    """``model``'s fields with the checks of their annotations, built once per model;
    and the kind of its additional properties, if it keeps them as a typed map."""
    annotations = _field_annotations(model)
    fields = tuple(
        (name, tuple(_checker(kind) for kind in annotation), annotation)
        for name, annotation in annotations.items()
        if name != "additional_properties"
    )
    extra = None
    annotation = annotations.get("additional_properties")
    if annotation is not None and len(annotation) == 1 and annotation[0].startswith("dict[str, "):
        kind = annotation[0][len("dict[str, ") : -1]
        extra = (kind, _checker(kind), frozenset(annotations))
    return fields, extra


@functools.cache
def _field_checks_by_name(
    model: type,
) -> dict[str, tuple[str, tuple[_Check, ...], tuple[str, ...]]]:
    """:func:`_field_checks`' fields by JSON name: a small body is checked by its keys."""
    return {entry[0]: entry for entry in _field_checks(model)[0]}


def _matches(value: Any, kind: str, where: str) -> bool:
    """Whether ``value`` (JSON data) fits the generated annotation ``kind``."""
    return _checker(kind)(value, where)


def _is_str(value: Any, where: str) -> bool:
    return isinstance(value, str)


def _is_bool(value: Any, where: str) -> bool:
    return isinstance(value, bool)


def _is_int(value: Any, where: str) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_float(value: Any, where: str) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_none(value: Any, where: str) -> bool:
    return value is None


def _anything(value: Any, where: str) -> bool:
    return True


@functools.cache
def _checker(kind: str) -> _Check:
    """The check of annotation ``kind``, built once: annotations are parsed per kind,
    not per value."""
    simple = {
        "str": _is_str,
        "bool": _is_bool,
        "int": _is_int,
        "float": _is_float,
        "None": _is_none,
        # from_dict parses (or refuses) these itself
        "Any": _anything,
        "datetime.datetime": _anything,
        "File": _anything,
    }.get(kind)
    if simple is not None:
        return simple
    if kind.startswith("list[") and kind.endswith("]"):
        item_check = _checker(kind[len("list[") : -1])

        def is_list(value: Any, where: str) -> bool:
            return isinstance(value, list | tuple) and all(
                item_check(item, f"{where}[{index}]") for index, item in enumerate(value)
            )

        return is_list
    if kind.startswith("dict[str, ") and kind.endswith("]"):
        value_check = _checker(kind[len("dict[str, ") : -1])

        def is_map(value: Any, where: str) -> bool:
            return isinstance(value, Mapping) and all(
                value_check(item, f"{where}.{key}") for key, item in value.items()
            )

        return is_map
    from .. import models

    nested = getattr(models, kind, None)
    if nested is None:
        return _anything  # not an annotation we know: from_dict decides
    if isinstance(nested, type) and issubclass(nested, enum.Enum):
        return _is_str

    def is_model(value: Any, where: str) -> bool:
        if not isinstance(value, Mapping):
            return False
        _check_field_types(nested, value, where)  # Identity, Context, *Properties, entries
        return True

    return is_model


def _drop_none(body: Mapping[str, Any], required: frozenset[str]) -> dict[str, Any]:
    # Peer models serialise unset optionals as None; the generated models
    # read an absent key as UNSET, which is what those fields mean. A required
    # field keeps its null (QueryTableRequest.vector is null for a plain scan).
    return {k: v for k, v in body.items() if v is not None or k in required}


@functools.cache
def _required(model: type) -> frozenset[str]:
    json_names = _json_names(model)
    return frozenset(
        json_names.get(field.name, field.name)
        for field in attrs.fields(model)
        if field.default is attrs.NOTHING
    )


class AsyncLanceNamespace(OperationMethods):
    """Base class of every async backend: one coroutine per operation of spec/rest.yaml.

    Construction never performs I/O; resources are opened lazily or by
    ``async with`` and released by :meth:`aclose`.
    """

    #: the short name users pass as ``impl`` (``dir``, ``rest``, ...)
    impl_name: ClassVar[str] = ""
    #: the identifier delimiter of this backend's string identifiers
    delimiter: str = "$"
    #: whether it reads and writes Lance tables on storage itself, so that its
    #: ``confine_storage`` and ``allowed_locations`` properties apply (dir, iceberg,
    #: unity, glue, hive)
    stores_tables: ClassVar[bool] = False

    def __init__(self, config: BackendConfig) -> None:
        self.config = config

    @property
    def storage_confined(self) -> bool:
        """Whether no operation of this backend uses storage outside its storage root and
        ``allowed_locations``: true with ``confine_storage``, and for a backend that
        has no storage of its own (``rest``: the server it calls decides)."""
        return not self.stores_tables or getattr(self.config, "confine_storage", False) is True

    @classmethod
    def from_properties(cls, properties: Mapping[str, str] | None) -> Self:
        """Build the backend from the string map lance_namespace users pass."""
        raise NotImplementedError

    def namespace_id(self) -> str:
        """A human-readable id of this instance, safe to log (no secrets)."""
        return f"{type(self).__name__}({self.config!r})"

    def __repr__(self) -> str:
        return self.namespace_id()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Release pools, clients and threads held by this instance."""

    @classmethod
    def list_operations(cls) -> list[str]:
        """The snake_case names of the operations this backend implements (on a storage
        backend, the pipeline's too when PySpark is installed: :mod:`.pipeline_hook`)."""
        pipeline = cls.stores_tables and pipeline_available()
        return [
            op.method
            for op in OPERATIONS
            if (pipeline and op.method in PIPELINE_METHODS)
            or not getattr(getattr(cls, f"_{op.method}"), "__lance_unsupported__", False)
        ]

    # -- Arrow conveniences around QueryTable -----------------------------------

    async def query_table_ipc(
        self, request: Any = None, *, timeout: TimeoutTypes = USE_DEFAULT
    ) -> bytes:
        """QueryTable's answer as the protocol carries it: an Arrow IPC file."""
        operation = OPERATIONS_BY_METHOD["query_table"]
        with call_timeout(timeout):
            data: bytes = await self._query_table(coerce_request(request, operation.request_model))
        return data

    async def query_table_batches(
        self, request: Any = None, *, timeout: TimeoutTypes = USE_DEFAULT
    ) -> AsyncIterator[pa.RecordBatch]:
        """QueryTable's rows batch by batch (the streaming variant of ``query_table``)."""
        operation = OPERATIONS_BY_METHOD["query_table"]
        with call_timeout(timeout):
            async for batch in self._query_table_batches(
                coerce_request(request, operation.request_model)
            ):
                yield batch

    async def _query_table_batches(self, request: Any) -> AsyncIterator[pa.RecordBatch]:
        """Backends that can stream the answer override this; by default one IPC file."""
        for batch in read_ipc_file(await self._query_table(request)).to_batches():
            yield batch

    def _unsupported(self, operation: str) -> UnsupportedOperationError:
        return UnsupportedOperationError(
            f"{operation} is not supported by the {self.impl_name or type(self).__name__} backend"
        )


# -- the coroutines, one per operation of the table -----------------------------------


def _public(operation: Operation) -> Callable[..., Any]:
    """The public coroutine of ``operation``: coerce, check, time-limit, call the twin."""
    hook = f"_{operation.method}"
    model = operation.request_model

    if operation.takes_data:

        async def call_with_data(
            self: AsyncLanceNamespace,
            request: Any = None,
            data: Any = None,
            *,
            timeout: TimeoutTypes = USE_DEFAULT,
        ) -> Any:
            coerced = coerce_request(request, model)
            rows = ArrowData.of(data)
            with call_timeout(timeout):
                return await getattr(self, hook)(coerced, rows)

        function: Callable[..., Any] = call_with_data
    elif operation.returns_arrow:

        async def call_for_table(
            self: AsyncLanceNamespace, request: Any = None, *, timeout: TimeoutTypes = USE_DEFAULT
        ) -> pa.Table:
            coerced = coerce_request(request, model)
            with call_timeout(timeout):
                data = await getattr(self, hook)(coerced)
            return read_ipc_file(data)

        function = call_for_table
    elif operation.method in PIPELINE_METHODS:
        method = operation.method

        async def call_pipeline(
            self: AsyncLanceNamespace, request: Any = None, *, timeout: TimeoutTypes = USE_DEFAULT
        ) -> Any:
            coerced = coerce_request(request, model)
            with call_timeout(timeout):
                return await checked_call(self, method)(coerced)

        function = call_pipeline
    else:

        async def call(
            self: AsyncLanceNamespace, request: Any = None, *, timeout: TimeoutTypes = USE_DEFAULT
        ) -> Any:
            coerced = coerce_request(request, model)
            with call_timeout(timeout):
                return await getattr(self, hook)(coerced)

        function = call
    return _named(function, operation, _public_doc(operation))


def checked_call(namespace: AsyncLanceNamespace, method: str) -> Callable[..., Any]:
    """What ``namespace``'s public coroutine of ``method`` awaits once the request is
    checked: the backend's ``_<method>`` twin, or for one of the pipeline's operations on
    a storage backend the pipeline when it takes the request (:mod:`.pipeline_hook`).
    Whoever calls a backend's twins directly (a mounting namespace) calls this instead."""
    twin: Callable[..., Any] = getattr(namespace, f"_{method}")
    if method not in PIPELINE_METHODS or not namespace.stores_tables:
        return twin

    async def routed(request: Any, *data: Any) -> Any:
        if pipeline_takes(method, request):
            return await pipeline_handler(method)(namespace, request)
        return await twin(request, *data)

    return routed


def _unsupported_twin(operation: Operation) -> Callable[..., Any]:
    async def unsupported(self: AsyncLanceNamespace, request: Any, *data: Any) -> Any:
        raise self._unsupported(operation.operation_id)

    twin = _named(unsupported, operation, f"{operation.operation_id}: unsupported here.", "_")
    twin.__lance_unsupported__ = True  # type: ignore[attr-defined]
    return twin


def _named(
    function: Callable[..., Any], operation: Operation, doc: str, prefix: str = ""
) -> Callable[..., Any]:
    """Give the coroutine its operation's name, and a code object of its own.

    A distinct code object per operation lets a traceback (and the conformance
    kit, which reads it) tell which operation raised.
    """
    name = prefix + operation.method
    code = function.__code__.replace(co_name=name, co_qualname=f"AsyncLanceNamespace.{name}")
    function.__code__ = code
    function.__name__ = name
    function.__qualname__ = f"AsyncLanceNamespace.{name}"
    function.__doc__ = doc
    return function


def _public_doc(operation: Operation) -> str:
    lines = [
        f"{operation.operation_id} ({operation.http_method} {operation.path}).",
        "",
        f"``request``: a ``models.{operation.request_model}``, a mapping or a pydantic peer model.",
    ]
    if operation.takes_data:
        lines.append("``data``: the rows, a pyarrow.Table, RecordBatchReader or Arrow IPC bytes.")
    if operation.returns_arrow:
        lines.append("Returns the result as a ``pyarrow.Table``.")
    else:
        lines.append(f"Returns a ``models.{operation.response_model}``.")
    return "\n".join(lines)


def _install() -> None:
    for operation in OPERATIONS:
        setattr(AsyncLanceNamespace, operation.method, _public(operation))
        setattr(AsyncLanceNamespace, f"_{operation.method}", _unsupported_twin(operation))


_install()
