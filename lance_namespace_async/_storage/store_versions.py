"""CreateTableVersion of a table on S3: the staged manifest's bytes put at the final name
with S3's conditional write (``If-None-Match: *``), so of two writers recording one
version exactly one wins and the other gets ConcurrentModification (14), as the hard
link does on a local filesystem (:mod:`.version_batches`).

Only the single operation: the batches keep needing a local filesystem (their undo
steps move files, and an object store has no rename). Other object stores (GCS, Azure)
still answer UnsupportedOperation (0). The S3 calls are botocore's, configured from the
table's storage options (endpoint, keys, region, ``allow_http``), the ones pylance
reads the table with; without keys botocore's own chain (environment, profile) applies.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlparse

from .. import errors
from .version_batches import _COMMITTED, _final_name, _version_of, _VersionEntry

__all__ = ["S3_SCHEMES", "committed_on_store", "record_on_store"]

#: the schemes of S3 locations (``s3a``/``s3n``: Hadoop's spellings)
S3_SCHEMES = frozenset({"s3", "s3a", "s3n"})

#: Lance storage option -> botocore client argument (both spellings pylance accepts)
_OPTION_NAMES = {
    "aws_endpoint": "endpoint_url",
    "endpoint": "endpoint_url",
    "aws_endpoint_url": "endpoint_url",
    "aws_access_key_id": "aws_access_key_id",
    "access_key_id": "aws_access_key_id",
    "aws_secret_access_key": "aws_secret_access_key",
    "secret_access_key": "aws_secret_access_key",
    "aws_session_token": "aws_session_token",
    "session_token": "aws_session_token",
    "aws_region": "region_name",
    "region": "region_name",
}


def _client(options: Mapping[str, str]) -> Any:
    try:
        import botocore.config
        import botocore.session
    except ImportError:  # pragma: no cover - botocore comes with the glue extra
        raise errors.UnsupportedOperationError(
            "CreateTableVersion on S3 needs botocore (pip install 'lance-namespace-async[s3]')"
        ) from None
    arguments: dict[str, Any] = {}
    for key, value in options.items():
        name = _OPTION_NAMES.get(key.lower())
        if name is not None and value:
            arguments[name] = value
    endpoint = arguments.get("endpoint_url")
    if endpoint is not None and "://" not in endpoint:
        secure = str(options.get("allow_http", "false")).lower() != "true"
        arguments["endpoint_url"] = ("https://" if secure else "http://") + endpoint
    config = botocore.config.Config(
        s3={"addressing_style": "path" if endpoint else "auto"},
        retries={"max_attempts": 3, "mode": "standard"},
    )
    return botocore.session.get_session().create_client("s3", config=config, **arguments)


def _key_in_table(spelled: str, bucket: str, prefix: str, table: str) -> str:
    """The bucket key of a staged manifest spelled as a URI, as the key (how pylance's
    writer spells it), as ``bucket/key`` or relative to the table; it must be inside the
    table's ``_versions/`` and not a committed manifest's name (InvalidInput)."""
    parsed = urlparse(spelled)
    if parsed.scheme in S3_SCHEMES:
        if parsed.netloc != bucket:
            raise errors.InvalidInputError(f"staged manifest {spelled!r} is in another bucket")
        key = parsed.path.lstrip("/")
    elif parsed.scheme:
        raise errors.InvalidInputError(f"staged manifest {spelled!r} is not on S3")
    elif spelled.startswith(f"{prefix}/"):  # pylance's spelling: the key in the bucket
        key = spelled
    elif spelled.startswith(f"{bucket}/{prefix}/"):
        key = spelled[len(bucket) + 1 :]
    else:
        key = f"{prefix}/{spelled.lstrip('/')}"
    parts = key.split("/")
    name = parts[-1]
    if (
        any(part in ("", ".", "..") for part in parts)
        or "/".join(parts[:-1]) != f"{prefix}/_versions"
        or _COMMITTED.match(name)
        or not name
    ):
        raise errors.InvalidInputError(
            f"no staged manifest at {spelled!r} inside the _versions of table {table!r}"
        )
    return key


def committed_on_store(location: str, options: Mapping[str, str] | None) -> dict[int, str]:
    """version -> file name of the committed manifests of a table on an object store
    (``{}`` for a local table, or without ``_versions``). Blocking."""
    from lance.file import LanceFileSession

    if "://" not in location or location.startswith("file:"):
        return {}
    session = LanceFileSession(location, storage_options=dict(options or {}) or None)
    committed: dict[int, str] = {}
    try:
        listed = session.list("_versions")
    except OSError:
        return {}
    for entry in listed:
        name = entry.rpartition("/")[2]
        version = _version_of(name)
        if version is not None:
            committed[version] = name
    return committed


def record_on_store(
    location: str, options: Mapping[str, str] | None, entry: _VersionEntry
) -> dict[str, Any]:
    """Record ``entry``'s version of the table at the S3 ``location``: the TableVersion
    body CreateTableVersion answers. Blocking: run it on a worker thread."""
    from lance.file import LanceFileSession

    table = ".".join(entry.table)
    parsed = urlparse(location)
    if parsed.scheme not in S3_SCHEMES:
        raise errors.UnsupportedOperationError(
            f"CreateTableVersion of table {table!r} at {parsed.scheme}:// is not supported "
            "(recording a version needs put-if-absent: a local filesystem or S3)"
        )
    bucket, prefix = parsed.netloc, parsed.path.strip("/")
    staged_key = _key_in_table(entry.manifest_path, bucket, prefix, table)
    session = LanceFileSession(location, storage_options=dict(options or {}) or None)
    committed = committed_on_store(location, options)
    if entry.version in committed:
        raise errors.ConcurrentModificationError(
            f"table {table!r} already has version {entry.version}"
        )
    scheme = entry.naming_scheme
    if scheme is None:  # the table's own scheme; V2 for a table without versions
        v1 = any(len(name) != len("0" * 20 + ".manifest") for name in committed.values())
        scheme = "V1" if v1 else "V2"
    final_name = _final_name(entry.version, scheme)
    staged_relative = staged_key[len(prefix) + 1 :]
    if not session.contains(staged_relative):
        raise errors.InvalidInputError(
            f"no staged manifest at {entry.manifest_path!r} inside table {table!r}"
        )
    with tempfile.TemporaryDirectory() as scratch:
        copy = os.path.join(scratch, "staged.manifest")
        session.download_file(staged_relative, copy)
        with open(copy, "rb") as file:
            data = file.read()
    if entry.manifest_size is not None and len(data) != entry.manifest_size:
        raise errors.InvalidInputError(
            f"manifest_size {entry.manifest_size} of {entry.manifest_path!r} is not its size"
        )
    _put_if_absent(dict(options or {}), bucket, f"{prefix}/_versions/{final_name}", data, entry)
    session.delete_file(staged_relative)
    folder, slash, _ = entry.manifest_path.rpartition("/")
    return {
        "version": entry.version,
        "manifest_path": folder + slash + final_name,
        "manifest_size": len(data),
    }


def _put_if_absent(
    options: dict[str, str], bucket: str, key: str, data: bytes, entry: _VersionEntry
) -> None:
    import botocore.exceptions

    client = _client(options)
    try:
        client.put_object(Bucket=bucket, Key=key, Body=data, IfNoneMatch="*")
    except botocore.exceptions.ClientError as exc:
        code = str(exc.response.get("Error", {}).get("Code", ""))
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if status in (409, 412) or code in ("PreconditionFailed", "ConditionalRequestConflict"):
            raise errors.ConcurrentModificationError(
                f"version {entry.version} of table {'.'.join(entry.table)!r} was recorded "
                "by another writer"
            ) from None
        raise
    finally:
        client.close()
