"""The unity suite against a real Unity Catalog OSS server, when one is given.

The Unity Catalog server is not published to the package registries this suite may use, so
by default the unity tests meet the look-alike (tests/unity_server.py). Whoever runs a real
server (the release tarball, a container, or a build of its source) on this machine can point
the suite at it::

    LANCE_NS_UNITY_URI=http://127.0.0.1:8081 pytest tests/test_unity.py \\
        tests/test_unity_errors.py tests/test_kit.py -k unity

``LANCE_NS_UNITY_URI`` is the server's own address (Unity's Armeria port, the one that
answers ``/api/2.1/unity-catalog``), on loopback only. The server must start with no catalog
at all: each test deletes every catalog when it ends, so a server holding anything else is
refused rather than wiped. What only the look-alike can do (inject faults, require a token,
refuse catalog creation, speak as an older release) is skipped there.

:func:`unity_under_test` is what the unity tests and the conformance kit use: the real server
when ``LANCE_NS_UNITY_URI`` is set, else the look-alike of the release asked for.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import urllib.parse
from collections.abc import Iterator, Mapping
from typing import Any

import httpx
import pytest
from unity_server import BASE_PATH, UnityServer, unity_catalog

__all__ = ["REAL_URI_ENV", "RealUnity", "unity_under_test"]

REAL_URI_ENV = "LANCE_NS_UNITY_URI"
#: the release a real server is taken to be (the newest, whose error shapes it must have)
REAL_RELEASE = "0.6"


class _Remote(Mapping[str, Any]):
    """Catalogs, schemas or tables of the real server by full name, read on each access."""

    def __init__(self, http: httpx.Client, kind: str) -> None:
        self._http = http
        self._kind = kind

    def __getitem__(self, full_name: str) -> Any:
        response = self._http.get(f"/{self._kind}/{urllib.parse.quote(full_name, safe='')}")
        if response.status_code == 404:
            raise KeyError(full_name)
        response.raise_for_status()
        return response.json()

    def __iter__(self) -> Iterator[str]:
        if self._kind != "catalogs":
            raise NotImplementedError("only catalogs are listed")
        token: str | None = None
        while True:
            body = self._http.get("/catalogs", params={"page_token": token} if token else {}).json()
            yield from (str(c["name"]) for c in body.get("catalogs") or [])
            token = body.get("next_page_token")
            if not token:
                return

    def __len__(self) -> int:
        return sum(1 for _ in self)


class RealUnity:
    """The look-alike's test surface (``uri``, ``add_*``, ``catalogs``/``schemas``/``tables``)
    over a real server."""

    release = REAL_RELEASE

    def __init__(self, uri: str) -> None:
        self.uri = uri.rstrip("/")
        self.http = httpx.Client(base_url=self.uri + BASE_PATH, timeout=30)
        self.catalogs = _Remote(self.http, "catalogs")
        self.schemas = _Remote(self.http, "schemas")
        self.tables = _Remote(self.http, "tables")

    @property
    def allow_catalog_create(self) -> bool:
        return True

    @allow_catalog_create.setter
    def allow_catalog_create(self, allowed: bool) -> None:
        if not allowed:
            pytest.skip("a real Unity server cannot be told to refuse catalog creation")

    def fail_next(self, *args: Any, **kwargs: Any) -> None:
        pytest.skip("a real Unity server injects no faults")

    def _post(self, path: str, body: dict[str, Any]) -> None:
        response = self.http.post(path, json=body)
        assert response.status_code == 200, f"POST {path}: {response.text}"

    def add_catalog(self, name: str, properties: dict[str, str] | None = None) -> None:
        self._post("/catalogs", {"name": name, "properties": properties or {}})

    def add_schema(self, catalog: str, name: str, properties: dict[str, str] | None = None) -> None:
        self._post(
            "/schemas", {"name": name, "catalog_name": catalog, "properties": properties or {}}
        )

    def add_table(
        self,
        catalog: str,
        schema: str,
        name: str,
        *,
        table_type: str = "EXTERNAL",
        data_source_format: str | None = None,
        storage_location: str | None = None,
        columns: list[dict[str, Any]] | None = None,
        properties: dict[str, str] | None = None,
    ) -> None:
        body = {
            "name": name,
            "catalog_name": catalog,
            "schema_name": schema,
            "table_type": table_type,
            "columns": columns or [],
            "properties": properties or {},
        }
        if data_source_format is not None:
            body["data_source_format"] = data_source_format
        if storage_location is not None:
            body["storage_location"] = storage_location
        self._post("/tables", body)

    def wipe(self) -> None:
        """Delete every catalog, with all it holds (the server started empty)."""
        for name in list(self.catalogs):
            quoted = urllib.parse.quote(name, safe="")
            self.http.delete(f"/catalogs/{quoted}", params={"force": "true"}).raise_for_status()


def _loopback(uri: str) -> bool:
    host = urllib.parse.urlsplit(uri).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


_checked_empty: set[str] = set()


@contextlib.contextmanager
def unity_under_test(
    *, release: str = REAL_RELEASE, require_token: str | None = None
) -> Iterator[UnityServer | RealUnity]:
    """The real server of ``LANCE_NS_UNITY_URI`` (emptied at the end), else the look-alike."""
    uri = os.environ.get(REAL_URI_ENV, "").strip()
    if not uri:
        with unity_catalog(release=release, require_token=require_token) as server:
            yield server
        return
    if not _loopback(uri):
        pytest.fail(f"{REAL_URI_ENV} must be a loopback address (the tests delete catalogs)")
    if release != REAL_RELEASE:
        pytest.skip(f"the real server speaks as itself, not as Unity {release}")
    if require_token is not None:
        pytest.skip("the real server runs without authentication here")
    server = RealUnity(uri)
    if uri not in _checked_empty:
        found = list(server.catalogs)
        if found:
            server.http.close()
            pytest.fail(f"the Unity server at {uri} must start empty, it holds {found}")
        _checked_empty.add(uri)
    try:
        yield server
    finally:
        server.wipe()
        server.http.close()
