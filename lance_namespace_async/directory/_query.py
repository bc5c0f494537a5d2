"""QueryTable of the directory backend on the table directly, as pylance's operation runs it.

pylance's Rust ``DirectoryNamespace.query_table`` finds the table by a scan of ``__manifest``
(as for every call), opens it and builds one lance scanner from the request. Here the table is
opened at the location the manifest copy proves current (``_data``), and the request is turned
into the arguments of pylance's Python ``LanceDataset.scanner`` that build the same scanner:

* ``vector.single_vector`` (non-empty): a nearest-neighbour search of ``vector_column``
  (``"vector"`` when absent, as pylance) for ``k`` rows (10 when ``k`` is 0), with
  ``distance_type``, ``nprobes`` or ``minimum_nprobes``/``maximum_nprobes``, ``ef``,
  ``refine_factor``, ``lower_bound``/``upper_bound``, ``bypass_vector_index`` and
  ``fast_search`` (these only with a vector, as pylance);
  ``offset`` skips rows of the answer. An empty vector is a plain scan.
* a plain scan takes ``k`` > 0 as its limit, with ``offset``; ``k`` = 0 is no limit (and
  pylance then ignores the offset: so is it here).
* ``prefilter``, ``columns.column_names`` (non-empty), ``filter`` (non-empty),
  ``with_row_id`` (true) and ``version`` apply to both.

Anything else, or anything outside the values mapped here (a multi-vector, a full-text
query, column aliases, a branch, a distance name pylance does not know, a number out of its
range, a vector column not in the schema), goes to pylance's operation; so does any failure
here (a read: nothing is written, asking pylance as well changes nothing, and pylance
reports the error in its words). The answer is an Arrow IPC file, as pylance's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._core.request_rules import PROBE_FIELDS
from ._reads import Confine, read_directly

if TYPE_CHECKING:
    from .._core.identifiers import Identifier
    from ._manifest_snapshot import ManifestSnapshots

__all__ = ["QUERY_FIELDS", "run_query", "scanner_arguments"]

#: QueryTable fields mapped here; a request setting any other one goes to pylance
QUERY_FIELDS = frozenset(
    {
        "id",
        "version",
        "k",
        "vector",
        "vector_column",
        "prefilter",
        "distance_type",
        "nprobes",
        "minimum_nprobes",
        "maximum_nprobes",
        "ef",
        "refine_factor",
        "lower_bound",
        "upper_bound",
        "bypass_vector_index",
        "fast_search",
        "columns",
        "filter",
        "with_row_id",
        "offset",
    }
)

#: the distance names pylance's operation accepts (any case), as lance's scanner names them
_METRICS = {
    "l2": "l2",
    "euclidean": "l2",
    "cosine": "cosine",
    "dot": "dot",
    "inner_product": "dot",
    "hamming": "hamming",
}

_INT32 = (-(2**31), 2**31)


def _int(value: Any, low: int = _INT32[0], high: int = _INT32[1]) -> bool:
    return type(value) is int and low <= value < high


#: the JSON numbers of a request (bool, an int subclass, is not one)
_NUMBERS = frozenset({int, float})


def _number(value: Any) -> bool:
    return type(value) in _NUMBERS


def scanner_arguments(body: dict[str, Any]) -> tuple[dict[str, Any], str | None] | None:
    """``LanceDataset.scanner`` keyword arguments for the QueryTable ``body`` (its None
    fields dropped), with the vector column to find in the schema; None when pylance
    must answer."""
    if not body.keys() <= QUERY_FIELDS:
        return None
    k = body.get("k", 0)
    if not _int(k, 0):
        return None  # pylance refuses a negative k
    version = body.get("version")
    if version is not None and not _int(version, 0, 2**63):
        return None
    offset = body.get("offset")
    if offset is not None and not _int(offset, 0):
        return None
    vector = body.get("vector", {})
    if not isinstance(vector, dict) or not vector.keys() <= {"single_vector"}:
        return None  # a multi-vector, or a shape pylance would read otherwise
    single = vector.get("single_vector", [])
    if not isinstance(single, list) or not {type(x) for x in single} <= _NUMBERS:
        return None
    arguments: dict[str, Any] = {}
    prefilter = body.get("prefilter")
    if prefilter is not None:
        if not isinstance(prefilter, bool):
            return None
        arguments["prefilter"] = prefilter
    column: str | None = None
    if single:
        nearest = _nearest(body, single, k)
        if nearest is None:
            return None
        column = nearest["column"]
        arguments["nearest"] = nearest
        fast_search = body.get("fast_search")
        if fast_search is not None and not isinstance(fast_search, bool):
            return None
        if fast_search:
            arguments["fast_search"] = True
        if offset is not None:
            arguments["offset"] = offset
    elif k > 0:
        arguments["limit"] = k
        if offset is not None:
            arguments["offset"] = offset
    columns = body.get("columns")
    if columns is not None:
        if not isinstance(columns, dict) or columns.get("column_aliases"):
            return None
        names = columns.get("column_names")
        if names:
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                return None
            arguments["columns"] = list(names)
    predicate = body.get("filter")
    if predicate is not None:
        if not isinstance(predicate, str):
            return None
        if predicate:
            arguments["filter"] = predicate
    with_row_id = body.get("with_row_id")
    if with_row_id is not None and not isinstance(with_row_id, bool):
        return None
    if with_row_id:
        arguments["with_row_id"] = True
    return arguments, column


def _nearest(body: dict[str, Any], single: list[Any], k: int) -> dict[str, Any] | None:
    """The ``nearest`` argument of a vector search; None when pylance must answer."""
    import numpy as np

    column = body.get("vector_column", "vector")
    if not isinstance(column, str):
        return None
    try:  # pylance reads the vector as 32-bit floats
        with np.errstate(over="ignore", invalid="ignore"):
            query = np.asarray(single, dtype=np.float32)
    except (OverflowError, ValueError, TypeError):
        return None
    if not np.isfinite(query).all():
        return None  # out of float32's range: pylance's to judge
    nearest: dict[str, Any] = {"column": column, "q": query, "k": k or 10}
    distance = body.get("distance_type")
    if distance is not None:
        metric = _METRICS.get(distance.lower()) if isinstance(distance, str) else None
        if metric is None:
            return None
        nearest["metric"] = metric
    for name in ("nprobes", *PROBE_FIELDS, "ef", "refine_factor"):
        value = body.get(name)
        if value is not None:
            if not _int(value, 1):
                return None  # pylance's own checks of these differ: its words
            nearest[name] = value
    lower, upper = body.get("lower_bound"), body.get("upper_bound")
    if lower is not None or upper is not None:
        if not all(bound is None or _number(bound) for bound in (lower, upper)):
            return None
        nearest["distance_range"] = (
            None if lower is None else float(np.float32(lower)),
            None if upper is None else float(np.float32(upper)),
        )
    bypass = body.get("bypass_vector_index")
    if bypass is not None:
        if not isinstance(bypass, bool):
            return None
        nearest["use_index"] = not bypass
    return nearest


def run_query(
    snapshots: ManifestSnapshots,
    session: Any,
    table: Identifier,
    version: int | None,
    arguments: dict[str, Any],
    column: str | None,
    confine: Confine,
) -> bytes | None:
    """The answer's IPC file, or None when pylance must answer (worker thread)."""
    from .._core.arrow_data import ipc_file_bytes

    def query(dataset: Any) -> bytes | None:
        if column is not None and column not in dataset.schema.names:
            return None  # pylance finds (or refuses) a nested or differently cased name
        return ipc_file_bytes(dataset.scanner(**arguments).to_table())

    return read_directly(snapshots, session, table, version, query, confine)
