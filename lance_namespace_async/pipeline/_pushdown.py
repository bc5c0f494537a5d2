"""Partial aggregation next to the data, for the common shape of a materialized view.

Why: a view such as ``SELECT k, COUNT(*), SUM(v) FROM events WHERE d >= 3 GROUP BY k``
read through our reader ships every source row from the Python tasks to the JVM (Arrow
→ Spark rows) only for Spark to fold them into a few groups. For that shape the tasks
can do the first half of Spark's own two-phase aggregation themselves: each scans its
fragments with the filter pushed into Lance, folds the rows into per-group partials with
pyarrow's ``group_by().aggregate()``, and ships only the partials; Spark then does the
final aggregation exactly as its ``Final`` phase would (sum of counts, sum of sums, min
of mins, ...). Results are those of the plain plan (see the equality property test).

**The shape** is recognised from Spark's own optimized logical plan of the bound query
(``toJSON()``), never from the SQL text: ``Aggregate`` over an ``Filter``s and column-only
``Project``s over our reader's ``MapInArrow`` of the view's single
source. Grouping keys are plain columns (integral, boolean, string, date, floating);
aggregates are ``COUNT(*)``, ``COUNT(col)``, ``SUM``/``AVG`` of integral or floating
columns, ``MIN``/``MAX`` of integral or string columns (Spark and Arrow both order strings
by their UTF-8 bytes; floating MIN/MAX is left to Spark, whose NaN ordering Arrow does not
share), none ``DISTINCT`` or with ``FILTER``; the filter is ``AND``-ed comparisons
(``= <> < <= > >=``) of an integral, boolean or string column with a literal, and
``IS NOT NULL``. Anything else (joins, HAVING, ORDER BY, expressions, casts on columns,
decimals, timestamps) takes the plain plan.

**Semantics kept.** ``SUM`` of integers is summed in the tasks as ``decimal(38,0)`` (no
silent wrap) and cast to ``bigint`` by Spark, which under ANSI mode (Spark 4's default)
fails the job on overflow as the plain plan does; without ANSI mode Spark wraps instead,
which partials cannot reproduce, so integer ``SUM`` is then not pushed down. ``AVG``
is Spark's: the sum of the values as doubles over their count, null for no values.
Floating sums differ from the plain plan only by summation order (the plain plan's
order depends on partitioning too).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

__all__ = ["AggregatePlan", "maybe_pushed_down", "pushed_down", "recognise"]

_log = logging.getLogger(__name__)

_EXPR = "org.apache.spark.sql.catalyst.expressions."
_AGG = _EXPR + "aggregate."
_PLAN = "org.apache.spark.sql.catalyst.plans.logical."
#: the name of our reader's function in the plan (``spark._read.read``)
_READER_FUNCTION = "read_partitions"
#: rows folded per pyarrow aggregation (bounds a task's memory)
BATCH_ROWS = 1 << 20
#: tasks of the partial stage (0: one per core of the cluster, Spark's default parallelism)
TASKS = 0

_INTEGRAL = {"byte": pa.int8(), "short": pa.int16(), "integer": pa.int32(), "long": pa.int64()}
_FLOATING = {"float": pa.float32(), "double": pa.float64()}
_KEY_TYPES = {**_INTEGRAL, **_FLOATING, "string": pa.string(), "boolean": pa.bool_()}
_KEY_TYPES["date"] = pa.date32()
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


@dataclass(frozen=True)
class Output:
    """One output column: a grouping key, or an aggregate of a column (None: ``*``)."""

    name: str
    function: str  # "key", "count", "count_all", "sum", "avg", "min", "max"
    column: str | None
    spark_type: str  # the input column's Spark type name


@dataclass(frozen=True)
class AggregatePlan:
    keys: tuple[tuple[str, str], ...]  # (column, Spark type) of each grouping key
    outputs: tuple[Output, ...]
    #: (column, Spark type, operator, Python literal) conjuncts; op "not_null" has no literal
    conditions: tuple[tuple[str, str, str, Any], ...]


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


def _recognise(root: dict[str, Any], ansi: bool) -> AggregatePlan:
    if _kind(root, _PLAN) != "Aggregate":
        raise _NotPushable(f"the plan's top is {root.get('class')}")
    keys = tuple(_attribute(_expression(e)) for e in root["groupingExpressions"])
    for _, spark_type in keys:
        if spark_type not in _KEY_TYPES:
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
    return AggregatePlan(keys, outputs, conditions)


# -- the tasks' partials and Spark's final aggregation ---------------------------------------


def _partial_specs(plan: AggregatePlan) -> list[tuple[str, str, str | None, pa.DataType]]:
    """(partial name, pyarrow function, column, partial type) of every partial."""
    specs: list[tuple[str, str, str | None, pa.DataType]] = []
    for index, out in enumerate(plan.outputs):
        if out.function == "count_all":
            specs.append((f"_p{index}", "count_all", None, pa.int64()))
        elif out.function == "count":
            specs.append((f"_p{index}", "count", out.column, pa.int64()))
        elif out.function == "sum":
            wide = pa.decimal128(38, 0) if out.spark_type in _INTEGRAL else pa.float64()
            specs.append((f"_p{index}", "sum", out.column, wide))
        elif out.function == "avg":
            specs.append((f"_p{index}", "sum", out.column, pa.float64()))
            specs.append((f"_c{index}", "count", out.column, pa.int64()))
        elif out.function in ("min", "max"):
            specs.append((f"_p{index}", out.function, out.column, _KEY_TYPES[out.spark_type]))
    return specs


def _filter_expression(plan: AggregatePlan) -> Any:
    import pyarrow.compute as pc

    expression = None
    for column, spark_type, operator, value in plan.conditions:
        field = pc.field(column)
        if operator == "not_null":
            term = field.is_valid()
        else:
            literal = pc.scalar(pa.scalar(value, _KEY_TYPES[spark_type]))
            term = {
                "==": field == literal,
                "!=": field != literal,
                "<": field < literal,
                "<=": field <= literal,
                ">": field > literal,
                ">=": field >= literal,
            }[operator]
        expression = term if expression is None else expression & term
    return expression


def _partials(plan: AggregatePlan, batch: pa.RecordBatch) -> pa.Table:
    """One batch's rows folded into per-group partials (named ``_g*``, ``_p*``, ``_c*``)."""
    table = pa.Table.from_batches([batch])
    columns: dict[str, pa.Array] = {}
    for index, (key, _) in enumerate(plan.keys):
        columns[f"_g{index}"] = table.column(key)
    aggregations: list[tuple[Any, ...]] = []
    for name, function, column, partial_type in _partial_specs(plan):
        if column is None:
            aggregations.append(([], "count_all"))
            continue
        values = table.column(column)
        if function == "sum":
            values = values.cast(partial_type)
        columns[name] = values
        aggregations.append((name, function))
    if not columns:  # COUNT(*) alone, no keys: the rows still count
        columns["_rows"] = pa.nulls(table.num_rows)
    folded = pa.table(columns).group_by(
        [f"_g{i}" for i in range(len(plan.keys))], use_threads=False
    )
    result = folded.aggregate(aggregations)
    renamed = []
    for name, function, column, _ in _partial_specs(plan):
        renamed.append(("count_all" if column is None else f"{name}_{function}", name))
    out = {f"_g{i}": result.column(f"_g{i}") for i in range(len(plan.keys))}
    for produced, name in renamed:
        out[name] = result.column(produced)
    return pa.table(out)


