"""Rules of the protocol (lance-namespace 0.12/0.13) that span fields, applied to every
request once, before any I/O and whatever the backend.

**Merge keys.** MergeInsertIntoTable's ``on`` is a list of key columns since 0.12.0 (a
composite key). A single string, the form before (one column, or several separated by
commas, as this SDK documented it), is still accepted and read as that list.

**Probes.** How many IVF partitions a vector search probes: ``nprobes``,
``minimum_nprobes``, ``maximum_nprobes`` of QueryTable, AnalyzeTableQueryPlan and
ExplainTableQueryPlan's query. Since lance-namespace 0.13.0 a search names a range (probe
at least ``minimum_nprobes``, widen up to ``maximum_nprobes`` while fewer than ``k`` rows
qualify); the older exact ``nprobes`` is then ignored. pylance's scanner takes all three
but does not ignore ``nprobes`` beside the others (it narrows the range with it, even
below the minimum) and does not refuse a minimum above the maximum, so the request is
normalized here: bad values are InvalidInputError, and ``nprobes`` is dropped when the
range is given.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import InvalidInputError

__all__ = ["PROBE_FIELDS", "merge_keys", "normalize_request"]

#: the request fields of the range (a backend maps them to pylance's ``nearest``)
PROBE_FIELDS = ("minimum_nprobes", "maximum_nprobes")

#: request model -> where its query is (None: the request is the query)
_QUERIES: dict[str, str | None] = {
    "QueryTableRequest": None,
    "AnalyzeTableQueryPlanRequest": None,
    "ExplainTableQueryPlanRequest": "query",
}


def normalize_request(model_name: str, body: Mapping[str, Any]) -> Mapping[str, Any]:
    """``body`` (JSON data of a request) as the rules above want it; the same object when
    nothing changes."""
    if model_name == "MergeInsertIntoTableRequest":
        on = body.get("on")
        return {**body, "on": merge_keys(on)} if isinstance(on, str) else body
    if model_name in _QUERIES:
        return _normalize_probes(model_name, body)
    return body


def merge_keys(on: str) -> list[str]:
    """The key columns of the single-string form of ``on`` (``"a"``, ``"a,b"``)."""
    keys = [key.strip() for key in on.split(",")]
    return keys if all(keys) else [on]  # an empty part: left for the checks to refuse


def _normalize_probes(model_name: str, body: Mapping[str, Any]) -> Mapping[str, Any]:
    """``body`` with its query's probe range checked and the legacy ``nprobes`` dropped
    when the range is given."""
    field = _QUERIES[model_name]
    query = body if field is None else body.get(field)
    if not isinstance(query, Mapping):
        return body
    where = model_name if field is None else f"{model_name}.{field}"
    low, high = (query.get(name) for name in PROBE_FIELDS)
    for name, value in zip(PROBE_FIELDS, (low, high), strict=True):
        if value is not None and (type(value) is not int or value < 1):
            raise InvalidInputError(f"{where}.{name} must be an integer >= 1")
    if low is None and high is None:
        return body
    if low is not None and high is not None and low > high:
        raise InvalidInputError(
            f"{where}: minimum_nprobes ({low}) must not exceed maximum_nprobes ({high})"
        )
    if query.get("nprobes") is None:
        return body
    kept = {name: value for name, value in query.items() if name != "nprobes"}
    return kept if field is None else {**body, field: kept}
