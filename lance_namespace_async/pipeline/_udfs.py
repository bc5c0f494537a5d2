"""Client code on the pipeline's Spark clusters: ``virtual_column`` UDFs.

**Off unless the operator turns it on** (``pipeline_allow_udfs=true``, ``lance-ns serve
--allow-udfs``): a UDF is the client's Python code and runs with the cluster's rights,
storage credentials included. Off, a ``virtual_column`` is refused with code 0 and the
reason, and so is the backfill of one added while it was on.

**The payload.** The protocol's ``udf`` is a string; here it is the base64 of a Python
callable pickled with cloudpickle (the copy PySpark ships, ``pyspark.cloudpickle``): the
format PySpark itself uses to send a UDF to its Python workers, so closures and lambdas
travel and a client builds it with ``base64.b64encode(pyspark.cloudpickle.dumps(fn))``.
The callable takes a ``pyarrow.RecordBatch`` of the ``input_columns`` and returns one
value per row (a pyarrow Array, or anything ``pyarrow.array`` takes). ``udf_backend`` may
be unset, ``cloudpickle`` or ``python``; other backends (containers, ``image``) are
refused. The payload is at most :data:`MAX_PAYLOAD_BYTES` once decoded.

**Where it runs.** Never in the process that answers the request: AlterTableAddColumns
only checks the payload is base64 of the bounded size, and keeps it in the new column's
field metadata (:data:`VIRTUAL_KEY`); AlterTableBackfillColumns' Spark tasks
(``_backfill``, the job body computed columns use) unpickle and call it in Spark's Python
workers, fragment by fragment, in place of the SQL expression. Its output is checked
against the declared ``data_type`` (a safe cast at most) and its length against the
rows; a UDF that raises or answers the wrong shape fails the job with InvalidInput (13)
and nothing of that commit group is committed.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any, Final

import pyarrow as pa

from .. import errors
from ._view_schema import _data_type

#: field metadata key holding a virtual column's UDF (JSON, see :func:`virtual_field`)
VIRTUAL_KEY: Final = "lance_namespace.virtual_column"
#: the largest UDF payload accepted, decoded
MAX_PAYLOAD_BYTES: Final = 1 << 20
#: the ``udf_backend`` values this namespace runs (unset means cloudpickle)
BACKENDS: Final = frozenset({"cloudpickle", "python"})
#: how a task's failure names the typed error it stands for, across Spark
_MARK = "[lna-error code={code}] "
_MARKED = re.compile(r"\[lna-error code=(\d+)\] ([^\n]*)")


def allowed(config: Any) -> bool:
    return bool(getattr(config, "pipeline_allow_udfs", False))


def refused(what: str) -> errors.UnsupportedOperationError:
    return errors.UnsupportedOperationError(
        f"{what} runs the client's Python code on the Spark cluster, which this catalog "
        "refuses (the operator enables it with pipeline_allow_udfs=true or "
        "lance-ns serve --allow-udfs)"
    )


def _given(model: Any, name: str) -> Any:
    value = getattr(model, name, None)
    return None if value is None or type(value).__name__ == "Unset" else value


def checked_payload(text: Any, what: str) -> str:
    """The payload, checked to be base64 of at most :data:`MAX_PAYLOAD_BYTES` (never
    unpickled here)."""
    if not isinstance(text, str) or not text:
        raise errors.InvalidInputError(f"{what}: udf must be base64 of a cloudpickled callable")
    if len(text) > MAX_PAYLOAD_BYTES * 4 // 3 + 4:
        raise errors.InvalidInputError(f"{what}: udf is over {MAX_PAYLOAD_BYTES} bytes")
    try:
        base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise errors.InvalidInputError(f"{what}: udf is not base64") from None
    return text


def virtual_field(name: str, entry: Any, table_columns: list[str]) -> pa.Field:
    """The all-null field an ``AddVirtualColumnEntry`` adds, its UDF in the metadata."""
    what = f"virtual column {name!r}"
    backend = _given(entry, "udf_backend")
    if backend is not None and str(backend).lower() not in BACKENDS:
        raise errors.InvalidInputError(
            f"{what}: udf_backend {backend!r} is not run here (use {sorted(BACKENDS)})"
        )
    inputs = [str(c) for c in _given(entry, "input_columns") or []]
    if not inputs:
        raise errors.InvalidInputError(f"{what}: input_columns must name at least one column")
    missing = [c for c in inputs if c not in table_columns]
    if missing:
        raise errors.TableColumnNotFoundError(f"{what}: no input column(s) {missing}")
    outputs = list(_given(entry, "outputs") or [])
    if len(outputs) != 1:
        raise errors.InvalidInputError(f"{what}: exactly one output is supported")
    output = outputs[0]
    column = _given(output, "column")
    if column is not None and column != name:
        raise errors.InvalidInputError(f"{what}: its output must be the column {name!r}")
    raw_type = _given(output, "data_type")
    body = raw_type.to_dict() if hasattr(raw_type, "to_dict") else raw_type
    try:
        data_type = _data_type(body)
    except errors.InvalidInputError as exc:
        raise errors.InvalidInputError(f"{what}: data_type: {exc}") from None
    spec = {
        "udf": checked_payload(_given(entry, "udf"), what),
        "udf_name": str(_given(entry, "udf_name") or ""),
        "udf_version": str(_given(entry, "udf_version") or ""),
        "input_columns": inputs,
    }
    return pa.field(name, data_type, nullable=True, metadata={VIRTUAL_KEY: json.dumps(spec)})


def virtual_spec(field: pa.Field) -> dict[str, Any] | None:
    """A virtual column's UDF spec from its field metadata (None: not one)."""
    raw = (field.metadata or {}).get(VIRTUAL_KEY.encode())
    if raw is None:
        return None
    spec: dict[str, Any] = json.loads(raw)
    return spec


