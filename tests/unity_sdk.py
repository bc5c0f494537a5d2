"""The official Unity Catalog Python SDK as an independent reader, in its own virtualenv.

``unitycatalog-client`` pins aiohttp and pydantic versions of its own, so it is installed
into a separate, cached virtualenv (created on first use with ``python -m venv`` and
``pip install``) and driven through a subprocess: ``sdk_read`` lists every catalog, every
schema of each, every table of each schema (following ``next_page_token``) and gets each
table, all through the SDK's async API, and returns what it saw as plain JSON.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

__all__ = ["SDK_VERSION", "SdkReadError", "SdkUnavailableError", "sdk_python", "sdk_read"]

SDK_VERSION = "0.7.0"
_PY_TAG = f"py{sys.version_info.major}{sys.version_info.minor}"
VENV_DIR = Path(
    os.environ.get(
        "LNA_UNITY_SDK_VENV",
        Path("/tmp") / f"lna-unity-sdk-venv-{SDK_VERSION}-{_PY_TAG}",
    )
)
_MARKER = ".lna-complete"
_CREATE_TIMEOUT = 600.0
_READ_TIMEOUT = 120.0


class SdkUnavailableError(RuntimeError):
    """The SDK's virtualenv could not be created (no network to PyPI, pip failure, ...)."""