def _partial_schema(plan: AggregatePlan) -> pa.Schema:
    fields = [pa.field(f"_g{i}", _KEY_TYPES[t]) for i, (_, t) in enumerate(plan.keys)]
    fields += [pa.field(name, partial) for name, _, _, partial in _partial_specs(plan)]
    return pa.schema(fields)


def pushed_down(
    spark: Any,
    plan: AggregatePlan,
    *,
    impl: str,
    properties: Mapping[str, str],
    table_id: Sequence[str],
    version: int | None,
) -> Any:
    """The DataFrame computing ``plan`` with partials in the tasks (nothing run yet)."""
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import from_arrow_schema

    from ..spark._options import SourceOptions
    from ..spark._source import ROWS_PER_SPLIT, _opened_snapshot

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
    splits: list[list[int]] = []
    rows = 0
    for fragment_id, fragment_rows in snapshot.fragments:
        if not splits or rows + fragment_rows > ROWS_PER_SPLIT:
            splits.append([])
            rows = 0
        splits[-1].append(fragment_id)
        rows += fragment_rows
    handle = snapshot.handle
    needed = sorted(
        {c for c, _ in plan.keys} | {o.column for o in plan.outputs if o.column is not None}
    )
    schema = _partial_schema(plan)

    def partials(indices: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        dataset = None
        for batch in indices:
            for index in batch.column(0).to_pylist():
                if dataset is None:
                    dataset = handle.open()
                scanner = dataset.scanner(
                    columns=needed or None,
                    with_row_id=not needed,
                    filter=_filter_expression(plan),
                    fragments=[dataset.get_fragment(i) for i in splits[index]],
                    batch_size=BATCH_ROWS,
                )
                for rows_batch in scanner.to_batches():
                    if rows_batch.num_rows:
                        yield from _partials(plan, rows_batch).cast(schema).to_batches()

    count = max(len(splits), 1)
    if not splits:
        splits.append([])
    # Each task costs the JVM and its Python worker a fixed setup; partials are cheap,
    # so a task per core (taking several splits) beats a task per split
    slices = max(1, min(count, TASKS if TASKS else spark.sparkContext.defaultParallelism))
    parts = spark.range(0, count, 1, slices).mapInArrow(
        partials, from_arrow_schema(schema, prefer_timestamp_ntz=True)
    )
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
    if plan.keys:
        grouped = parts.groupBy(*[f"_g{i}" for i in range(len(plan.keys))])
        return grouped.agg(
            *[f for f, o in zip(finals, plan.outputs, strict=True) if o.function != "key"]
        ).select(*[_final_column(f, o) for f, o in zip(finals, plan.outputs, strict=True)])
    return parts.agg(*finals)


def _final_column(final: Any, out: Output) -> Any:
    """After ``agg``, each output is its alias' column (keys re-aliased from ``_g*``)."""
    from pyspark.sql import functions as F

    if out.function == "key":
        return final
    return F.col(f"`{out.name.replace('`', '``')}`")


def maybe_pushed_down(
    spark: Any,
    frame: Any,
    sources: Sequence[Mapping[str, Any]],
    *,
    impl: str,
    properties: Mapping[str, str],
) -> Any:
    """``frame`` computed with partials in the tasks when its plan has the shape (and the
    result's columns and types are the plain plan's); else ``frame`` itself."""
    if len(sources) != 1:
        return frame
    session = frame.sparkSession
    ansi = str(session.conf.get("spark.sql.ansi.enabled", "true")).lower() == "true"
    plan = recognise(frame, ansi=ansi)
    if plan is None:
        return frame
    source = sources[0]
    pushed = pushed_down(
        session,
        plan,
        impl=impl,
        properties=properties,
        table_id=[str(part) for part in source["id"]],
        version=source.get("version"),
    )
    plain = [(f.name, f.dataType) for f in frame.schema.fields]
    if [(f.name, f.dataType) for f in pushed.schema.fields] != plain:
        _log.debug("view query not pushed down: the partial plan's schema differs")
        return frame
    return pushed