# -- in Spark's Python workers ---------------------------------------------------------------


def load(spec: Mapping[str, Any]) -> Any:
    """The UDF, unpickled (only ever in a Spark task; a view's payload is checked against
    its recorded SHA-256 first)."""
    from pyspark import cloudpickle

    raw = base64.b64decode(spec["udf"])
    if spec.get("udf_sha") and hashlib.sha256(raw).hexdigest() != spec["udf_sha"]:
        raise task_error(errors.InvalidInputError(f"udf {spec.get('udf_name')!r}: sha mismatch"))
    try:
        function = cloudpickle.loads(raw)
    except Exception as exc:
        raise task_error(
            errors.InvalidInputError(f"udf {spec.get('udf_name')!r} does not load: {exc}")
        ) from None
    if not callable(function):
        raise task_error(errors.InvalidInputError(f"udf {spec.get('udf_name')!r} is not callable"))
    return function


def apply(function: Any, spec: Mapping[str, Any], inputs: pa.Table, field: pa.Field) -> pa.Array:
    """The UDF's values for ``inputs`` (one per row), checked against ``field``."""
    name = spec.get("udf_name")
    pieces = []
    for batch in inputs.to_batches() or [pa.RecordBatch.from_pylist([], schema=inputs.schema)]:
        try:
            found = function(batch)
            values = found if isinstance(found, pa.Array | pa.ChunkedArray) else pa.array(found)
        except Exception as exc:
            raise task_error(
                errors.InvalidInputError(f"udf {name!r} raised {type(exc).__name__}: {exc}")
            ) from None
        if len(values) != batch.num_rows:
            raise task_error(
                errors.InvalidInputError(
                    f"udf {name!r} returned {len(values)} values for {batch.num_rows} rows"
                )
            )
        if not values.type.equals(field.type):
            try:
                values = values.cast(field.type, safe=True)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                raise task_error(
                    errors.InvalidInputError(
                        f"udf {name!r} returned {values.type}; column {field.name!r} is "
                        f"{field.type}"
                    )
                ) from None
        pieces.append(values)
    joined = pa.chunked_array(pieces, type=field.type) if pieces else pa.array([], field.type)
    return joined.combine_chunks()


def task_error(error: errors.LanceNamespaceError) -> RuntimeError:
    """``error`` as a Spark task raises it: its message names the code, so the driver
    (:func:`typed_task_error`) raises the same typed error."""
    return RuntimeError(_MARK.format(code=int(error.code)) + str(error))


def typed_task_error(exc: BaseException) -> errors.LanceNamespaceError | None:
    """The typed error a failed Spark job's task raised with :func:`task_error`."""
    found = _MARKED.search(str(exc))
    if found is None:
        return None
    return errors.from_code(int(found.group(1)), found.group(2))


