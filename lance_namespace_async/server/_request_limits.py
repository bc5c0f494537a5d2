"""Bounds on what one request may ask the storage engine to do (the server's data plane).

The query engine under pylance plans an expression recursively: a chain of 700 ``+``
in a 3.5 KB QueryTable ``filter`` overflows its stack (the process dies with SIGSEGV),
and a few hundred take seconds (measured with pylance 14.0.2, in a subprocess, on a
1,000-row table: a ``+`` chain of 200 plans in 0.13 s, 400 in 0.7 s, 650 in 2.1 s, 700
crashes; 2,000 ``AND``-ed comparisons take 1 s, 5,000 take 6 s; ``a IN (1, ..., 10000)``
takes 0.04 s; its SQL parser refuses nesting past ~50 parentheses or calls by itself).
Functions such as ``repeat(s, 8000)`` or ``lpad(s, n)`` multiply the size of every row
they touch: 67 bytes of AlterTableAddColumns ``repeat(s, 1000)`` add ~94 MiB to a table.
Parameters do the same (``k = 10**9``; a column aliased 2,000 times with ``k = 20,000``
held 13 GB; an HNSW index with ``m = ef_construction = 2**31 - 1`` builds for minutes).

:class:`RequestLimits` bounds all of them and :meth:`RequestLimits.check` applies them to
a request before any backend sees it: the REST adapter calls it for every request. The
expression check is a small tokenizer that knows quoted strings and identifiers, so a
``(`` inside ``'...'`` is text, not nesting. A value over a limit is
:class:`~.errors.InvalidInputError` (400, code 13) naming the field and the limit.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any

from .. import errors
from .._core.request_rules import PROBE_FIELDS

__all__ = ["DEFAULT_MAX_ANSWER_BYTES", "INDEX_PARAMETER_MAXIMA", "RequestLimits"]

#: the largest QueryTable answer the server sends, like the client's max_response_bytes
DEFAULT_MAX_ANSWER_BYTES = 64 * 1024 * 1024

#: CreateTableIndex / CreateTableScalarIndex build parameters and their maxima
#: (pylance's defaults are far below: num_partitions ~sqrt(rows), num_bits 8,
#: sample_rate 256, max_iterations 50, m 20, ef_construction 150, max_token_length 40)
INDEX_PARAMETER_MAXIMA: Mapping[str, int] = MappingProxyType(
    {
        "num_partitions": 65_536,
        "num_sub_vectors": 4_096,
        "num_bits": 16,
        "sample_rate": 4_096,
        "max_iterations": 1_000,
        "target_partition_size": 10_000_000,
        "m": 256,
        "ef_construction": 4_096,
        "max_token_length": 4_096,
    }
)

#: functions whose result grows with an argument, and which arguments (0-based) do so;
#: ``None``: every argument (``range(0, n)`` makes n elements)
_AMPLIFIERS: Mapping[str, tuple[int, ...] | None] = MappingProxyType(
    {
        "repeat": (1,),
        "lpad": (1,),
        "rpad": (1,),
        "array_repeat": (1,),
        "list_repeat": (1,),
        "array_resize": (1,),
        "list_resize": (1,),
        "range": None,
        "generate_series": None,
        "space": (0,),
    }
)

_TOKEN = re.compile(
    r"""
      (?P<space>\s+)
    | (?P<string>'(?:[^']|'')*'|[eE]'(?:[^'\\]|\\.|'')*')
    | (?P<quoted>"(?:[^"]|"")*"|`(?:[^`]|``)*`)
    | (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
    | (?P<word>[^\W\d]\w*)
    | (?P<open>[(\[])
    | (?P<close>[)\]])
    | (?P<comma>,)
    | (?P<op><=>|<>|!=|<=|>=|\|\||::|->>|->|[-+*/%=<>&|^!~.:@#?;{}])
    """,
    re.VERBOSE,
)
#: keywords that join two operands (each one a level of the engine's recursion)
_BINARY_WORDS = frozenset(
    {"and", "or", "like", "ilike", "similar", "is", "in", "between", "not", "xor", "div"}
)
#: tokens after which ``-``/``+`` is a sign, not a binary operator
_OPERAND_ENDS = frozenset({"number", "string", "quoted", "word", "close"})


@dataclass(frozen=True)
class RequestLimits:
    """What one request may ask of the storage engine; the defaults admit every
    realistic request (a filter of a few dozen conditions, ``a IN`` a thousand values,
    a k-NN search of thousands of rows) and refuse what crashes or exhausts the server.
    """

    #: bytes of one expression (filter, predicate, update or new-column SQL)
    max_expression_bytes: int = 32_768
    #: nesting of parentheses, brackets and calls in one expression
    max_expression_depth: int = 32
    #: binary operators (``+``, ``=``, ``AND``, ``LIKE`` ...) in one expression
    max_expression_operators: int = 256
    #: the factor one expression may grow a value by (``repeat(s, n)``, ``lpad(s, n)``,
    #: ``range(n)``; nested calls multiply); such arguments must be integer literals
    max_expression_amplification: int = 256
    #: expressions in one request (UpdateTable ``updates``, AddColumns ``new_columns``)
    max_expressions: int = 1_024
    #: QueryTable ``k`` (rows of a search or a scan's limit)
    max_k: int = 10_000
    #: QueryTable ``offset``
    max_offset: int = 1_000_000
    #: projected columns of a query (``column_names`` plus ``column_aliases``), and key
    #: columns of a MergeInsertIntoTable (``on``)
    max_columns: int = 1_024
    #: elements of a query vector (all vectors of a multi-vector together)
    max_vector_elements: int = 65_536
    #: ``nprobes``, ``minimum_nprobes`` and ``maximum_nprobes`` of a query
    max_nprobes: int = 65_536
    #: ``refine_factor`` of a query
    max_refine_factor: int = 1_000
    #: ``ef`` of an HNSW query
    max_ef: int = 65_536
    #: bytes of a QueryTable answer the server sends (more is refused, code 13)
    max_answer_bytes: int = DEFAULT_MAX_ANSWER_BYTES
    #: bytes of a branch or tag name
    max_name_bytes: int = 1_024
    #: index build parameters and their maxima (:data:`INDEX_PARAMETER_MAXIMA`)
    index_parameter_maxima: Mapping[str, int] = field(
        default_factory=lambda: INDEX_PARAMETER_MAXIMA
    )

    def __post_init__(self) -> None:
        for entry in fields(self):
            if entry.name == "index_parameter_maxima":
                continue
            _require_positive(entry.name, getattr(self, entry.name))
        maxima = self.index_parameter_maxima
        if not isinstance(maxima, Mapping):
            raise errors.InvalidInputError("index_parameter_maxima must be a mapping")
        for name, value in maxima.items():
            _require_positive(f"index_parameter_maxima[{name!r}]", value)
        object.__setattr__(self, "index_parameter_maxima", MappingProxyType(dict(maxima)))

    # -- the check -------------------------------------------------------------------------

    def check(self, operation_id: str, body: Mapping[str, Any]) -> None:
        """Refuse ``body`` (the request of ``operation_id``, as a JSON dict) when any of
        its expressions or parameters is over a limit; InvalidInputError naming both."""
        for name in ("branch", "tag", "name", "from_branch"):
            value = body.get(name)
            if isinstance(value, str) and len(value.encode()) > self.max_name_bytes:
                raise errors.InvalidInputError(
                    f"{name} is longer than max_name_bytes ({self.max_name_bytes} bytes)"
                )
        query = body.get("query") if operation_id == "ExplainTableQueryPlan" else body
        if operation_id in _QUERY_OPERATIONS and isinstance(query, Mapping):
            self._check_query(query, "query." if query is not body else "")
        keys = body.get("on") if operation_id == "MergeInsertIntoTable" else None
        if isinstance(keys, list) and len(keys) > self.max_columns:
            raise errors.InvalidInputError(
                f"on names {len(keys)} key columns, more than max_columns ({self.max_columns})"
            )
        if operation_id in ("CreateTableIndex", "CreateTableScalarIndex"):
            for name, maximum in self.index_parameter_maxima.items():
                self._at_most(name, body.get(name), maximum, f"index_parameter_maxima[{name}]")
        for path, expression in _expressions(operation_id, body, self.max_expressions):
            self.check_expression(path, expression)

    def check_expression(self, path: str, expression: Any) -> None:
        """Refuse one expression (SQL text) over a limit; ``path`` names its field."""
        if not isinstance(expression, str):
            return  # not ours to judge: the backend refuses a non-string
        size = len(expression.encode())
        if size > self.max_expression_bytes:
            raise errors.InvalidInputError(
                f"{path} is {size} bytes, more than max_expression_bytes "
                f"({self.max_expression_bytes})"
            )
        _ExpressionCheck(self, path).run(expression)

    def check_answer(self, size: int) -> None:
        """Refuse to send an answer of ``size`` bytes above ``max_answer_bytes``."""
        if size > self.max_answer_bytes:
            raise errors.InvalidInputError(
                f"the answer is {size} bytes, more than max_answer_bytes "
                f"({self.max_answer_bytes}): ask for fewer rows (k, filter) or columns"
            )

    # -- parts -------------------------------------------------------------------------------

    def _check_query(self, query: Mapping[str, Any], prefix: str) -> None:
        self._at_most(f"{prefix}k", query.get("k"), self.max_k, "max_k")
        self._at_most(f"{prefix}offset", query.get("offset"), self.max_offset, "max_offset")
        for probes in ("nprobes", *PROBE_FIELDS):
            self._at_most(f"{prefix}{probes}", query.get(probes), self.max_nprobes, "max_nprobes")
        self._at_most(
            f"{prefix}refine_factor",
            query.get("refine_factor"),
            self.max_refine_factor,
            "max_refine_factor",
        )
        self._at_most(f"{prefix}ef", query.get("ef"), self.max_ef, "max_ef")
        columns = query.get("columns")
        if isinstance(columns, Mapping):
            names = columns.get("column_names")
            aliases = columns.get("column_aliases")
            projected = [
                *(names if isinstance(names, list) else ()),
                *(aliases.values() if isinstance(aliases, Mapping) else ()),
            ]
            if len(projected) > self.max_columns:
                raise errors.InvalidInputError(
                    f"{prefix}columns projects {len(projected)} columns, more than "
                    f"max_columns ({self.max_columns})"
                )
            seen: set[Any] = set()
            for source in projected:
                if isinstance(source, str) and source in seen:
                    # a copy of a column multiplies the answer's size, never the table's data
                    raise errors.InvalidInputError(
                        f"{prefix}columns names the column {source[:100]!r} more than once"
                    )
                if isinstance(source, str):
                    seen.add(source)
        vector = query.get("vector")
        if isinstance(vector, Mapping):
            elements = 0
            single = vector.get("single_vector")
            if isinstance(single, list):
                elements += len(single)
            multi = vector.get("multi_vector")
            if isinstance(multi, list):
                elements += sum(len(v) if isinstance(v, list) else 1 for v in multi)
            if elements > self.max_vector_elements:
                raise errors.InvalidInputError(
                    f"{prefix}vector has {elements} elements, more than "
                    f"max_vector_elements ({self.max_vector_elements})"
                )
        text = query.get("full_text_query")
        if text is not None:
            size = len(repr(text).encode())
            if size > self.max_expression_bytes:
                raise errors.InvalidInputError(
                    f"{prefix}full_text_query is {size} bytes, more than "
                    f"max_expression_bytes ({self.max_expression_bytes})"
                )
        self.check_expression(f"{prefix}filter", query.get("filter"))

    @staticmethod
    def _at_most(path: str, value: Any, maximum: int, limit: str) -> None:
        if type(value) is int and value > maximum:
            raise errors.InvalidInputError(f"{path} is {value}, more than {limit} ({maximum})")


_QUERY_OPERATIONS = frozenset({"QueryTable", "ExplainTableQueryPlan", "AnalyzeTableQueryPlan"})

#: the fields holding one expression, by operation
_EXPRESSION_FIELDS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "CountTableRows": ("predicate",),
        "DeleteFromTable": ("predicate",),
        "UpdateTable": ("predicate",),
        "MergeInsertIntoTable": (
            "when_matched_update_all_filt",
            "when_not_matched_by_source_delete_filt",
        ),
        "AlterTableBackfillColumns": ("where",),
    }
)


def _expressions(
    operation_id: str, body: Mapping[str, Any], most: int
) -> Iterator[tuple[str, Any]]:
    """Every expression of the request, with the path of its field."""
    for name in _EXPRESSION_FIELDS.get(operation_id, ()):
        yield name, body.get(name)
    listed: Any = None
    if operation_id == "UpdateTable":
        listed = body.get("updates")
    elif operation_id == "AlterTableAddColumns":
        listed = body.get("new_columns")
    if not isinstance(listed, list):
        return
    if len(listed) > most:
        raise errors.InvalidInputError(
            f"{len(listed)} expressions in one request, more than max_expressions ({most})"
        )
    for position, entry in enumerate(listed):
        if operation_id == "UpdateTable" and isinstance(entry, list) and len(entry) == 2:
            yield f"updates[{position}]", entry[1]
        elif isinstance(entry, Mapping):
            for key in ("expression", "computed"):
                yield f"new_columns[{position}].{key}", entry.get(key)


class _ExpressionCheck:
    """One pass over an expression's tokens: nesting, operators, amplifying calls."""

    def __init__(self, limits: RequestLimits, path: str) -> None:
        self.limits = limits
        self.path = path

    def _refuse(self, what: str, limit: str) -> errors.InvalidInputError:
        value = getattr(self.limits, limit)
        return errors.InvalidInputError(f"{self.path}: {what}, more than {limit} ({value})")

    def run(self, text: str) -> None:
        limits = self.limits
        depth = 0
        operators = 0
        previous = ""
        word = ""  # the identifier just before, lower case (a call's name)
        # the open amplifying calls: [depth, growing argument positions or None, argument]
        calls: list[list[Any]] = []
        amplification = 1
        position = 0
        while position < len(text):
            match = _TOKEN.match(text, position)
            if match is None:
                # a character no token starts with (an unterminated quote, a stray ``$``):
                # skipped, so what follows is still counted; the engine's parser refuses it
                kind, token = "other", text[position]
                position += 1
            else:
                kind, token = match.lastgroup or "", match.group()
                position = match.end()
            if kind == "space":
                continue
            if calls and calls[-1][0] == depth:  # an argument of an amplifying call
                amplification = self._amplify(calls[-1], kind, token, previous, amplification)
            if kind == "open":
                depth += 1
                if depth > limits.max_expression_depth:
                    raise self._refuse(f"{depth} levels of nesting", "max_expression_depth")
                if token == "(" and previous in ("word", "quoted") and word in _AMPLIFIERS:
                    calls.append([depth, _AMPLIFIERS[word], 0])
            elif kind == "close":
                if calls and calls[-1][0] == depth:
                    calls.pop()
                depth = max(depth - 1, 0)
            elif kind == "comma":
                if calls and calls[-1][0] == depth:
                    calls[-1][2] += 1
            elif kind == "op" and token not in ("(", ")", ".", "::"):
                sign = token in ("-", "+") and previous not in _OPERAND_ENDS
                if not sign:
                    operators += 1
            elif kind == "word" and token.lower() in _BINARY_WORDS:
                operators += 1
            if operators > limits.max_expression_operators:
                raise self._refuse(f"{operators} operators", "max_expression_operators")
            if kind in ("word", "quoted"):
                word = token.strip('"`').lower() if kind == "quoted" else token.lower()
            previous = kind

    def _amplify(
        self, call: list[Any], kind: str, token: str, previous: str, amplification: int
    ) -> int:
        """The amplification after ``token`` inside an amplifying call's arguments: the
        product of every size literal of the expression (nested calls multiply; sibling
        calls are counted as if nested, which errs on the safe side)."""
        _, growing, argument = call
        if growing is not None and argument not in growing:
            return amplification
        if kind in ("close", "comma"):
            return amplification
        if kind == "number" and previous in ("open", "comma", "op"):
            try:
                factor = max(int(float(token)), 1)
            except (ValueError, OverflowError):
                factor = 2**63
            total = amplification * factor
            if total > self.limits.max_expression_amplification:
                raise self._refuse(
                    f"a size factor of {total} (repeat, lpad, range ...)",
                    "max_expression_amplification",
                )
            return total
        if kind == "op" and token in ("-", "+"):
            return amplification  # a sign
        raise errors.InvalidInputError(
            f"{self.path}: the size arguments of repeat, lpad, rpad, range ... must be "
            "integer literals (at most max_expression_amplification "
            f"({self.limits.max_expression_amplification}))"
        )


def _require_positive(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise errors.InvalidInputError(f"{name} must be an integer >= 1")
