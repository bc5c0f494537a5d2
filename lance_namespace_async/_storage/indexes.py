"""CreateTableIndex and CreateTableScalarIndex on a pylance dataset: every build
parameter of the request handed to pylance's builder, by its names.

Shared by the catalog backends (``metadata_ops``) and the directory backend, whose
pylance ``DirectoryNamespace`` would build the index itself but drops
``num_partitions``, ``num_sub_vectors`` and the other parameters (pylance 14.0.2).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from .. import errors
from .failures import translate

__all__ = ["SCALAR_INDEX_TYPES", "VECTOR_INDEX_ARGUMENTS", "index_builder"]

#: index types built by ``create_scalar_index``; every other type is a vector index
SCALAR_INDEX_TYPES = frozenset(
    {"BTREE", "BITMAP", "LABEL_LIST", "INVERTED", "FTS", "NGRAM", "ZONEMAP", "BLOOMFILTER"}
)
#: CreateTableIndex fields handed to pylance's vector index builder (same names there;
#: ``sample_rate``, ``max_iterations``, ``m`` and ``ef_construction`` through its kwargs)
VECTOR_INDEX_ARGUMENTS = (
    "num_partitions",
    "num_sub_vectors",
    "num_bits",
    "sample_rate",
    "max_iterations",
    "target_partition_size",
    "m",
    "ef_construction",
)
#: CreateTableIndex fields handed to pylance's full-text index builder
_TEXT_INDEX_ARGUMENTS = (
    "with_position",
    "base_tokenizer",
    "language",
    "max_token_length",
    "lower_case",
    "stem",
    "remove_stop_words",
    "ascii_folding",
)


@contextlib.contextmanager
def _parameters_refused(what: str) -> Iterator[None]:
    """pylance refuses parameters it cannot build with (num_sub_vectors not dividing the
    dimension, an unknown index type) as a plain ValueError: the caller's mistake (13),
    unless its words name something more precise (a missing column: 12)."""
    try:
        yield
    except ValueError as exc:
        typed = translate(exc)
        if type(typed) is errors.InternalError:
            raise errors.InvalidInputError(f"{what}: {exc}") from exc
        raise typed from exc


def index_builder(dataset: Any, body: Mapping[str, Any], what: str) -> Callable[[], None]:
    """The blocking call that builds the index ``body`` asks for on ``dataset`` (checked
    here, so bad input is refused before any work starts)."""
    column, kind = body.get("column"), str(body.get("index_type") or "").upper()
    if not isinstance(column, str) or not column or not kind:
        raise errors.InvalidInputError(f"{what} needs a column and an index type")
    name = body.get("name")
    if kind in SCALAR_INDEX_TYPES:
        kind = "INVERTED" if kind == "FTS" else kind
        text = {k: body[k] for k in _TEXT_INDEX_ARGUMENTS if body.get(k) is not None}

        def build_scalar() -> None:
            with _parameters_refused(what):
                dataset.create_scalar_index(column, kind, name=name, **text)

        return build_scalar
    arguments = {k: body[k] for k in VECTOR_INDEX_ARGUMENTS if body.get(k) is not None}
    if body.get("distance_type"):
        arguments["metric"] = str(body["distance_type"]).lower()

    def build_vector() -> None:
        with _parameters_refused(what):
            dataset.create_index(column, kind, name=name, **arguments)

    return build_vector
