"""The versions of a directory table as ListTableVersions answers them."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote, urlparse

from .. import errors
from .._core.paging import token_of

__all__ = ["page_of_versions", "relative_manifest", "versions_of"]


def relative_manifest(version: dict[str, Any], location: str) -> dict[str, Any]:
    """The version with its ``manifest_path`` relative to the table, as the spec allows.

    pylance answers the object-store path (``srv/root/<dir>/_versions/N.manifest``),
    which shows the server's layout to every client and means nothing on theirs.
    """
    path = version.get("manifest_path")
    if not isinstance(path, str):
        return version
    table_path = urlparse(location).path if "://" in location else location
    prefix = unquote(table_path).strip("/") + "/"
    if path.lstrip("/").startswith(prefix):
        version["manifest_path"] = path.lstrip("/")[len(prefix) :]
    elif "/_versions/" in path:  # another spelling of the table's path: keep the table's part
        version["manifest_path"] = "_versions/" + path.rsplit("/_versions/", 1)[1]
    return version


def versions_of(dataset: Any) -> list[dict[str, Any]]:
    """The versions of an opened dataset, for a table pylance lists none of."""
    out: list[dict[str, Any]] = []
    for entry in dataset.versions():
        timestamp = entry.get("timestamp")
        out.append(
            {
                "version": int(entry["version"]),
                "manifest_path": f"_versions/{int(entry['version'])}.manifest",
                "timestamp_millis": int(timestamp.timestamp() * 1000) if timestamp else None,
                "metadata": {str(k): str(v) for k, v in (entry.get("metadata") or {}).items()},
            }
        )
    return out


def page_of_versions(
    versions: list[dict[str, Any]], page_token: Any, limit: int | None, *, descending: bool
) -> tuple[list[dict[str, Any]], str | None]:
    """One page of versions in version order and the next page's token: the page token
    is the last version number of the previous page (exclusive start)."""
    versions.sort(key=lambda v: int(v["version"]), reverse=descending)
    start = token_of(page_token)
    if start is not None:
        try:
            after = int(start)
        except ValueError:
            raise errors.InvalidInputError(f"invalid page_token {start!r}") from None
        versions = [
            v for v in versions if (v["version"] < after if descending else v["version"] > after)
        ]
    token = None
    if limit is not None and len(versions) > limit:
        versions = versions[:limit]
        token = str(versions[-1]["version"])
    return versions, token
