"""Partial aggregation next to the data, for the common shape of a materialized view.

Why: a view such as ``SELECT k, COUNT(*), SUM(v) FROM events WHERE d >= 3 GROUP BY k``
read through our reader ships every source row from the Python tasks to the JVM (Arrow
→ Spark rows) only for Spark to fold them into a few groups. For that shape the tasks
can do the first half of Spark's own two-phase aggregation themselves: each hands its
fragments, the filter and the partial aggregate to Lance's scanner, which computes the
per-group partials natively (``_partials``), and ships only the partials. The final
aggregation (sum of counts, sum of sums, min of mins, ...) is Spark's ``Final`` phase,
done in the driver over the few partials, or as a Spark stage when they are many
(:data:`DRIVER_ROWS`, :data:`DRIVER_BYTES`). A plan analysed once is remembered per
query and source schema (:func:`pushed_again`), so a refresh of the same view binds
nothing again. Results are those of the plain plan (see the equality property test).

**The shape** is recognised from Spark's own optimized logical plan of the bound query
(``toJSON()``), never from the SQL text: ``Aggregate`` over an ``Filter``s and column-only
``Project``s over our reader's ``MapInArrow`` of the view's single
source. Grouping keys are plain columns (integral, boolean, string, date, floating);
aggregates are ``COUNT(*)``, ``COUNT(col)``, ``SUM``/``AVG`` of integral or floating
columns, ``MIN``/``MAX`` of integral or string columns (Spark and Arrow both order strings
by their UTF-8 bytes; floating MIN/MAX is left to Spark, whose NaN ordering Arrow does not
share), none ``DISTINCT`` or with ``FILTER``; the filter is ``AND``-ed comparisons
(``= <> < <= > >=``) of an integral, boolean or string column with a literal, and
``IS NOT NULL``; an ``ORDER BY`` of output columns (not floating ones: Spark's NaN
ordering is its own) is applied to the result. Anything else (joins, HAVING, expressions,
casts on columns, decimals, timestamps) takes the plain plan.

**Semantics kept.** ``SUM`` of integers is summed in the tasks as ``decimal(38,0)`` (no
silent wrap) and checked against ``bigint`` by the final step, which under ANSI mode
(Spark 4's default) fails the job on overflow as the plain plan does; without ANSI mode
Spark wraps instead, which partials cannot reproduce, so integer ``SUM`` is then not
pushed down. ``AVG``
is Spark's: the sum of the values as doubles over their count, null for no values.
Floating sums differ from the plain plan only by summation order (the plain plan's
order depends on partitioning too).
"""

from __future__ import annotations

import json
import logging
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from .. import errors
from ._partials import (
    KEY_TYPES,
    AggregatePlan,
    Output,
    final_table,
    partial_schema,
    task_partials,
)

__all__ = [
    "AggregatePlan",
    "driver_table",
    "maybe_pushed_down",
    "pushed_again",
    "pushed_down",
    "recognise",
]

_log = logging.getLogger(__name__)

_EXPR = "org.apache.spark.sql.catalyst.expressions."
_AGG = _EXPR + "aggregate."
_PLAN = "org.apache.spark.sql.catalyst.plans.logical."
#: the name of our reader's function in the plan (``spark._read.read``)
_READER_FUNCTION = "read_partitions"
#: tasks of the partial stage (0: one per core of the cluster, Spark's default parallelism)
TASKS = 0
#: partial rows (all tasks together) the driver merges itself; past it, Spark merges them
#: (0: Spark always does)
DRIVER_ROWS = 4_000_000
#: and their Arrow bytes (long strings in MIN/MAX make few rows large)
DRIVER_BYTES = 256 * 1024 * 1024

