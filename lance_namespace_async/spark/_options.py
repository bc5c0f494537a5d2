"""The data source's options: a few of ours, the rest are the backend's properties."""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from .. import errors
from .._core.identifiers import Identifier, parse_identifier

__all__ = ["DELIMITER", "RESERVED", "SAVE_MODES", "SourceOptions"]

#: Spark users write table names dotted (``ns1.ns2.table``); ``delimiter`` changes it
DELIMITER = "."

#: option keys the data source reads itself; every other key is a backend property
RESERVED = frozenset(
    {
        "impl",
        "path",
        "table",
        "delimiter",
        "version",
        "columns",
        "batch_size",
        "save_mode",
        "max_rows_per_file",
        "push_filters",
    }
)
#: Spark's Python data sources accept only append and overwrite (UNSUPPORTED_DATA_SOURCE_SAVE_MODE);
#: the other two are asked for with ``save_mode`` under ``mode("append")``
SAVE_MODES = frozenset({"append", "overwrite", "errorifexists", "ignore"})


def _positive_int(options: Mapping[str, str], key: str, default: int | None) -> int | None:
    raw = options.get(key)
    if raw is None or raw == "":
        return default
    try:
        value = int(str(raw))
    except ValueError:
        raise errors.InvalidInputError(f"option {key!r} must be an integer") from None
    if value < (0 if key == "version" else 1):
        raise errors.InvalidInputError(f"option {key!r} must be a positive integer")
    return value


@attrs.frozen(repr=False)
class SourceOptions:
    impl: str
    properties: Mapping[str, str]
    table_id: Identifier
    version: int | None
    columns: tuple[str, ...] | None
    batch_size: int
    save_mode: str | None
    max_rows_per_file: int
    push_filters: bool | None

    def __repr__(self) -> str:  # properties carry secrets
        return f"SourceOptions(impl={self.impl!r}, table={list(self.table_id)!r})"

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> SourceOptions:
        """Options as Spark passes them (keys lower-cased by Spark)."""
        lowered = {str(k).lower(): str(v) for k, v in options.items() if v is not None}
        impl = lowered.get("impl", "").strip()
        if not impl:
            raise errors.InvalidInputError(
                "option 'impl' is required (dir, rest, iceberg, unity, glue, hive, or a class path)"
            )
        delimiter = lowered.get("delimiter") or DELIMITER
        name = lowered.get("table") or lowered.get("path") or ""
        table_id = parse_identifier(name, delimiter)
        if not table_id:
            raise errors.InvalidInputError(
                "a table identifier is required: load('ns.table') / save('ns.table') "
                "or option 'table'"
            )
        columns_option = lowered.get("columns")
        columns = (
            tuple(c.strip() for c in columns_option.split(",") if c.strip())
            if columns_option
            else None
        )
        save_mode = lowered.get("save_mode")
        if save_mode is not None:
            save_mode = save_mode.lower().replace("_", "")
            if save_mode == "error":
                save_mode = "errorifexists"
            if save_mode not in SAVE_MODES:
                raise errors.InvalidInputError(
                    f"option 'save_mode' must be one of {sorted(SAVE_MODES)}"
                )
        push = lowered.get("push_filters")
        if push is not None and push.lower() not in ("true", "false"):
            raise errors.InvalidInputError("option 'push_filters' must be true or false")
        return cls(
            impl=impl,
            push_filters=None if push is None else push.lower() == "true",
            properties={k: v for k, v in lowered.items() if k not in RESERVED},
            table_id=table_id,
            version=_positive_int(lowered, "version", None),
            columns=columns,
            batch_size=_positive_int(lowered, "batch_size", 8192) or 8192,
            save_mode=save_mode,
            max_rows_per_file=_positive_int(lowered, "max_rows_per_file", 1_048_576) or 1_048_576,
        )
