"""What every catalog backend does with the Lance tables themselves.

Catalogs (directory, Iceberg, Unity, Glue, Hive) only know where a table lives;
the table's version, schema and statistics come from opening it with pylance,
and dropping a table deletes its directory. That happens here, once: blocking
pylance and filesystem calls run on bounded anyio worker threads, and their
failures become typed errors.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar
from urllib.parse import unquote, urlparse

import anyio
import anyio.to_thread

from . import errors
from ._arrow_json import json_arrow_schema

__all__ = [
    "TABLE_TYPE",
    "LanceTables",
    "as_uri",
    "canonical",
    "has_versions",
    "lance_parameters",
    "local_path",
    "translate",
]

T = TypeVar("T")

#: the property or parameter that marks a catalog table as a Lance table
TABLE_TYPE = "table_type"

_RUST_SOURCE_SUFFIX = re.compile(r",\s*/home/runner/\S+?\.rs:\d+:\d+")


def local_path(location: str) -> str | None:
    """The local filesystem path of a location, or None for an object store."""
    if location.startswith("file:"):
        return unquote(urlparse(location).path)  # a URI: non-ASCII names arrive encoded
    if "://" in location:
        return None
    return location


def canonical(location: str) -> str:
    """Local locations as ``file://`` URIs, so every operation reports one form.

    Catalogs store them variously (``/p``, ``file:/p`` as Hadoop writes them,
    ``file:///p``); all three become ``file:///p``.
    """
    if location.startswith("/"):
        return "file://" + os.path.normpath(location)
    if location.startswith("file:") and not location.startswith("file://"):
        return "file://" + os.path.normpath("/" + location[len("file:") :].lstrip("/"))
    return location


def as_uri(location: str) -> str:
    """A complete URI for a location (relative paths against the cwd)."""
    if "://" in location:
        return location
    return "file://" + os.path.abspath(location)


def has_versions(location: str) -> bool:
    """Whether a table directory holds Lance versions (object stores: assume so)."""
    path = local_path(location)
    return path is None or os.path.isdir(os.path.join(path, "_versions"))


def translate(exc: BaseException) -> errors.LanceNamespaceError:
    """Turn an exception of pylance or the OS into our typed error."""
    if isinstance(exc, errors.LanceNamespaceError):
        return exc
    message = _RUST_SOURCE_SUFFIX.sub("", str(exc))
    code = getattr(exc, "code", None)
    if isinstance(code, int) and type(exc).__module__.startswith("lance_namespace"):
        if code == errors.ErrorCode.INTERNAL:
            # pylance 14.0.2 reports a caller's mistake inside a data operation as
            # Internal: a filter Lance cannot parse, rows of another schema
            reason = message.removeprefix("Internal error: ")
            if "InvalidInput {" in message:
                return errors.InvalidInputError(reason)
            if "with different schema" in message or "SchemaMismatch" in message:
                return errors.TableSchemaValidationError(reason)
        return errors.from_code(int(code), message)
    if isinstance(exc, ValueError) and "Invalid user input" in message:
        return errors.InvalidInputError(message)  # pylance's word for a caller's mistake
    if "JSON number out of range" in message:  # a number serde_json cannot hold
        return errors.InvalidInputError(f"a number of the request is out of range: {message}")
    if isinstance(exc, OverflowError):  # a number pylance cannot hold (k=10**20, ...)
        return errors.InvalidInputError(f"a number of the request is out of range: {message}")
    if isinstance(exc, NotImplementedError):
        return errors.UnsupportedOperationError(message)
    if isinstance(exc, FileNotFoundError):
        return errors.TableNotFoundError(message)
    if isinstance(exc, PermissionError):
        return errors.PermissionDeniedError(message)
    return errors.InternalError(f"{type(exc).__name__}: {message}")


def lance_parameters(requested: Mapping[str, Any] | None) -> dict[str, str]:
    """A catalog table's properties as strings, marked ``table_type=lance``."""
    parameters = {str(k): str(v) for k, v in (requested or {}).items()}
    parameters[TABLE_TYPE] = "lance"
    return parameters


def _delete_tree(location: str, storage_options: dict[str, str] | None) -> None:
    """Delete a table directory; object stores through the table's storage options."""
    import shutil

    local = local_path(location)
    if local is not None:
        if os.path.exists(local):
            shutil.rmtree(local)
        return
    import lance

    lance.LanceDataset.drop(location, storage_options=storage_options, ignore_not_found=True)


def _version_metadata(dataset: Any) -> dict[str, str]:
    for entry in dataset.versions():
        if int(entry["version"]) == int(dataset.version):
            return {str(k): str(v) for k, v in (entry.get("metadata") or {}).items()}
    return {}


class LanceTables:
    """Opens, inspects and deletes Lance tables for a backend, off the event loop."""

    def __init__(self, *, threads: int, storage_options: Mapping[str, str] | None = None) -> None:
        self.limiter = anyio.CapacityLimiter(threads)
        self.storage_options = dict(storage_options or {}) or None

    def options_for(
        self, properties: Mapping[str, Any], exclude: frozenset[str] = frozenset({TABLE_TYPE})
    ) -> dict[str, str]:
        """A table's storage options: its properties (less catalog markers) over the
        configured ``storage.*`` options."""
        options = dict(self.storage_options or {})
        options.update({str(k): str(v) for k, v in properties.items() if k not in exclude})
        return options

    async def complete(
        self, result: dict[str, Any], request: Mapping[str, Any], location: str, version: Any
    ) -> None:
        """The parts of a DescribeTable answer that come from the table itself."""
        if request.get("with_table_uri") is True:
            result["table_uri"] = canonical(location)
        detailed = request.get("load_detailed_metadata") is True
        if detailed or (isinstance(version, int) and not isinstance(version, bool)):
            await self.describe(result, location, version, detailed=detailed)
        elif request.get("check_declared") is True:
            result["is_only_declared"] = await self.open(location) is None

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a blocking call on a bounded worker thread, with typed errors."""
        try:
            return await anyio.to_thread.run_sync(fn, *args, limiter=self.limiter)
        except errors.LanceNamespaceError:
            raise
        except Exception as exc:
            raise translate(exc) from exc

    async def open(self, location: str, version: int | None = None) -> Any:
        """The dataset at ``location`` (at ``version``), or None when it has no data yet."""
        import lance

        if version is not None and not 0 <= version < 2**64:
            # Lance versions are u64: pylance would raise OverflowError (an internal error)
            raise errors.InvalidInputError(f"version must be >= 0 and < 2**64, got {version}")

        def open_it() -> Any:
            try:
                return lance.dataset(
                    location, version=version, storage_options=self.storage_options
                )
            except ValueError as exc:
                text = str(exc)
                missing = "not found" in text.lower()
                if version is not None and missing and has_versions(location):
                    raise errors.TableVersionNotFoundError(
                        f"version {version} of table at {location!r} not found"
                    ) from None
                if "was not found" in text or "Not found" in text:
                    return None
                raise

        return await self.run(open_it)

    async def describe(
        self, result: dict[str, Any], location: str, version: Any, *, detailed: bool
    ) -> None:
        """Fill ``result`` with version, and if ``detailed`` schema, stats and metadata."""
        wanted = version if isinstance(version, int) and not isinstance(version, bool) else None
        dataset = await self.open(location, wanted)
        if dataset is None:
            if wanted is not None:
                raise errors.TableVersionNotFoundError(
                    f"table at {location!r} is only declared and has no version {wanted}"
                )
            result["is_only_declared"] = True
            return
        result["version"] = int(dataset.version)
        result["is_only_declared"] = False
        if detailed:
            stats = await self.run(dataset.stats.dataset_stats)
            result["schema"] = json_arrow_schema(dataset.schema)
            result["stats"] = {
                "num_deleted_rows": int(stats.get("num_deleted_rows", 0)),
                "num_fragments": int(stats.get("num_fragments", 0)),
            }
            summary = await self.run(_version_metadata, dataset)
            if summary:
                result["metadata"] = summary

    async def require(self, location: str) -> Any:
        """The dataset at ``location``; InvalidInput when no Lance table is there."""
        try:
            dataset = await self.open(location)
        except errors.InternalError as exc:
            raise errors.InvalidInputError(f"no Lance table at {location!r}: {exc}") from None
        if dataset is None:
            raise errors.InvalidInputError(f"no Lance table at {location!r}")
        return dataset

    async def delete(self, location: str, storage_options: Mapping[str, str] | None = None) -> None:
        """Delete a table's directory (local or object store); a missing one is fine.

        ``storage_options`` are the table's (see :meth:`options_for`); default: the
        configured ones.
        """
        options = dict(storage_options) if storage_options is not None else self.storage_options
        await self.run(_delete_tree, location, options or None)