_INTEGRAL = {"byte": pa.int8(), "short": pa.int16(), "integer": pa.int32(), "long": pa.int64()}
_FLOATING = {"float": pa.float32(), "double": pa.float64()}
_FILTER_TYPES = {**_INTEGRAL, "string": pa.string(), "boolean": pa.bool_()}
_MIN_MAX_TYPES = {**_INTEGRAL, "string": pa.string()}
_COMPARISONS = {
    "EqualTo": "==",
    "LessThan": "<",
    "LessThanOrEqual": "<=",
    "GreaterThan": ">",
    "GreaterThanOrEqual": ">=",
}
_MIRRORED = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


# -- reading Spark's plan --------------------------------------------------------------------


def _tree(nodes: list[dict[str, Any]], at: int = 0) -> tuple[dict[str, Any], int]:
    """Spark's pre-order JSON (``num-children``) as nested ``_children``; next index."""
    node = dict(nodes[at])
    at += 1
    children = []
    for _ in range(int(node.get("num-children", 0))):
        child, at = _tree(nodes, at)
        children.append(child)
    node["_children"] = children
    return node, at


def _expression(serialized: list[dict[str, Any]]) -> dict[str, Any]:
    return _tree(serialized)[0]


def _kind(node: Mapping[str, Any], prefix: str) -> str | None:
    name = str(node.get("class", ""))
    return name[len(prefix) :] if name.startswith(prefix) else None


class _NotPushable(Exception):
    """The plan is not of the shape; the plain plan runs."""


def _attribute(node: Mapping[str, Any]) -> tuple[str, str]:
    if _kind(node, _EXPR) != "AttributeReference":
        raise _NotPushable(f"not a column: {node.get('class')}")
    data_type = node.get("dataType")
    if not isinstance(data_type, str):
        raise _NotPushable("a nested column type")
    return str(node["name"]), data_type


def _literal(node: Mapping[str, Any], spark_type: str) -> Any:
    if _kind(node, _EXPR) != "Literal" or node.get("dataType") != spark_type:
        raise _NotPushable("not a literal of the column's type")
    value = node.get("value")
    if value is None:
        raise _NotPushable("a null literal")
    if spark_type in _INTEGRAL:
        return int(value)
    if spark_type == "boolean":
        return str(value).lower() == "true"
    return str(value)


