"""What a view's ``source_query`` may do: read the namespace's tables, nothing else.

The query comes from a client and runs on the operator's Spark cluster, whose driver
holds the backend's credentials and sees the server's file system. Spark SQL can do
much more than read bound tables, so before a query is analysed:

* it is bounded (:data:`MAX_QUERY_CHARS`) and must be one query, never a command:
  ``SET``, ``ADD JAR``, ``CREATE FUNCTION``, ``CACHE TABLE``... run as soon as
  ``session.sql`` sees them, before any check on their result could happen;
* its session cannot query files by path (``spark.sql.runSQLOnFiles=false``):
  ``SELECT * FROM text.`/etc/passwd``` would read the driver's files;

and once analysed (nothing has run yet), its whole plan, subqueries and CTEs included,
holds no node that reaches outside the data:

* ``TRANSFORM ... USING 'program'`` (ScriptTransformation) runs a program;
* ``reflect`` / ``java_method`` / ``try_reflect`` (CallMethodViaReflection) call Java
  static methods (``java_method('java.lang.System', 'getenv', ...)`` reads the driver's
  environment, credentials included);
* a relation that is neither one of the tables it was bound to nor data the query
  itself spells out (a catalog table of the Spark session, a file or JDBC relation).

Each refusal is InvalidInput (13) naming what was refused, never the query's text.
"""

from __future__ import annotations

from typing import Any, Final

from .. import errors

__all__ = ["MAX_QUERY_CHARS", "check_analysed", "check_parsed", "confine"]

#: the longest ``source_query`` accepted, in characters
MAX_QUERY_CHARS: Final = 65_536

#: the plan nodes a query may never hold, by class name, with why
_FORBIDDEN: Final = {
    "ScriptTransformation": "TRANSFORM ... USING runs a program",
    "CallMethodViaReflection": "reflect()/java_method() call Java methods",
    "LogicalRelation": "only the namespace's tables may be read",
    "HiveTableRelation": "only the namespace's tables may be read",
    "DataSourceV2Relation": "only the namespace's tables may be read",
    "DataSourceV2ScanRelation": "only the namespace's tables may be read",
    "StreamingRelationV2": "only the namespace's tables may be read",
    "StreamingRelation": "only the namespace's tables may be read",
}

#: the largest plan walked (nodes and expressions); a query past it is refused
_MAX_NODES: Final = 100_000


def check_parsed(session: Any, query: str) -> None:
    """Refuse a query that is too long, or that is a command (before ``session.sql``
    would run it)."""
    if len(query) > MAX_QUERY_CHARS:
        raise errors.InvalidInputError(
            f"source_query is longer than {MAX_QUERY_CHARS} characters ({len(query)})"
        )
    jvm = session._jvm
    try:
        parsed = session._jsparkSession.sessionState().sqlParser().parsePlan(query)
    except Exception as exc:  # a ParseException through py4j: the caller's sql() says why
        del exc
        return
    command = jvm.java.lang.Class.forName("org.apache.spark.sql.catalyst.plans.logical.Command")
    if command.isInstance(parsed):
        name = parsed.getClass().getSimpleName()
        raise errors.InvalidInputError(f"source_query must be a query, not a command ({name})")


def confine(session: Any) -> None:
    """Settings of the query's own session: no query of files by path."""
    session.conf.set("spark.sql.runSQLOnFiles", "false")


def check_analysed(frame: Any, allowed_leaves: frozenset[str] = frozenset()) -> None:
    """Refuse an analysed query whose plan holds a :data:`_FORBIDDEN` node anywhere
    (operators, expressions, subqueries, CTE definitions). ``allowed_leaves``: class names
    of relations that are the bound tables (their plans are walked as any other)."""
    plan = frame._jdf.queryExecution().analyzed()
    seen = 0
    stack = [plan]
    while stack:
        node = stack.pop()
        seen += 1
        if seen > _MAX_NODES:
            raise errors.InvalidInputError("source_query's plan is too large")
        name = node.getClass().getSimpleName()
        if name in _FORBIDDEN and name not in allowed_leaves:
            raise errors.InvalidInputError(f"source_query: {_FORBIDDEN[name]} ({name})")
        stack.extend(_iterate(node.children()))
        if _is_plan(node):
            stack.extend(_iterate(node.expressions()))
            stack.extend(_iterate(node.innerChildren()))
            stack.extend(_iterate(node.subqueries()))


def _is_plan(node: Any) -> bool:
    return bool(
        node.getClass().getName().startswith("org.apache.spark.sql.catalyst.plans.")
        or node.getClass().getName().startswith("org.apache.spark.sql.execution.")
    )


def _iterate(sequence: Any) -> list[Any]:
    found = []
    iterator = sequence.iterator()
    while iterator.hasNext():
        found.append(iterator.next())
    return found