class SdkReadError(RuntimeError):
    """The SDK got an error answer (``status``, ``body``) or the reader script failed."""

    def __init__(self, message: str, status: int | None = None, body: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.body = body


def _clean_env() -> dict[str, str]:
    """This process's environment without what would leak its packages or proxies in."""
    return {
        key: value
        for key, value in os.environ.items()
        if key not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")
        and not key.upper().endswith("_PROXY")
    }


def _python_in(venv: Path) -> Path:
    return venv / "bin" / "python"


def _complete(venv: Path) -> bool:
    marker = venv / _MARKER
    return marker.is_file() and marker.read_text().strip() == SDK_VERSION


def sdk_python() -> str:
    """A python with unitycatalog-client==SDK_VERSION, in a virtualenv cached under /tmp.

    Created once (about 10 s with a warm pip cache); a file lock serialises concurrent
    creators (pytest-xdist workers, parallel runs) and a marker written last tells a
    complete virtualenv from one a killed run left behind, which is rebuilt.
    """
    venv = VENV_DIR
    if _complete(venv):
        return str(_python_in(venv))
    venv.parent.mkdir(parents=True, exist_ok=True)
    lock_path = venv.with_name(venv.name + ".lock")
    with lock_path.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not _complete(venv):
                _create(venv)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return str(_python_in(venv))


def _create(venv: Path) -> None:
    building = venv.with_name(f"{venv.name}.building-{os.getpid()}")
    shutil.rmtree(building, ignore_errors=True)
    steps = [
        [sys.executable, "-m", "venv", str(building)],
        [
            str(_python_in(building)),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-input",
            f"unitycatalog-client=={SDK_VERSION}",
        ],
        [str(_python_in(building)), "-I", "-c", "import unitycatalog.client"],
    ]
    try:
        for step in steps:
            try:
                done = subprocess.run(
                    step,
                    capture_output=True,
                    text=True,
                    timeout=_CREATE_TIMEOUT,
                    check=False,
                    env=_clean_env(),
                )
            except subprocess.TimeoutExpired as error:
                raise SdkUnavailableError(f"{step[:4]} timed out after {error.timeout} s") from None
            if done.returncode != 0:
                raise SdkUnavailableError(
                    f"{' '.join(step[:5])} failed ({done.returncode}):\n"
                    f"{done.stdout[-2000:]}{done.stderr[-4000:]}"
                )
        (building / _MARKER).write_text(SDK_VERSION)
        # publish: bin/python resolves its site-packages relative to its own location,
        # so a renamed virtualenv keeps working for `python -c/-m`
        shutil.rmtree(venv, ignore_errors=True)
        building.rename(venv)
    finally:
        shutil.rmtree(building, ignore_errors=True)


# The reader, run by the SDK's python. argv: uri, token ("" for none).
_READER = r"""
import asyncio
import json
import sys

from unitycatalog.client import ApiClient, CatalogsApi, Configuration, SchemasApi, TablesApi
from unitycatalog.client.exceptions import ApiException

MAX_PAGES = 10_000


def value(enum_or_str):
    return getattr(enum_or_str, "value", enum_or_str)


async def pages(call, key, **kwargs):
    items, token, seen = [], None, 0
    while True:
        page = await call(page_token=token, **kwargs)
        items += getattr(page, key) or []
        token = page.next_page_token
        seen += 1
        if not token:
            return items, seen
        if seen >= MAX_PAGES:
            raise RuntimeError(f"more than {MAX_PAGES} pages of {key}")


async def main(uri, token):
    configuration = Configuration(host=f"{uri}/api/2.1/unity-catalog")
    headers = {}
    if token:
        headers = {"header_name": "Authorization", "header_value": f"Bearer {token}"}
    out = {"catalogs": [], "schemas": {}, "tables": {}, "pages": {}}
    async with ApiClient(configuration, **headers) as client:
        catalogs_api, schemas_api = CatalogsApi(client), SchemasApi(client)
        tables_api = TablesApi(client)
        catalogs, out["pages"]["catalogs"] = await pages(catalogs_api.list_catalogs, "catalogs")
        for catalog in catalogs:
            out["catalogs"].append(
                {"name": catalog.name, "comment": catalog.comment, "properties": catalog.properties}
            )
            schemas, out["pages"][catalog.name] = await pages(
                schemas_api.list_schemas, "schemas", catalog_name=catalog.name
            )
            for schema in schemas:
                out["schemas"][schema.full_name] = {
                    "name": schema.name,
                    "catalog_name": schema.catalog_name,
                    "comment": schema.comment,
                    "properties": schema.properties,
                }
                listed, out["pages"][schema.full_name] = await pages(
                    tables_api.list_tables,
                    "tables",
                    catalog_name=catalog.name,
                    schema_name=schema.name,
                )
                for item in listed:
                    full_name = f"{item.catalog_name}.{item.schema_name}.{item.name}"
                    table = await tables_api.get_table(full_name)
                    out["tables"][full_name] = {
                        "name": table.name,
                        "catalog_name": table.catalog_name,
                        "schema_name": table.schema_name,
                        "table_type": value(table.table_type),
                        "data_source_format": value(table.data_source_format),
                        "storage_location": table.storage_location,
                        "comment": table.comment,
                        "properties": table.properties,
                        "table_id": table.table_id,
                        "created_at": table.created_at,
                        "columns": [
                            {
                                "name": column.name,
                                "type_name": value(column.type_name),
                                "type_text": column.type_text,
                                "type_json": column.type_json,
                                "position": column.position,
                                "nullable": column.nullable,
                            }
                            for column in table.columns or []
                        ],
                    }
    return out


try:
    result = asyncio.run(main(sys.argv[1], sys.argv[2]))
except ApiException as error:
    print(json.dumps({"sdk_error": {"status": error.status, "body": error.body}}))
    sys.exit(3)
print(json.dumps(result))
"""


def sdk_read(uri: str, token: str | None = None) -> dict[str, Any]:
    """Everything the official SDK reads from the Unity server at `uri` (no base path).

    Returns ``{"catalogs": [{"name", "comment", "properties"}], "schemas": {full_name:
    {"name", "catalog_name", "comment", "properties"}}, "tables": {full_name: {"name",
    "catalog_name", "schema_name", "table_type", "data_source_format", "storage_location",
    "comment", "properties", "table_id", "created_at", "columns": [{"name", "type_name",
    "type_text", "type_json", "position", "nullable"}]}}, "pages": {"catalogs" | catalog |
    schema full name: number of pages fetched}}``; enums are their string values. Raises
    SdkReadError (with ``status`` and ``body`` when the SDK got an error answer).
    """
    python = sdk_python()
    try:
        done = subprocess.run(
            [python, "-I", "-c", _READER, uri, token or ""],
            capture_output=True,
            text=True,
            timeout=_READ_TIMEOUT,
            check=False,
            env=_clean_env(),
        )
    except subprocess.TimeoutExpired:
        raise SdkReadError(f"the SDK reader did not finish within {_READ_TIMEOUT} s") from None
    lines = done.stdout.strip().splitlines()
    parsed: Any = None
    if lines:
        with contextlib.suppress(ValueError):
            parsed = json.loads(lines[-1])
    if done.returncode == 3 and isinstance(parsed, dict) and "sdk_error" in parsed:
        error = parsed["sdk_error"]
        raise SdkReadError(
            f"the SDK got HTTP {error['status']}: {error['body']}",
            status=error["status"],
            body=error["body"],
        )
    if done.returncode != 0 or not isinstance(parsed, dict):
        raise SdkReadError(
            f"the SDK reader failed ({done.returncode}):\n{done.stdout[-2000:]}\n"
            f"{done.stderr[-4000:]}"
        )
    return parsed