def _conjuncts(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    if _kind(node, _EXPR) == "And":
        for child in node["_children"]:
            yield from _conjuncts(child)
    else:
        yield node


def _condition(node: dict[str, Any]) -> tuple[str, str, str, Any]:
    kind = _kind(node, _EXPR)
    if kind == "IsNotNull":
        column, spark_type = _attribute(node["_children"][0])
        return column, spark_type, "not_null", None
    if kind == "AttributeReference" and node.get("dataType") == "boolean":  # ``b = true``
        return str(node["name"]), "boolean", "==", True
    if kind == "Not" and _kind(node["_children"][0], _EXPR) == "AttributeReference":
        column, spark_type, _, _ = _condition(node["_children"][0])
        return column, spark_type, "==", False
    if kind == "Not" and _kind(node["_children"][0], _EXPR) == "EqualTo":
        column, spark_type, _, value = _condition(node["_children"][0])
        return column, spark_type, "!=", value
    operator = _COMPARISONS.get(kind or "")
    if operator is None:
        raise _NotPushable(f"filter {kind}")
    left, right = node["_children"]
    if _kind(left, _EXPR) != "AttributeReference":
        left, right, operator = right, left, _MIRRORED[operator]
    column, spark_type = _attribute(left)
    if spark_type not in _FILTER_TYPES:
        raise _NotPushable(f"a filter on a {spark_type} column")
    return column, spark_type, operator, _literal(right, spark_type)


def _aggregate(name: str, node: dict[str, Any], ansi: bool) -> Output:
    if _kind(node, _AGG) != "AggregateExpression" or node.get("isDistinct"):
        raise _NotPushable("not a plain aggregate")
    if len(node["_children"]) != 1:  # a FILTER (WHERE ...) clause
        raise _NotPushable("an aggregate with FILTER")
    function = node["_children"][0]
    kind = _kind(function, _AGG)
    arguments = function["_children"]
    if kind == "Count":
        if len(arguments) != 1:
            raise _NotPushable("COUNT of several columns")
        if _kind(arguments[0], _EXPR) == "Literal" and arguments[0].get("value") is not None:
            return Output(name, "count_all", None, "long")
        column, spark_type = _attribute(arguments[0])
        return Output(name, "count", column, spark_type)
    wanted = {"Sum": "sum", "Average": "avg", "Min": "min", "Max": "max"}.get(kind or "")
    if wanted is None or len(arguments) != 1:
        raise _NotPushable(f"aggregate {kind}")
    column, spark_type = _attribute(arguments[0])
    if wanted in ("sum", "avg") and spark_type not in {**_INTEGRAL, **_FLOATING}:
        raise _NotPushable(f"{wanted} of a {spark_type} column")
    if wanted == "sum" and spark_type in _INTEGRAL and not ansi:
        raise _NotPushable("integer SUM without ANSI mode wraps on overflow")
    if wanted in ("min", "max") and spark_type not in _MIN_MAX_TYPES:
        raise _NotPushable(f"{wanted} of a {spark_type} column")
    return Output(name, wanted, column, spark_type)


def _output(node: dict[str, Any], keys: set[str], ansi: bool) -> Output:
    if _kind(node, _EXPR) == "AttributeReference":
        column, spark_type = _attribute(node)
        if column not in keys:
            raise _NotPushable("a column that is not a grouping key")
        return Output(column, "key", column, spark_type)
    if _kind(node, _EXPR) != "Alias":
        raise _NotPushable(f"output {node.get('class')}")
    (child,) = node["_children"]
    if _kind(child, _EXPR) == "AttributeReference":
        column, spark_type = _attribute(child)
        if column not in keys:
            raise _NotPushable("a column that is not a grouping key")
        return Output(str(node["name"]), "key", column, spark_type)
    return _aggregate(str(node["name"]), child, ansi)


def recognise(frame: Any, *, ansi: bool) -> AggregatePlan | None:
    """The pushable aggregate ``frame`` (a bound view query) is, or None."""
    try:
        plan = frame._jdf.queryExecution().optimizedPlan()
        root, _ = _tree(json.loads(plan.toJSON()))
        return _recognise(root, ansi)
    except _NotPushable as reason:
        _log.debug("view query not pushed down: %s", reason)
        return None
    except Exception as exc:  # a plan this reader does not know (another Spark version)
        _log.debug("view query not pushed down: unreadable plan (%s)", exc)
        return None


def _sort_key(node: dict[str, Any]) -> tuple[str, str, bool, bool]:
    """(output name, Spark type, ascending, nulls first) of one ORDER BY key."""
    if _kind(node, _EXPR) != "SortOrder":
        raise _NotPushable(f"a sort key {node.get('class')}")
    name, spark_type = _attribute(node["_children"][0])
    if spark_type in _FLOATING:  # Spark's NaN ordering is not pyarrow's
        raise _NotPushable("ORDER BY a floating column")
    ascending = str(node["direction"].get("object", "")).endswith("Ascending$")
    nulls_first = str(node["nullOrdering"].get("object", "")).endswith("NullsFirst$")
    return name, spark_type, ascending, nulls_first


def _recognise(root: dict[str, Any], ansi: bool) -> AggregatePlan:
    order: tuple[tuple[str, str, bool, bool], ...] = ()
    if _kind(root, _PLAN) == "Sort":
        if not root.get("global"):
            raise _NotPushable("a sort within partitions")
        order = tuple(_sort_key(_expression(key)) for key in root["order"])
        (root,) = root["_children"]
    if _kind(root, _PLAN) != "Aggregate":
        raise _NotPushable(f"the plan's top is {root.get('class')}")
    keys = tuple(_attribute(_expression(e)) for e in root["groupingExpressions"])
    for _, spark_type in keys:
        if spark_type not in KEY_TYPES:
            raise _NotPushable(f"a {spark_type} grouping key")
    names = {name for name, _ in keys}
    outputs = tuple(_output(_expression(e), names, ansi) for e in root["aggregateExpressions"])
    (node,) = root["_children"]
    conditions: tuple[tuple[str, str, str, Any], ...] = ()
    while _kind(node, _PLAN) in ("Filter", "Project"):
        if _kind(node, _PLAN) == "Filter":
            condition = _expression(node["condition"])
            conditions += tuple(_condition(c) for c in _conjuncts(condition))
        else:
            for column in node["projectList"]:
                _attribute(_expression(column))
        (node,) = node["_children"]
    if _kind(node, _PLAN) != "MapInArrow":
        raise _NotPushable(f"the source is {node.get('class')}")
    function = _expression(node["functionExpr"])
    if function.get("name") != _READER_FUNCTION:
        raise _NotPushable("the source is not our reader")
    (leaf,) = node["_children"]
    if _kind(leaf, _PLAN) != "Range":
        raise _NotPushable("the source is not our reader")
    named = [out.name for out in outputs]
    for name, _, _, _ in order:
        if named.count(name) != 1:
            raise _NotPushable(f"ORDER BY {name!r}, not one output column")
    sort = tuple((name, ascending, nulls) for name, _, ascending, nulls in order)
    return AggregatePlan(keys, outputs, conditions, sort)


# -- running it ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Source:
    """The view's source as the tasks read it: its handle and the splits of its fragments."""

    handle: Any
    splits: list[list[int]]
    schema: pa.Schema

    def slices(self, spark: Any) -> int:
        # Each task costs the JVM and its Python worker a fixed setup and Lance's aggregate
        # uses the task's cores itself, so a task per core (taking several splits) beats a
        # task per split
        wanted = TASKS if TASKS else int(spark.sparkContext.defaultParallelism)
        return max(1, min(len(self.splits), wanted))


def _source(
    impl: str, properties: Mapping[str, str], table_id: Sequence[str], version: int | None
) -> _Source:
    from ..spark._options import SourceOptions
    from ..spark._source import _opened_snapshot, fragment_splits

    options = SourceOptions.parse(
        {
            **dict(properties),
            "impl": impl,
            "table": "$".join(table_id),
            "delimiter": "$",
            "version": "" if version is None else str(version),
        }
    )
    snapshot, _ = _opened_snapshot(options)
    return _Source(snapshot.handle, fragment_splits(snapshot.fragments), snapshot.table_schema)


def _partials_frame(spark: Any, plan: AggregatePlan, source: _Source) -> Any:
    """The tasks' partials as a DataFrame (Spark merges them)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    handle, splits = source.handle, source.splits

    def partials(indices: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        mine = [splits[i] for batch in indices for i in batch.column(0).to_pylist()]
        for table in task_partials(handle, plan, mine, None):
            yield from table.to_batches()

    schema = from_arrow_schema(partial_schema(plan), prefer_timestamp_ntz=True)
    return spark.range(0, len(splits), 1, source.slices(spark)).mapInArrow(partials, schema)


def pushed_down(
    spark: Any,
    plan: AggregatePlan,
    *,
    impl: str,
    properties: Mapping[str, str],
    table_id: Sequence[str],
    version: int | None,
) -> Any:
    """The DataFrame computing ``plan`` with partials in the tasks and Spark's final
    aggregation (nothing run yet): the path for partials too many for the driver."""
    from pyspark.sql import functions as F

    parts = _partials_frame(spark, plan, _source(impl, properties, table_id, version))
    finals = []
    for index, out in enumerate(plan.outputs):
        p = F.col(f"_p{index}")
        if out.function == "key":
            key = [c for c, _ in plan.keys].index(str(out.column))
            finals.append(F.col(f"_g{key}").alias(out.name))
        elif out.function in ("count", "count_all"):
            finals.append(F.coalesce(F.sum(p), F.lit(0)).cast("bigint").alias(out.name))
        elif out.function == "sum":
            wanted = "bigint" if out.spark_type in _INTEGRAL else "double"
            finals.append(F.sum(p).cast(wanted).alias(out.name))
        elif out.function == "avg":
            total, n = F.sum(p), F.sum(F.col(f"_c{index}"))
            finals.append(F.when(n > 0, total / n.cast("double")).alias(out.name))
        else:
            finals.append((F.min(p) if out.function == "min" else F.max(p)).alias(out.name))
    if not plan.keys:
        return parts.agg(*finals)
    grouped = parts.groupBy(*[f"_g{i}" for i in range(len(plan.keys))])
    merged = grouped.agg(
        *[f for f, o in zip(finals, plan.outputs, strict=True) if o.function != "key"]
    ).select(*[_final_column(f, o) for f, o in zip(finals, plan.outputs, strict=True)])
    if not plan.order:
        return merged
    keys = []
    for name, ascending, nulls_first in plan.order:
        column = F.col(f"`{name.replace('`', '``')}`")
        if ascending:
            keys.append(column.asc_nulls_first() if nulls_first else column.asc_nulls_last())
        else:
            keys.append(column.desc_nulls_first() if nulls_first else column.desc_nulls_last())
    return merged.orderBy(*keys)


def _final_column(final: Any, out: Output) -> Any:
    """After ``agg``, each output is its alias' column (keys re-aliased from ``_g*``)."""
    from pyspark.sql import functions as F

    if out.function == "key":
        return final
    return F.col(f"`{out.name.replace('`', '``')}`")


def driver_table(spark: Any, plan: AggregatePlan, source: _Source, output: pa.Schema) -> Any:
    """The view's rows, merged in the driver from partials one Spark stage made; None when
    the partials passed :data:`DRIVER_ROWS` (the tasks stop early, Spark merges instead)."""
    if DRIVER_ROWS <= 0:
        return None
    handle, splits = source.handle, source.splits
    slices = source.slices(spark)
    limit = (max(1, DRIVER_ROWS // slices), max(1, DRIVER_BYTES // slices))

    def partials(indices: Iterator[int]) -> Iterator[bytes]:
        mine = [splits[i] for i in indices]
        for table in task_partials(handle, plan, mine, limit):
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, table.schema) as stream:
                stream.write_table(table)
            yield sink.getvalue().to_pybytes()

    made = spark.sparkContext.parallelize(range(len(splits)), slices)
    chunks = made.mapPartitions(partials).collect()
    tables = [pa.ipc.open_stream(chunk).read_all() for chunk in chunks]
    if any(table.num_columns == 0 for table in tables):
        return None
    schema = partial_schema(plan)
    return final_table(plan, pa.concat_tables(tables or [schema.empty_table()]), output)


def _result_type(out: Output) -> pa.DataType:
    if out.function in ("count", "count_all"):
        return pa.int64()
    if out.function == "sum":
        return pa.int64() if out.spark_type in _INTEGRAL else pa.float64()
    if out.function == "avg":
        return pa.float64()
    return KEY_TYPES[out.spark_type]


@dataclass(frozen=True)
class _Analysed:
    plan: AggregatePlan
    output: pa.Schema
    #: the partials were too many for the driver last time: Spark merges them
    spark_merges: bool = False


#: pushable views this process analysed, by query, backend and source schema (LRU): a
#: refresh of the same definition over a source of the same schema has the same plan, so
#: binding and analysing the query again (Spark's analyser, the query guard) is skipped
_ANALYSED: OrderedDict[tuple[Any, ...], _Analysed] = OrderedDict()
ANALYSED_MAX = 256


def _key(
    query: str,
    namespace: Sequence[str],
    impl: str,
    properties: Mapping[str, str],
    ansi: bool,
    source: Sequence[str],
    schema: pa.Schema,
) -> tuple[Any, ...]:
    settings = json.dumps(dict(properties), sort_keys=True)
    shape = schema.serialize().to_pybytes()
    return (query, tuple(namespace), impl, settings, ansi, tuple(source), shape)


def _remember(key: tuple[Any, ...], analysed: _Analysed) -> None:
    _ANALYSED[key] = analysed
    _ANALYSED.move_to_end(key)
    while len(_ANALYSED) > ANALYSED_MAX:
        _ANALYSED.popitem(last=False)


def _ansi(spark: Any) -> bool:
    return str(spark.conf.get("spark.sql.ansi.enabled", "true")).lower() == "true"


def _run(
    spark: Any,
    key: tuple[Any, ...] | None,
    analysed: _Analysed,
    source: _Source,
    *,
    impl: str,
    properties: Mapping[str, str],
    table_id: Sequence[str],
    version: int | None,
) -> Any:
    """The rows (driver merge) or a DataFrame (Spark merges), remembering which it was."""
    if not analysed.spark_merges:
        merged = driver_table(spark, analysed.plan, source, analysed.output)
        if merged is not None:
            if key is not None:
                _remember(key, analysed)
            return merged
        _log.info("view partials past %d rows: Spark merges them", DRIVER_ROWS)
    if key is not None:
        _remember(key, _Analysed(analysed.plan, analysed.output, spark_merges=True))
    return pushed_down(
        spark, analysed.plan, impl=impl, properties=properties, table_id=table_id, version=version
    )


def maybe_pushed_down(
    spark: Any,
    frame: Any,
    sources: Sequence[Mapping[str, Any]],
    *,
    impl: str,
    properties: Mapping[str, str],
    query: str | None = None,
    namespace: Sequence[str] = (),
) -> Any:
    """``frame``'s result computed with partials in the tasks when its plan has the shape
    (and the result's columns and types are the plain plan's): a ``pyarrow.Table`` when the
    driver merged them, else a DataFrame (Spark merges); ``frame`` itself otherwise.
    Given the view's ``query`` (and the ``namespace`` it was bound in), a pushable plan is
    remembered for :func:`pushed_again`."""
    from pyspark.sql.pandas.types import to_arrow_schema

    if len(sources) != 1:
        return frame
    session = frame.sparkSession
    ansi = _ansi(session)
    plan = recognise(frame, ansi=ansi)
    if plan is None:
        return frame
    output = to_arrow_schema(frame.schema, timezone="UTC")
    if [f.name for f in output] != [o.name for o in plan.outputs] or any(
        f.type != _result_type(o) for f, o in zip(output, plan.outputs, strict=True)
    ):
        _log.debug("view query not pushed down: the partial plan's types differ")
        return frame
    table_id = [str(part) for part in sources[0]["id"]]
    version = sources[0].get("version")
    source = _source(impl, properties, table_id, version)
    key = None
    if query is not None:
        key = _key(query, namespace, impl, properties, ansi, table_id, source.schema)
    return _run(
        session,
        key,
        _Analysed(plan, output),
        source,
        impl=impl,
        properties=properties,
        table_id=table_id,
        version=version,
    )


def pushed_again(
    spark: Any,
    query: str,
    namespace: Sequence[str],
    table_id: Sequence[str],
    version: int | None,
    *,
    impl: str,
    properties: Mapping[str, str],
) -> tuple[Any, int | None] | None:
    """A view's result computed from the plan this process remembered for ``query`` over
    a source of the same schema (``version``: the source's, None: its latest), and the
    source version read; None when there is no such plan (bind and analyse the query)."""
    if not _ANALYSED:
        return None
    try:
        source = _source(impl, properties, table_id, version)
    except errors.LanceNamespaceError:  # gone, or no data: binding reports it as it should
        return None
    key = _key(query, namespace, impl, properties, _ansi(spark), table_id, source.schema)
    analysed = _ANALYSED.get(key)
    if analysed is None:
        return None
    read = source.handle.version
    result = _run(
        spark,
        key,
        analysed,
        source,
        impl=impl,
        properties=properties,
        table_id=table_id,
        version=read,
    )
    return result, read
