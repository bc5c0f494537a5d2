"""Rules of the protocol (lance-namespace 0.12/0.13) that span fields, applied to every
request once, before any I/O and whatever the backend.

**Merge keys.** MergeInsertIntoTable's ``on`` is a list of key columns since 0.12.0 (a
composite key). A single string, the form before (one column, or several separated by
commas, as this SDK documented it), is still accepted and read as that list. Its
``timeout`` must be a duration (``"30s"``, ``"5m"``, ``"1m 30s"``, ``"250ms"``): pylance's
directory namespace ignores one it cannot read, and merges anyway. An absent
``when_not_matched_insert_all`` is sent as false, the protocol's default (pylance's
namespaces insert the unmatched rows).

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

import datetime
import re
from collections.abc import Mapping
from typing import Any

from ..errors import InvalidInputError

__all__ = ["PROBE_FIELDS", "duration", "merge_keys", "normalize_request"]

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
        if body.get("timeout") is not None:
            duration(body["timeout"], f"{model_name}.timeout")
        on = body.get("on")
        if isinstance(on, str):
            body = {**body, "on": merge_keys(on)}
        if body.get("when_not_matched_insert_all") is None:
            # the protocol's default, said out loud: pylance's namespaces insert
            # unmatched rows when the field is absent, so a backend or a server that
            # hands the request on would otherwise answer differently
            body = {**body, "when_not_matched_insert_all": False}
        return body
    if model_name in _QUERIES:
        return _normalize_probes(model_name, body)
    return body


_DURATION_PART = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def duration(text: Any, what: str) -> datetime.timedelta:
    """``"30s"``, ``"5m"``, ``"1m 30s"``, ``"250ms"`` as a timedelta (InvalidInputError else)."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidInputError(f"{what} must be a duration such as '30s' or '5m'")
    seconds, at = 0.0, 0
    for match in _DURATION_PART.finditer(text):
        if match.start() != at:
            break
        seconds += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        at = match.end()
    if at == 0 or text[at:].strip():
        raise InvalidInputError(f"{what} must be a duration such as '30s' or '5m'")
    return datetime.timedelta(seconds=seconds)


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