# -- udtf / chunker materialized views ----------------------------------------------------------

#: the view kinds that run a client's callable (``MaterializedViewUdtfEntry``)
VIEW_KINDS: Final = frozenset({"udtf", "chunker"})


def udtf_spec(request_spec: Any, kind: str) -> dict[str, Any]:
    """What a view keeps of its ``udtf_spec``: the payload checked (base64, bounded, its
    SHA-256 equal to ``udtf_sha``; never unpickled here) and the names."""
    what = f"{kind} view"
    if request_spec is None:
        raise errors.InvalidInputError(f"{what}: udtf_spec is required")
    spec_kind = _given(request_spec, "kind")
    if spec_kind is not None and str(spec_kind) != kind:
        raise errors.InvalidInputError(f"{what}: udtf_spec.kind is {spec_kind!r}")
    text = checked_payload(_given(request_spec, "udtf"), what)
    sha = str(_given(request_spec, "udtf_sha") or "").lower()
    if hashlib.sha256(base64.b64decode(text)).hexdigest() != sha:
        raise errors.InvalidInputError(
            f"{what}: udtf_sha is not the SHA-256 (hex) of the decoded udtf payload"
        )
    inputs = [str(c) for c in _given(request_spec, "input_columns") or []]
    return {
        "kind": kind,
        "udf": text,
        "udf_sha": sha,
        "udf_name": str(_given(request_spec, "udtf_name") or ""),
        "udf_version": str(_given(request_spec, "udtf_version") or ""),
        "input_columns": inputs,
    }


def map_rows(frame: Any, spec: Mapping[str, Any], output: pa.Schema) -> Any:
    """``frame`` (the view's query) mapped through the client's callable in Spark's
    Python workers (``mapInArrow``), its output conformed to ``output``.

    ``udtf``: ``fn(batch: pyarrow.RecordBatch)`` returns a RecordBatch, a Table, or an
    iterable of them (any number of rows); ``chunker``: ``fn(row: dict)`` returns an
    iterable of dicts (one row → many rows)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    inputs = list(spec.get("input_columns") or frame.columns)
    missing = [c for c in inputs if c not in frame.columns]
    if missing:
        raise errors.InvalidInputError(
            f"input_columns {missing} are not columns of source_query ({frame.columns})"
        )
    frame = frame.select(*["`" + c.replace("`", "``") + "`" for c in inputs])
    kept = dict(spec)

    def run(batches: Any) -> Any:
        function = load(kept)
        for batch in batches:
            yield from _outputs(function, kept, batch, output)

    return frame.mapInArrow(run, from_arrow_schema(output))


def _outputs(
    function: Any, spec: Mapping[str, Any], batch: pa.RecordBatch, output: pa.Schema
) -> Any:
    name = spec.get("udf_name")
    try:
        if spec["kind"] == "chunker":
            rows = [out for row in batch.to_pylist() for out in function(row)]
            found: list[Any] = [pa.Table.from_pylist(rows, schema=output)] if rows else []
        else:
            result = function(batch)
            found = [result] if isinstance(result, pa.RecordBatch | pa.Table) else list(result)
    except Exception as exc:
        raise task_error(
            errors.InvalidInputError(f"udf {name!r} raised {type(exc).__name__}: {exc}")
        ) from None
    for piece in found:
        if not isinstance(piece, pa.RecordBatch | pa.Table):
            raise task_error(
                errors.InvalidInputError(f"udf {name!r} returned {type(piece).__name__}")
            )
        yield from pa.table(_conformed(piece, output, name)).to_batches()


def _conformed(piece: Any, output: pa.Schema, name: Any) -> pa.RecordBatch | pa.Table:
    """``piece`` with the declared columns (by name), each cast safely to its type."""
    columns = []
    for field in output:
        if field.name not in piece.schema.names:
            raise task_error(
                errors.InvalidInputError(f"udf {name!r} returned no column {field.name!r}")
            )
        column = piece.column(field.name)
        try:
            columns.append(column.cast(field.type, safe=True))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            raise task_error(
                errors.InvalidInputError(
                    f"udf {name!r} returned {column.type} for {field.name!r}; declared {field.type}"
                )
            ) from None
    return pa.table(columns, schema=output)
