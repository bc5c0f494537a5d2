"""The REST adapter server over a real directory catalog, through real HTTP.

Every test talks to uvicorn serving ``create_app(connect("dir", ...))`` on a
loopback port. Every response the strict client receives is validated against
spec/rest.yaml (status declared for the operation, content type, JSON schema);
the few answers the spec cannot declare (unknown routes, 405, 413) go through a
client that instead proves they are *not* declared and are still an
ErrorResponse. pylance's own Rust ``RestNamespace`` is the independent peer: if
it reads our answers (and our error codes) correctly, so will other clients.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import lance
import lance_namespace as ln
import pyarrow as pa
import pytest
import yaml
from jsonschema import Draft202012Validator
from referencing import Registry
from referencing.jsonschema import DRAFT202012

pytest.importorskip("starlette", reason="the server extra is not installed")
uvicorn = pytest.importorskip("uvicorn", reason="the server extra is not installed")

import lance_namespace_async as lna  # noqa: E402
from lance_namespace_async import errors  # noqa: E402
from lance_namespace_async._cli import main as cli_main  # noqa: E402
from lance_namespace_async._core.base import AsyncLanceNamespace  # noqa: E402
from lance_namespace_async.directory import DirectoryNamespace  # noqa: E402
from lance_namespace_async.server import ROUTES, ServerLimits, create_app  # noqa: E402

SPEC_PATH = Path(__file__).resolve().parent.parent / "spec" / "rest.yaml"
TOKEN = "s3cr3t-T0ken_value"

# -- the spec validator -----------------------------------------------------------


class SpecValidator:
    """Checks an HTTP response against what spec/rest.yaml declares for it.

    The operation is found by matching the raw request path against the path
    templates; the response object by the exact status, then its ``5XX`` range,
    then ``default``. ``$ref``s of response objects are followed here, schema
    ``$ref``s by a ``referencing`` registry holding the whole document, so the
    JSON Schema 2020-12 validator (the dialect of OpenAPI 3.1) sees the spec
    exactly as written.
    """

    URI = "urn:lance-namespace-rest"

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.registry: Registry[Any] = Registry().with_resource(
            self.URI, DRAFT202012.create_resource(spec)
        )
        # {id} expands to one path segment, possibly empty (RFC 6570 of id="")
        self.templates = [
            (re.compile("^" + re.sub(r"\\\{\w+\\\}", "[^/]*", re.escape(path)) + "$"), path)
            for path in spec["paths"]
        ]
        self.seen: set[tuple[str, int]] = set()

    def _pointer(self, pointer: str) -> Any:
        node: Any = self.spec
        for part in pointer.removeprefix("#/").split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
        return node

    def operation(self, method: str, raw_path: str) -> dict[str, Any] | None:
        for pattern, template in self.templates:
            if pattern.match(raw_path):
                return self.spec["paths"][template].get(method.lower())
        return None

    def declared(self, response: httpx.Response) -> tuple[dict[str, Any], str | None] | None:
        """(operation, pointer of the response object) or None when undeclared."""
        request = response.request
        operation = self.operation(request.method, request.url.raw_path.split(b"?")[0].decode())
        if operation is None:
            return None
        status = response.status_code
        for key in (str(status), f"{status // 100}XX", "default"):
            if key in operation["responses"]:
                answer = operation["responses"][key]
                return operation, answer.get("$ref")
        return None

    def validate_schema(self, body: Any, pointer: str) -> None:
        validator = Draft202012Validator({"$ref": self.URI + pointer}, registry=self.registry)
        problems = sorted(validator.iter_errors(body), key=lambda e: list(e.absolute_path))
        if problems:
            details = "; ".join(f"{list(p.absolute_path)}: {p.message}" for p in problems)
            pytest.fail(f"response body {body!r} violates {pointer}: {details}")

    def check(self, response: httpx.Response) -> None:
        """Fail unless the response is declared by the spec and matches it."""
        request = response.request
        found = self.declared(response)
        if found is None:
            pytest.fail(
                f"{request.method} {request.url.raw_path.decode()} -> {response.status_code} "
                "is not declared by spec/rest.yaml"
            )
        operation, ref = found
        self.seen.add((operation["operationId"], response.status_code))
        if ref is None:  # declared inline (UpdateTableSchemaMetadata's map)
            path = next(t for p, t in self.templates if p.match(request.url.raw_path.decode()))
            escaped_path = path.replace("~", "~0").replace("/", "~1")
            ref = (
                f"#/paths/{escaped_path}/{request.method.lower()}/responses/{response.status_code}"
            )
        answer = self._pointer(ref)
        content = answer.get("content")
        if not content:
            assert response.content == b"", f"{operation['operationId']} declares no body"
            return
        media_type = response.headers.get("content-type", "").split(";")[0].strip()
        assert media_type in content, f"content type {media_type!r} not declared"
        if media_type.startswith("application/vnd.apache.arrow."):
            schema = content[media_type]["schema"]
            assert (schema["type"], schema["format"]) == ("string", "binary")
            pa.ipc.open_file(pa.BufferReader(response.content)).read_all()  # a whole IPC file
            return
        escaped = media_type.replace("~", "~0").replace("/", "~1")
        self.validate_schema(response.json(), f"{ref}/content/{escaped}/schema")

    def check_outside_spec(self, response: httpx.Response) -> None:
        """For answers no operation can declare: prove that, and that they are ErrorResponses."""
        assert self.declared(response) is None, "declared by the spec: use the strict client"
        assert response.headers["content-type"].startswith("application/json")
        self.validate_schema(response.json(), "#/components/schemas/ErrorResponse")


@pytest.fixture(scope="module")
def spec() -> SpecValidator:
    return SpecValidator(yaml.safe_load(SPEC_PATH.read_text()))


# -- a real server ------------------------------------------------------------------


@dataclass
class Served:
    url: str
    port: int
    server: Any
    thread: threading.Thread
    namespace: AsyncLanceNamespace
    clients: list[httpx.Client] = field(default_factory=list)


def _start(app: Any, namespace: AsyncLanceNamespace) -> Served:
    """uvicorn on an already-bound loopback socket (no free-port race), in a thread."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    # uvicorn installs signal handlers only on the main thread; this is not it
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert thread.is_alive(), "uvicorn stopped while starting"
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.01)
    return Served(f"http://127.0.0.1:{port}", port, server, thread, namespace)


@pytest.fixture
def launch(root: Path) -> Iterator[Callable[..., Served]]:
    """Start servers over the test's catalog (or a given backend); stop them after."""
    running: list[Served] = []

    def start(namespace: AsyncLanceNamespace | None = None, **options: Any) -> Served:
        backend = namespace or lna.connect("dir", {"root": str(root)})
        served = _start(create_app(backend, **options), backend)
        running.append(served)
        return served

    yield start
    for served in running:
        for client in served.clients:
            client.close()
        served.server.should_exit = True
        served.thread.join(10)
        assert not served.thread.is_alive()
        asyncio.run(served.namespace.aclose())


def _client(served: Served, hook: Callable[[httpx.Response], None], **kwargs: Any) -> httpx.Client:
    def on_response(response: httpx.Response) -> None:
        response.read()
        hook(response)

    client = httpx.Client(
        base_url=served.url, timeout=30, event_hooks={"response": [on_response]}, **kwargs
    )
    served.clients.append(client)
    return client


@pytest.fixture
def served(launch: Callable[..., Served]) -> Served:
    return launch()


@pytest.fixture
def api(served: Served, spec: SpecValidator) -> httpx.Client:
    """Client whose every response must be declared by, and valid against, the spec."""
    return _client(served, spec.check)


@pytest.fixture
def raw(served: Served, spec: SpecValidator) -> httpx.Client:
    """Client for the answers outside the spec (unknown route, 405, 413)."""
    return _client(served, spec.check_outside_spec)


@pytest.fixture
def peer(served: Served) -> Any:
    from lance.namespace import RestNamespace

    return RestNamespace(uri=served.url)


def expect_error(response: httpx.Response, status: int, code: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["code"] == code, body
    assert body["error"]
    assert body["instance"] == response.request.url.raw_path.split(b"?")[0].decode()
    return body


def ok(response: httpx.Response) -> Any:
    assert response.status_code == 200, response.text
    return response.json() if response.content else None


# -- the route table ------------------------------------------------------------------


def test_routes_are_exactly_the_spec_operations(spec: SpecValidator) -> None:
    served_ops = {(r.http_method, r.path, r.operation_id) for r in ROUTES}
    spec_ops = {
        (method.upper(), path, op["operationId"])
        for path, item in spec.spec["paths"].items()
        for method, op in item.items()
        if method in ("get", "post", "put", "delete")
    }
    assert served_ops == spec_ops
    assert len(ROUTES) == 54
    for route in ROUTES:
        item = spec.spec["paths"][route.path]
        operation = item[route.http_method.lower()]
        params = [
            spec._pointer(p["$ref"]) if "$ref" in p else p
            for p in [*item.get("parameters", []), *operation.get("parameters", [])]
        ]
        query = {p["name"] for p in params if p["in"] == "query" and p["name"] != "delimiter"}
        assert set(route.query) == query, route.operation_id
        assert route.body == ("requestBody" in operation), route.operation_id
    # the dir backend serves every route: the batches pylance 14.0.2 lacks are its own, and
    # the three it answers "not implemented" are the pipeline's (PySpark is installed here)
    missing = {r.operation_id for r in ROUTES} - {
        r.operation_id for r in ROUTES if r.method in DirectoryNamespace.list_operations()
    }
    assert not missing, missing


# -- every operation over HTTP ----------------------------------------------------------


def test_every_operation_over_http(api: httpx.Client, spec: SpecValidator, root: Path) -> None:
    # namespaces: create (+ properties), list the root as "$", describe, exists
    created = ok(api.post("/v1/namespace/sales/create", json={"properties": {"owner": "ann"}}))
    assert created["properties"] == {"owner": "ann"}
    ok(api.post("/v1/namespace/sales$eu/create", json={}))
    assert ok(api.get("/v1/namespace/$/list"))["namespaces"] == ["sales"]
    assert ok(api.get("/v1/namespace/sales/list"))["namespaces"] == ["eu"]
    described = ok(api.post("/v1/namespace/sales/describe", json={}))
    assert described["properties"] == {"owner": "ann"}
    exists = api.post("/v1/namespace/sales$eu/exists", json={})
    assert exists.status_code == 200
    assert exists.content == b""

    # tables: declare, list (with and without declared), describe, exists
    declared = ok(api.post("/v1/table/sales$orders/declare", json={}))
    location = declared["location"]
    assert location.startswith("file://")
    assert ok(api.get("/v1/namespace/sales/table/list"))["tables"] == ["orders"]
    listed = ok(api.get("/v1/namespace/sales/table/list", params={"include_declared": "false"}))
    assert listed["tables"] == []
    only_declared = ok(
        api.post("/v1/table/sales$orders/describe", params={"check_declared": "true"}, json={})
    )
    assert only_declared["location"] == location
    assert only_declared["is_only_declared"] is True
    assert api.post("/v1/table/sales$orders/exists", json={}).status_code == 200

    # data written by pylance at the declared location; detailed metadata
    lance.write_dataset(pa.table({"x": [1, 2, 3]}), location)
    detailed = ok(
        api.post(
            "/v1/table/sales$orders/describe",
            params={"load_detailed_metadata": "true", "with_table_uri": "TRUE"},
            json={},
        )
    )
    assert detailed["version"] == 1
    assert detailed["is_only_declared"] is False
    assert [f["name"] for f in detailed["schema"]["fields"]] == ["x"]
    assert detailed["stats"] == {"num_deleted_rows": 0, "num_fragments": 1}
    assert detailed["table_uri"].startswith("file://")
    plain = ok(api.post("/v1/table/sales$orders/describe", json={}))
    assert "schema" not in plain
    assert "table_uri" not in plain

    # versions: a second commit, list (both orders), restore the first
    lance.write_dataset(pa.table({"x": [4]}), location, mode="append")
    versions = ok(api.post("/v1/table/sales$orders/version/list"))["versions"]
    assert [v["version"] for v in versions] == [1, 2]
    newest = ok(api.post("/v1/table/sales$orders/version/list", params={"descending": "true"}))
    assert [v["version"] for v in newest["versions"]] == [2, 1]
    assert ok(api.post("/v1/table/sales$orders/restore", json={"version": 1})) == {}
    assert lance.dataset(location).count_rows() == 3
    assert len(ok(api.post("/v1/table/sales$orders/version/list"))["versions"]) == 3

    # list every table, rename (also across namespaces), deregister, register
    assert ok(api.get("/v1/table"))["tables"] == ["sales$orders"]
    assert ok(api.post("/v1/table/sales$orders/rename", json={"new_table_name": "o2"})) == {}
    moved = {"new_table_name": "o3", "new_namespace_id": ["sales", "eu"]}
    ok(api.post("/v1/table/sales$o2/rename", json=moved))
    assert ok(api.get("/v1/table"))["tables"] == ["sales$eu$o3"]
    deregistered = ok(api.post("/v1/table/sales$eu$o3/deregister", json={}))
    assert deregistered["id"] == ["sales", "eu", "o3"]
    assert deregistered["location"] == location
    assert ok(api.get("/v1/table"))["tables"] == []
    assert Path(location.removeprefix("file://")).is_dir()  # data kept
    registered = ok(api.post("/v1/table/sales$back/register", json={"location": location}))
    assert registered["location"] == location
    assert lance.dataset(location).count_rows() == 3

    # drop the table (with its data), then the namespaces
    dropped = ok(api.post("/v1/table/sales$back/drop"))
    assert dropped["id"] == ["sales", "back"]
    assert not Path(location.removeprefix("file://")).exists()
    ok(api.post("/v1/namespace/sales$eu/drop", json={}))
    ok(api.post("/v1/namespace/sales/drop", json={}))
    assert ok(api.get("/v1/namespace/$/list"))["namespaces"] == []

    # the catalog operations; the data operations have their own walk (test_table_data.py)
    operations = {
        "CreateNamespace", "ListNamespaces", "DescribeNamespace", "DropNamespace",
        "NamespaceExists", "ListTables", "ListAllTables", "RegisterTable", "DescribeTable",
        "TableExists", "DropTable", "DeregisterTable", "RestoreTable", "RenameTable",
        "ListTableVersions", "DeclareTable",
    }  # fmt: skip
    assert {op for op, status in spec.seen if status == 200} == operations


def test_namespace_modes(api: httpx.Client) -> None:
    ok(api.post("/v1/namespace/a/create", json={"properties": {"v": "1"}}))
    expect_error(api.post("/v1/namespace/a/create", json={}), 409, 2)
    expect_error(api.post("/v1/namespace/a/create", json={"mode": "Create"}), 409, 2)
    kept = ok(api.post("/v1/namespace/a/create", json={"mode": "exist_ok"}))
    assert kept["properties"] == {"v": "1"}
    assert ok(api.post("/v1/namespace/a/create", json={"mode": "ExistOk"}))["properties"] == {
        "v": "1"
    }
    ok(api.post("/v1/namespace/a$child/create", json={}))
    replaced = ok(
        api.post("/v1/namespace/a/create", json={"mode": "OVERWRITE", "properties": {"v": "2"}})
    )
    assert replaced["properties"] == {"v": "2"}
    assert ok(api.get("/v1/namespace/a/list"))["namespaces"] == []  # overwritten: empty

    # drop: Fail (default) / Skip for a missing one; Restrict / Cascade for a full one
    expect_error(api.post("/v1/namespace/missing/drop", json={}), 404, 1)
    expect_error(api.post("/v1/namespace/missing/drop", json={"mode": "Fail"}), 404, 1)
    assert ok(api.post("/v1/namespace/missing/drop", json={"mode": "skip"})) is not None
    ok(api.post("/v1/namespace/a$child/create", json={}))
    ok(api.post("/v1/table/a$child$t/declare", json={}))
    expect_error(api.post("/v1/namespace/a/drop", json={}), 409, 3)
    expect_error(api.post("/v1/namespace/a/drop", json={"behavior": "Restrict"}), 409, 3)
    ok(api.post("/v1/namespace/a/drop", json={"behavior": "CASCADE"}))
    expect_error(api.post("/v1/namespace/a/exists", json={}), 404, 1)
    assert ok(api.get("/v1/table"))["tables"] == []

    # bad modes are input errors that change nothing
    expect_error(api.post("/v1/namespace/b/create", json={"mode": "Sometimes"}), 400, 13)
    expect_error(api.post("/v1/namespace/b/exists", json={}), 404, 1)
    ok(api.post("/v1/namespace/b/create", json={}))
    expect_error(api.post("/v1/namespace/b/drop", json={"behavior": "Later"}), 400, 13)
    expect_error(api.post("/v1/namespace/b/drop", json={"mode": 7}), 400, 13)
    ok(api.post("/v1/namespace/b/exists", json={}))


def test_root_namespace_is_the_bare_delimiter(api: httpx.Client) -> None:
    assert ok(api.get("/v1/namespace/$/list"))["namespaces"] == []
    assert api.post("/v1/namespace/$/exists", json={}).status_code == 200
    assert ok(api.post("/v1/namespace/$/describe", json={}))["properties"] == {}
    assert ok(api.get("/v1/namespace/$/table/list"))["tables"] == []
    expect_error(api.post("/v1/namespace/$/create", json={}), 400, 13)
    expect_error(api.post("/v1/namespace/$/drop", json={}), 400, 13)
    expect_error(api.post("/v1/table/$/describe", json={}), 400, 13)
    # a root table is <root>/<name>.lance
    ok(api.post("/v1/table/top/declare", json={}))
    assert ok(api.get("/v1/namespace/$/table/list"))["tables"] == ["top"]


def test_not_found_and_conflict_codes(api: httpx.Client) -> None:
    expect_error(api.post("/v1/namespace/nope/describe", json={}), 404, 1)
    expect_error(api.post("/v1/namespace/nope/exists", json={}), 404, 1)
    expect_error(api.get("/v1/namespace/nope/list"), 404, 1)
    expect_error(api.get("/v1/namespace/nope/table/list"), 404, 1)
    expect_error(api.post("/v1/namespace/nope$child/create", json={}), 404, 1)
    expect_error(api.post("/v1/table/nope$t/declare", json={}), 404, 1)
    expect_error(api.post("/v1/table/nope$t/exists", json={}), 404, 1)
    ok(api.post("/v1/namespace/a/create", json={}))
    for action, body in [
        ("describe", {}),
        ("exists", {}),
        ("deregister", {}),
        ("restore", {"version": 1}),
        ("rename", {"new_table_name": "u"}),
    ]:
        expect_error(api.post(f"/v1/table/a$t/{action}", json=body), 404, 4)
    expect_error(api.post("/v1/table/a$t/drop"), 404, 4)
    expect_error(api.post("/v1/table/a$t/version/list"), 404, 4)
    ok(api.post("/v1/table/a$t/declare", json={}))
    expect_error(api.post("/v1/table/a$t/declare", json={}), 409, 5)
    ok(api.post("/v1/table/a$u/declare", json={}))
    expect_error(api.post("/v1/table/a$t/rename", json={"new_table_name": "u"}), 409, 5)
    location = ok(api.post("/v1/table/a$t/describe", json={}))["location"]
    expect_error(api.post("/v1/table/a$u/register", json={"location": location}), 409, 5)


def test_pagination(api: httpx.Client) -> None:
    names = [f"n{i}" for i in range(5)]
    for name in names:
        ok(api.post(f"/v1/namespace/{name}/create", json={}))
        ok(api.post(f"/v1/table/{name}$t/declare", json={}))
    for name in ("t1", "t2", "t3"):
        ok(api.post(f"/v1/table/n0${name}/declare", json={}))

    def walk(path: str, key: str, method: str = "GET") -> list[list[str]]:
        pages: list[list[str]] = []
        token: str | None = None
        while True:
            params: dict[str, Any] = {"limit": 2}
            if token:
                params["page_token"] = token
            page = ok(api.request(method, path, params=params))
            pages.append(page[key])
            token = page.get("page_token")
            if not token:
                return pages

    namespace_pages = walk("/v1/namespace/$/list", "namespaces")
    assert namespace_pages == [["n0", "n1"], ["n2", "n3"], ["n4"]]
    assert walk("/v1/namespace/n0/table/list", "tables") == [["t", "t1"], ["t2", "t3"]]
    every = [t for page in walk("/v1/table", "tables") for t in page]
    assert sorted(every) == sorted([f"{n}$t" for n in names] + ["n0$t1", "n0$t2", "n0$t3"])
    assert all(len(page) <= 2 for page in walk("/v1/table", "tables"))

    location = ok(api.post("/v1/table/n0$t/describe", json={}))["location"]
    for rows in ([1], [2], [3]):
        lance.write_dataset(pa.table({"x": rows}), location, mode="append")
    version_pages = walk("/v1/table/n0$t/version/list", "versions", method="POST")
    assert [[v["version"] for v in page] for page in version_pages] == [[1, 2], [3]]

    for bad in ("0", "-1", "two", "1.5", "", "1e3"):
        expect_error(api.get("/v1/namespace/$/list", params={"limit": bad}), 400, 13)
    expect_error(api.get("/v1/table", params=[("limit", "1"), ("limit", "2")]), 400, 13)


def test_custom_delimiter(api: httpx.Client) -> None:
    dot = {"delimiter": "."}
    ok(api.post("/v1/namespace/a/create", params=dot, json={}))
    ok(api.post("/v1/namespace/a.b/create", params=dot, json={}))
    assert ok(api.get("/v1/namespace/a/list", params=dot))["namespaces"] == ["b"]
    # a bare "." would be a dot-segment that URL normalisation removes: percent-encode it
    assert ok(api.get("/v1/namespace/%2E/list", params=dot))["namespaces"] == ["a"]
    ok(api.post("/v1/table/a.b.t/declare", params=dot, json={}))
    assert api.post("/v1/table/a$b$t/exists", json={}).status_code == 200  # same table
    assert ok(api.get("/v1/table", params=dot))["tables"] == ["a.b.t"]
    assert ok(api.get("/v1/table"))["tables"] == ["a$b$t"]
    assert ok(api.get("/v1/table", params={"delimiter": "::"}))["tables"] == ["a::b::t"]
    # with "." as the delimiter, "a$b" is one name, which the dir backend refuses
    expect_error(api.post("/v1/namespace/a$b/describe", params=dot, json={}), 400, 13)
    expect_error(api.post("/v1/namespace/a/describe", params={"delimiter": ""}, json={}), 400, 13)


def test_bad_input_is_code_13(api: httpx.Client) -> None:
    ok(api.post("/v1/namespace/a/create", json={}))
    for bad_id in (
        "a%2Fb",
        "%2E%2E",
        "a$%2E%2E",
        "a$.",
        "a%5Cb",
        "x%01y",
        "a%3Ab",
        "a$$b",
        "%FF",
        "$a",
    ):
        expect_error(api.post(f"/v1/namespace/{bad_id}/create", json={}), 400, 13)
    expect_error(api.post("/v1/namespace//create", json={}), 400, 13)  # empty id
    expect_error(api.post("/v1/table/a$x%2Fy/declare", json={}), 400, 13)
    ok(api.post("/v1/table/a$t/declare", json={}))
    expect_error(api.post("/v1/table/a$t/rename", json={"new_table_name": "x/y"}), 400, 13)
    expect_error(api.post("/v1/table/a$t/rename", json={}), 400, 13)
    expect_error(api.post("/v1/table/a$t/restore", json={"version": "1"}), 400, 13)
    expect_error(api.post("/v1/table/a$t/register", json={"location": ""}), 400, 13)

    json_headers = {"content-type": "application/json"}
    for body in (b"{", b"[1, 2]", b'"x"', b"null", b'{"mode": NaN}', b"\xff\xfe{}", b"[" * 5000):
        response = api.post("/v1/namespace/b/create", content=body, headers=json_headers)
        expect_error(response, 400, 13)
    text = api.post("/v1/namespace/b/create", content=b"{}", headers={"content-type": "text/plain"})
    expect_error(text, 400, 13)
    for flag in ("yes", "1", "", "truee"):
        response = api.get("/v1/namespace/$/table/list", params={"include_declared": flag})
        expect_error(response, 400, 13)
    expect_error(api.post("/v1/namespace/b/exists", json={}), 404, 1)  # nothing created

    # lenient where it is harmless: an empty body is {}, booleans in any case
    assert api.post("/v1/namespace/b/create", content=b"").status_code == 200
    tables = api.get("/v1/namespace/a/table/list", params={"include_declared": "FALSE"})
    assert ok(tables)["tables"] == []


def test_path_id_wins_over_body_id(api: httpx.Client) -> None:
    ok(api.post("/v1/namespace/real/create", json={"id": ["decoy"]}))
    assert ok(api.get("/v1/namespace/$/list"))["namespaces"] == ["real"]
    # the path's id wins, but a body id of the wrong type is still a malformed request
    expect_error(api.post("/v1/table/real$t/declare", json={"id": "not even a list"}), 400, 13)
    ok(api.post("/v1/table/real$t/declare", json={"id": ["real", "decoy"]}))
    assert ok(api.get("/v1/table"))["tables"] == ["real$t"]
    expect_error(api.post("/v1/namespace/decoy/describe", json={"id": ["real"]}), 404, 1)


def test_query_parameters_win_over_body_fields(api: httpx.Client) -> None:
    ok(api.post("/v1/namespace/a/create", json={}))
    location = ok(api.post("/v1/table/a$t/declare", json={}))["location"]
    lance.write_dataset(pa.table({"x": [1]}), location)
    from_body = ok(api.post("/v1/table/a$t/describe", json={"load_detailed_metadata": True}))
    assert from_body["version"] == 1
    assert "schema" in from_body
    overridden = api.post(
        "/v1/table/a$t/describe",
        params={"load_detailed_metadata": "false"},
        json={"load_detailed_metadata": True},
    )
    assert "schema" not in ok(overridden)


def test_unknown_routes_and_methods(raw: httpx.Client) -> None:
    for path in ("/", "/v1", "/v1/nope", "/v1/table/", "/v1/namespace/a/create/x", "/v2/table"):
        body = expect_error(raw.get(path), 404, 13)
        assert "unknown route" in body["error"]
    wrong = expect_error(raw.get("/v1/namespace/a/create"), 405, 13)
    assert "not allowed" in wrong["error"]
    assert raw.get("/v1/namespace/a/create").headers["allow"] == "POST"
    assert raw.post("/v1/table").headers["allow"] == "GET"
    expect_error(raw.delete("/v1/table/a$t/drop"), 405, 13)
    expect_error(raw.post("/v1/namespace/a/list", json={}), 405, 13)


# -- errors the server must not leak ------------------------------------------------------


class _Faulty(AsyncLanceNamespace):
    """A real (tiny) backend: DescribeNamespace crashes, ListNamespaces is unsupported."""

    impl_name = "faulty"

    async def _describe_namespace(self, request: Any) -> Any:
        raise RuntimeError("backend exploded, password=hunter2 Bearer abc.def")

    async def _namespace_exists(self, request: Any) -> Any:
        raise errors.ServiceUnavailableError("catalog is restarting")


def test_unexpected_errors_are_generic_500s(
    launch: Callable[..., Served], spec: SpecValidator, caplog: pytest.LogCaptureFixture
) -> None:
    served = launch(_Faulty(None))  # type: ignore[arg-type]
    api = _client(served, spec.check)
    with caplog.at_level(logging.ERROR, logger="lance_namespace_async.server"):
        body = expect_error(api.post("/v1/namespace/a/describe", json={}), 500, 18)
    assert body["error"] == "internal server error"
    assert "hunter2" not in str(body)
    assert "exploded" not in str(body)
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "RuntimeError" in logged
    assert "Traceback" in logged
    assert "hunter2" not in logged
    assert "abc.def" not in logged
    expect_error(api.post("/v1/namespace/a/exists", json={}), 503, 17)
    expect_error(api.get("/v1/namespace/a/list"), 406, 0)  # not overridden: Unsupported


class _PathLeaking(AsyncLanceNamespace):
    """Typed errors whose messages hold server paths, as pylance's text does."""

    impl_name = "path-leaking"

    async def _describe_table(self, request: Any) -> Any:
        raise errors.TableNotFoundError(
            "Dataset at path srv/data/root/0a1b_t was not found: "
            "LanceError(IO): /srv/data/root/0a1b_t/_versions, file:///srv/data/root/0a1b_t"
        )

    async def _namespace_exists(self, request: Any) -> Any:
        raise errors.InternalError("LanceError(IO): /srv/data/root/__manifest: bytes 8f00ff")


def test_backend_errors_do_not_show_server_paths(
    launch: Callable[..., Served], spec: SpecValidator, caplog: pytest.LogCaptureFixture
) -> None:
    api = _client(launch(_PathLeaking(None)), spec.check)  # type: ignore[arg-type]
    with caplog.at_level(logging.ERROR, logger="lance_namespace_async.server"):
        missing = expect_error(api.post("/v1/table/a$t/describe", json={}), 404, 4)
        internal = expect_error(api.post("/v1/namespace/a/exists", json={}), 500, 18)
    assert missing["error"] == (
        "Dataset at path <path> was not found: LanceError(IO): <path>, <path>"
    )
    assert internal["error"] == "internal server error"
    assert "bytes" not in str(internal)
    # the operator still learns what happened
    assert "/srv/data/root/__manifest" in "\n".join(r.getMessage() for r in caplog.records)


def test_a_broken_table_is_a_generic_500(api: httpx.Client, root: Path) -> None:
    """pylance's own failure on a corrupt manifest: no server path, no file bytes."""
    ok(api.post("/v1/namespace/a/create", json={}))
    location = ok(api.post("/v1/table/a$t/declare", json={}))["location"]
    lance.write_dataset(pa.table({"x": [1]}), location)
    for manifest in Path(location.removeprefix("file://"), "_versions").iterdir():
        manifest.write_bytes(b"FILE-BYTES-" * 10)
    for response in (
        api.post("/v1/table/a$t/describe", params={"load_detailed_metadata": "true"}, json={}),
        api.post("/v1/table/a$t/version/list", json={}),
        api.post("/v1/table/a$t/restore", json={"version": 1}),
    ):
        body = expect_error(response, 500, 18)
        assert body["error"] == "internal server error"
        assert str(root) not in response.text
        assert "FILE-BYTES" not in response.text


def test_table_versions_name_manifests_relative_to_the_table(api: httpx.Client, root: Path) -> None:
    ok(api.post("/v1/namespace/a/create", json={}))
    location = ok(api.post("/v1/table/a$t/declare", json={}))["location"]
    lance.write_dataset(pa.table({"x": [1]}), location)
    lance.write_dataset(pa.table({"x": [2]}), location, mode="append")
    versions = ok(api.post("/v1/table/a$t/version/list", json={}))["versions"]
    assert [v["version"] for v in versions] == [1, 2]
    table_dir = Path(location.removeprefix("file://"))
    for version in versions:
        path = version["manifest_path"]
        assert path.startswith("_versions/")
        assert path.endswith(".manifest")
        assert (table_dir / path).is_file()
        assert str(root).strip("/") not in path


# -- bearer token ----------------------------------------------------------------------------


def test_bearer_token(launch: Callable[..., Served], spec: SpecValidator) -> None:
    served = launch(auth_token=TOKEN)
    api = _client(served, spec.check)
    raw = _client(served, spec.check_outside_spec)
    bad_headers: list[dict[str, str]] = [
        {},
        {"Authorization": ""},
        {"Authorization": TOKEN},
        {"Authorization": f"Basic {TOKEN}"},
        {"Authorization": "Bearer"},
        {"Authorization": f"Bearer  {TOKEN}"},
        {"Authorization": f"Bearer\t{TOKEN}"},
        {"Authorization": f"Bearer {TOKEN} extra"},
        {"Authorization": f"Bearer {TOKEN}x"},
        {"Authorization": f"Bearer {TOKEN[:-1]}"},
        {"Authorization": f"Bearer {TOKEN.upper()}"},
        {"Authorization": f"Bearer,{TOKEN}"},
        {"Authorization": f"Token {TOKEN}"},
        {"Authorization": "Bearer wrong"},
    ]
    for headers in bad_headers:
        response = api.post("/v1/namespace/a/create", json={}, headers=headers)
        expect_error(response, 401, 16)
        assert response.headers["www-authenticate"] == "Bearer"
        assert TOKEN not in response.text
    # two Authorization headers, one of them right: still refused
    doubled = httpx.Headers([("Authorization", f"Bearer {TOKEN}"), ("Authorization", "Bearer x")])
    expect_error(api.post("/v1/namespace/a/create", json={}, headers=doubled), 401, 16)
    expect_error(api.get("/v1/table"), 401, 16)
    # authentication comes before routing: no route discovery without the token
    expect_error(raw.get("/v1/no-such-route"), 401, 16)
    expect_error(api.post("/v1/namespace/a/exists", json={}, headers={}), 401, 16)

    for scheme in ("Bearer", "bearer", "BEARER"):
        authorized = {"Authorization": f"{scheme} {TOKEN}"}
        assert api.get("/v1/namespace/$/list", headers=authorized).status_code == 200
    right = {"Authorization": f"Bearer {TOKEN}"}
    ok(api.post("/v1/namespace/a/create", json={}, headers=right))
    assert api.post("/v1/namespace/a/exists", json={}, headers=right).status_code == 200
    expect_error(raw.get("/v1/no-such-route", headers=right), 404, 13)

    from lance.namespace import RestNamespace

    anonymous = RestNamespace(uri=served.url)
    with pytest.raises(ln.UnauthenticatedError):
        anonymous.list_namespaces(ln.ListNamespacesRequest(id=[]))
    wrong = RestNamespace(uri=served.url, **{"header.Authorization": "Bearer nope"})
    with pytest.raises(ln.UnauthenticatedError):
        wrong.namespace_exists(ln.NamespaceExistsRequest(id=["a"]))
    authorized_peer = RestNamespace(uri=served.url, **{"header.Authorization": f"Bearer {TOKEN}"})
    listed = authorized_peer.list_namespaces(ln.ListNamespacesRequest(id=[]))
    assert listed.namespaces == ["a"]


@pytest.mark.parametrize("bad", ["", " ", "has space", "tab\t", "n\u00e9", "x\n"])
def test_unusable_tokens_are_refused_at_startup(root: Path, bad: str) -> None:
    with pytest.raises(errors.InvalidInputError):
        create_app(lna.connect("dir", {"root": str(root)}), auth_token=bad)


@pytest.mark.parametrize(
    "bad",
    [
        {"max_header_bytes": 100},
        {"max_header_fields": 0},
        {"max_connections": True},
        {"header_timeout": 0},
        {"body_timeout": float("inf")},
        {"keep_alive_timeout": float("nan")},
        {"header_timeout": "10"},
    ],
)
def test_unusable_connection_limits_are_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(errors.InvalidInputError):
        ServerLimits(**bad)


def test_cli_refuses_unusable_limits_and_storage_exposure_is_explicit(
    capsys: pytest.CaptureFixture[str], root: Path
) -> None:
    for option in (["--header-timeout", "inf"], ["--max-connections", "0"]):
        with pytest.raises(SystemExit) as exited:
            cli_main(["serve", "--impl", "dir", "--prop", f"root={root}", *option])
        assert exited.value.code == 2
    assert "header_timeout" in capsys.readouterr().err
    with pytest.raises(errors.InvalidInputError):
        create_app(lna.connect("dir", {"root": str(root)}), expose_storage_options="yes")  # type: ignore[arg-type]


# -- body size limit ----------------------------------------------------------------------------


def test_body_size_limit(launch: Callable[..., Served], spec: SpecValidator) -> None:
    served = launch(max_body_bytes=1024)
    api = _client(served, spec.check)

    def body_of(size: int) -> bytes:
        prefix, suffix = b'{"properties": {"k": "', b'"}}'
        return prefix + b"x" * (size - len(prefix) - len(suffix)) + suffix

    json_headers = {"content-type": "application/json"}
    assert len(body_of(1024)) == 1024
    ok(api.post("/v1/namespace/fits/create", content=body_of(1024), headers=json_headers))
    too_big = api.post("/v1/namespace/big/create", content=body_of(1025), headers=json_headers)
    body = expect_error(too_big, 413, 13)
    assert "1024" in body["error"]

    # no Content-Length (chunked): the limit holds while streaming
    def chunks() -> Iterator[bytes]:
        data = body_of(4000)
        for start in range(0, len(data), 500):
            yield data[start : start + 500]

    streamed = api.post("/v1/namespace/big/create", content=chunks(), headers=json_headers)
    assert "content-length" not in streamed.request.headers
    expect_error(streamed, 413, 13)
    small = iter([body_of(600)[:300], body_of(600)[300:]])
    ok(api.post("/v1/namespace/chunked/create", content=small, headers=json_headers))
    expect_error(api.post("/v1/namespace/big/exists", json={}), 404, 1)

    # a huge Content-Length is refused from the headers alone, without waiting for a body
    with socket.create_connection(("127.0.0.1", served.port), timeout=5) as sock:
        sock.sendall(
            b"POST /v1/namespace/big/create HTTP/1.1\r\nHost: x\r\n"
            b"Content-Type: application/json\r\nContent-Length: 1000000000\r\n\r\n{"
        )
        reply = b""
        while b"\r\n\r\n" not in reply:
            chunk = sock.recv(4096)
            if not chunk:
                break
            reply += chunk
    assert reply.startswith(b"HTTP/1.1 413 "), reply[:100]


# -- the independent peer: pylance's Rust RestNamespace ----------------------------------------


def test_pylance_rest_client_every_operation(peer: Any, root: Path) -> None:
    created = peer.create_namespace(ln.CreateNamespaceRequest(id=["a"], properties={"k": "v"}))
    assert created.properties == {"k": "v"}
    peer.create_namespace(ln.CreateNamespaceRequest(id=["a"], mode="ExistOk"))
    peer.create_namespace(ln.CreateNamespaceRequest(id=["a", "b"]))
    assert peer.list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces == ["a"]
    assert peer.list_namespaces(ln.ListNamespacesRequest(id=["a"])).namespaces == ["b"]
    assert peer.describe_namespace(ln.DescribeNamespaceRequest(id=["a"])).properties == {"k": "v"}
    peer.namespace_exists(ln.NamespaceExistsRequest(id=["a", "b"]))

    # write and read a table through the peer
    lance.write_dataset(pa.table({"x": [1, 2, 3]}), namespace_client=peer, table_id=["a", "t"])
    assert lance.dataset(namespace_client=peer, table_id=["a", "t"]).count_rows() == 3
    lance.write_dataset(
        pa.table({"x": [4]}), namespace_client=peer, table_id=["a", "t"], mode="append"
    )
    assert peer.list_tables(ln.ListTablesRequest(id=["a"])).tables == ["t"]
    assert peer.list_all_tables(ln.ListTablesRequest()).tables == ["a$t"]
    peer.table_exists(ln.TableExistsRequest(id=["a", "t"]))
    described = peer.describe_table(
        ln.DescribeTableRequest(id=["a", "t"], load_detailed_metadata=True)
    )
    assert described.version == 2
    assert described.stats.num_fragments == 2
    versions = peer.list_table_versions(ln.ListTableVersionsRequest(id=["a", "t"]))
    assert sorted(v.version for v in versions.versions) == [1, 2]
    peer.restore_table(ln.RestoreTableRequest(id=["a", "t"], version=1))
    assert lance.dataset(namespace_client=peer, table_id=["a", "t"]).count_rows() == 3

    declared = peer.declare_table(ln.DeclareTableRequest(id=["a", "d"]))
    assert declared.location
    peer.rename_table(ln.RenameTableRequest(id=["a", "d"], new_table_name="e"))
    deregistered = peer.deregister_table(ln.DeregisterTableRequest(id=["a", "e"]))
    assert deregistered.location == declared.location
    location = peer.describe_table(ln.DescribeTableRequest(id=["a", "t"])).location
    peer.deregister_table(ln.DeregisterTableRequest(id=["a", "t"]))
    peer.register_table(ln.RegisterTableRequest(id=["a", "b", "t2"], location=location))
    assert lance.dataset(namespace_client=peer, table_id=["a", "b", "t2"]).count_rows() == 3
    peer.drop_table(ln.DropTableRequest(id=["a", "b", "t2"]))
    peer.drop_namespace(ln.DropNamespaceRequest(id=["a"], behavior="Cascade"))
    assert peer.list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces == []


def test_pylance_rest_client_reads_our_error_codes(peer: Any) -> None:
    with pytest.raises(ln.NamespaceNotFoundError):
        peer.describe_namespace(ln.DescribeNamespaceRequest(id=["missing"]))
    with pytest.raises(ln.NamespaceNotFoundError):
        peer.namespace_exists(ln.NamespaceExistsRequest(id=["missing"]))
    peer.create_namespace(ln.CreateNamespaceRequest(id=["a"]))
    with pytest.raises(ln.NamespaceAlreadyExistsError):
        peer.create_namespace(ln.CreateNamespaceRequest(id=["a"]))
    with pytest.raises(ln.TableNotFoundError):
        peer.describe_table(ln.DescribeTableRequest(id=["a", "missing"]))
    with pytest.raises(ln.TableNotFoundError):
        peer.table_exists(ln.TableExistsRequest(id=["a", "missing"]))
    with pytest.raises(ln.TableNotFoundError):
        peer.drop_table(ln.DropTableRequest(id=["a", "missing"]))
    peer.declare_table(ln.DeclareTableRequest(id=["a", "t"]))
    with pytest.raises(ln.TableAlreadyExistsError):
        peer.declare_table(ln.DeclareTableRequest(id=["a", "t"]))
    with pytest.raises(ln.NamespaceNotEmptyError):
        peer.drop_namespace(ln.DropNamespaceRequest(id=["a"]))
    with pytest.raises(ln.InvalidInputError):
        peer.create_namespace(ln.CreateNamespaceRequest(id=["a/b"]))
    with pytest.raises(ln.InvalidInputError):
        peer.create_namespace(ln.CreateNamespaceRequest(id=["c"], mode="Sometimes"))
    with pytest.raises(ln.TableNotFoundError):
        lance.dataset(namespace_client=peer, table_id=["a", "missing"])


# -- the CLI ---------------------------------------------------------------------------------------


def test_cli_usage_errors_exit_2_without_echoing_values(
    capsys: pytest.CaptureFixture[str], root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(SystemExit) as exited:
        cli_main(["serve", "--impl", "dir", "--prop", "sk-live-1234"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "--prop #1 must be KEY=VALUE" in err
    assert "sk-live-1234" not in err

    with pytest.raises(SystemExit) as exited:
        cli_main(["serve", "--impl", "dir", "--prop", "=v"])
    assert exited.value.code == 2
    monkeypatch.delenv("LNS_TEST_TOKEN", raising=False)
    with pytest.raises(SystemExit) as exited:
        cli_main(["serve", "--impl", "dir", "--prop", f"root={root}", "--auth-token-env", "LNS_X"])
    assert exited.value.code == 2
    assert "LNS_X is not set" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        cli_main(["serve", "--impl", "dir", "--port", "70000"])
    assert exited.value.code == 2

    secret = "storage.aws_secret_access_key=topsecretvalue"
    assert cli_main(["serve", "--impl", "dir", "--prop", secret]) == 2  # root is missing
    err = capsys.readouterr().err
    assert "root" in err
    assert "topsecretvalue" not in err
    assert cli_main([]) == 2


def test_cli_serves_with_a_token_from_the_environment(root: Path, spec: SpecValidator) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    script = Path(sys.executable).parent / "lance-ns"
    command = (
        [str(script)] if script.exists() else [sys.executable, "-m", "lance_namespace_async._cli"]
    )
    process = subprocess.Popen(
        [
            *command,
            "serve",
            "--impl",
            "dir",
            "--prop",
            f"root={root}",
            "--port",
            str(port),
            "--auth-token-env",
            "LNS_TEST_TOKEN",
        ],
        env={**os.environ, "LNS_TEST_TOKEN": TOKEN},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline().strip()
        assert first == f"serving dir on http://127.0.0.1:{port} (bearer token required)"
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 20
        while True:
            try:
                response = httpx.get(f"{url}/v1/namespace/$/list", timeout=5)
                break
            except httpx.ConnectError:
                assert process.poll() is None
                assert time.monotonic() < deadline
                time.sleep(0.05)
        response.read()
        spec.check(response)
        expect_error(response, 401, 16)
        headers = {"Authorization": f"Bearer {TOKEN}"}
        # the first write creates the manifest table: seconds on a loaded machine
        created = httpx.post(f"{url}/v1/namespace/cli/create", json={}, headers=headers, timeout=60)
        spec.check(created)
        assert created.status_code == 200
        assert (root / "__manifest").is_dir()
    finally:
        process.terminate()  # SIGTERM: a clean shutdown
        stdout, stderr = process.communicate(timeout=20)
    assert process.returncode == 0, stderr
    assert TOKEN not in first + stdout + stderr


# -- the validator itself ------------------------------------------------------------------------


def test_validator_rejects_what_the_spec_does_not_declare(spec: SpecValidator) -> None:
    """The helper above is only worth something if it can fail."""

    def answer(method: str, path: str, status: int, **kwargs: Any) -> httpx.Response:
        request = httpx.Request(method, f"http://127.0.0.1{path}")
        return httpx.Response(status, request=request, **kwargs)

    spec.check(answer("GET", "/v1/namespace/$/list", 200, json={"namespaces": ["a"]}))
    spec.check(answer("POST", "/v1/table/a$t/exists", 200))
    spec.check(answer("GET", "/v1/table", 503, json={"code": 17, "error": "later"}))
    wrong = [
        answer("GET", "/v1/namespace/$/list", 200, json={"namespaces": "a"}),  # type
        answer("GET", "/v1/namespace/$/list", 200, json={"page_token": None}),  # required
        answer("GET", "/v1/namespace/$/list", 200, json={"namespaces": ["a", "a"]}),  # unique
        answer("POST", "/v1/table/a$t/exists", 200, json={}),  # body where none is declared
        answer("GET", "/v1/table", 404, json={"code": 1}),  # status not declared here
        answer("GET", "/v1/table", 400, json={"error": "no code"}),  # ErrorResponse.code
        answer("GET", "/v1/table", 400, json={"code": -1}),  # minimum
        answer("GET", "/v1/table", 200, content=b"{}", headers={"content-type": "text/plain"}),
        answer("GET", "/v1/nope", 200, json={}),  # no such operation
        answer("PUT", "/v1/table", 200, json={"tables": []}),  # no such method
    ]
    for response in wrong:
        with pytest.raises((pytest.fail.Exception, AssertionError)):
            spec.check(response)


def test_serve_builds_the_backend_from_an_impl_name(root: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    code = (
        "import sys\n"
        "from lance_namespace_async.server import serve\n"
        "serve('dir', {'root': sys.argv[1]}, port=int(sys.argv[2]), log_level='warning')\n"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", code, str(root), str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                response = httpx.post(
                    f"http://127.0.0.1:{port}/v1/namespace/x/create", json={}, timeout=60
                )
                break
            except httpx.ConnectError:
                assert process.poll() is None, process.communicate()
                assert time.monotonic() < deadline
                time.sleep(0.05)
        assert response.status_code == 200
        assert (root / "__manifest").is_dir()
    finally:
        process.terminate()
        process.communicate(timeout=20)


# -- the data operations over HTTP (issue 16) ---------------------------------------------------

ARROW_STREAM = {"Content-Type": "application/vnd.apache.arrow.stream"}


def _ipc_stream(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


def _items(count: int, start: int = 0) -> pa.Table:
    ids = range(start, start + count)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "vec": pa.array([[float(i), 0.0] for i in ids], pa.list_(pa.float32(), 2)),
        }
    )


def test_every_operation_answers_as_the_spec_declares_including_arrow_bodies(
    api: httpx.Client, spec: SpecValidator
) -> None:
    ok(api.post("/v1/namespace/d/create", json={}))
    created = ok(
        api.post("/v1/table/d$t/create", content=_ipc_stream(_items(4)), headers=ARROW_STREAM)
    )
    location = created["location"]
    table = "/v1/table/d$t"
    inserted = ok(
        api.post(
            f"{table}/insert",
            params={"mode": "append"},
            content=_ipc_stream(_items(2, 4)),
            headers=ARROW_STREAM,
        )
    )
    assert inserted["num_inserted_rows"] == 2
    merged = api.post(
        f"{table}/merge_insert",
        params={
            "on": "id",
            "when_matched_update_all": "true",
            "when_not_matched_insert_all": "true",
        },
        content=_ipc_stream(_items(2, 5)),
        headers=ARROW_STREAM,
    )
    ok(merged)
    assert ok(api.post(f"{table}/count_rows", json={})) == 7
    queried = api.post(
        f"{table}/query",
        json={"k": 3, "vector": {"single_vector": [4.0, 0.0]}, "vector_column": "vec"},
    )
    assert queried.status_code == 200
    nearest = pa.ipc.open_file(pa.BufferReader(queried.content)).read_all()
    assert nearest.column("id").to_pylist() == [4, 3, 5]
    ok(api.post(f"{table}/update", json={"predicate": "id = 0", "updates": [["id", "100"]]}))
    ok(api.post(f"{table}/delete", json={"predicate": "id = 1"}))
    plan = ok(api.post(f"{table}/explain_plan", json={"query": {"k": 1, "vector": None}}))
    assert isinstance(plan, str)
    assert isinstance(ok(api.post(f"{table}/analyze_plan", json={"k": 1, "vector": None})), str)
    ok(api.post(f"{table}/add_columns", json={"new_columns": [{"name": "x", "expression": "id"}]}))
    ok(api.post(f"{table}/alter_columns", json={"alterations": [{"path": "x", "rename": "y"}]}))
    ok(api.post(f"{table}/drop_columns", json={"columns": ["y"]}))
    assert ok(api.post(f"{table}/schema_metadata/update", json={"k": "v"}))["k"] == "v"
    stats = ok(api.post(f"{table}/stats", json={}))
    fragments = lance.dataset(location).get_fragments()
    assert stats["fragment_stats"]["num_fragments"] == len(fragments)
    ok(api.post(f"{table}/create_scalar_index", json={"column": "id", "index_type": "BTREE"}))
    ok(
        api.post(
            f"{table}/create_index",
            json={"column": "vec", "index_type": "IVF_FLAT", "name": "v_idx", "num_partitions": 1},
        )
    )
    indices = ok(api.post(f"{table}/index/list", json={}))["indexes"]
    assert {index["index_name"] for index in indices} == {"id_idx", "v_idx"}
    ok(api.post(f"{table}/index/id_idx/stats", json={}))
    ok(api.post(f"{table}/index/id_idx/drop"))
    expect_error(api.post(f"{table}/index/id_idx/stats", json={}), 404, 6)
    ok(api.post(f"{table}/tags/create", json={"tag": "one", "version": 1}))
    expect_error(api.post(f"{table}/tags/create", json={"tag": "one", "version": 1}), 409, 9)
    assert ok(api.post(f"{table}/tags/list"))["tags"]["one"]["version"] == 1
    ok(api.post(f"{table}/tags/update", json={"tag": "one", "version": 2}))
    assert ok(api.post(f"{table}/tags/version", json={"tag": "one"}))["version"] == 2
    ok(api.post(f"{table}/tags/delete", json={"tag": "one"}))
    expect_error(api.post(f"{table}/tags/version", json={"tag": "one"}), 404, 8)
    ok(api.post(f"{table}/branches/create", json={"name": "dev", "from_version": 1}))
    assert "dev" in ok(api.post(f"{table}/branches/list"))["branches"]
    ok(api.post(f"{table}/branches/delete", json={"name": "dev"}))
    assert ok(api.post(f"{table}/version/describe", json={"version": 1}))["version"]["version"] == 1
    expect_error(api.post(f"{table}/version/describe", json={"version": 99}), 404, 11)
    ok(
        api.post(
            f"{table}/version/delete", json={"ranges": [{"start_version": 1, "end_version": 1}]}
        )
    )
    expect_error(api.post(f"{table}/count_rows", json={"predicate": "id >>> 1"}), 400, 13)
    expect_error(
        api.post(
            f"{table}/insert", content=_ipc_stream(pa.table({"z": [1]})), headers=ARROW_STREAM
        ),
        400,
        20,
    )
    # the batches (all or none; test_directory_batch and the kit record real versions)
    assert ok(api.post("/v1/table/batch-commit", json={"operations": []}))["results"] == []
    expect_error(api.post("/v1/table/batch-commit", json={"operations": [{}]}), 400, 13)
    missing_table = {"id": ["nope"], "version": 2, "manifest_path": "_versions/2.manifest-x"}
    expect_error(
        api.post("/v1/table/version/batch-create", json={"entries": [missing_table]}), 404, 4
    )
    updated = ok(
        api.post(
            f"{table}/update_field_metadata",
            json={"updates": [{"path": "id", "metadata": {"unit": "none"}}]},
        )
    )
    assert updated["fields"] == {"id": {"unit": "none"}}
    assert lance.dataset(location).schema.field("id").metadata == {b"unit": b"none"}

    assert lance.dataset(location).count_rows() == 6  # read back from storage by pylance
    answered = {operation for operation, status in spec.seen if status in (200, 201, 202)}
    assert {
        "CreateTable", "InsertIntoTable", "MergeInsertIntoTable", "CountTableRows", "QueryTable",
        "UpdateTable", "DeleteFromTable", "ExplainTableQueryPlan", "AnalyzeTableQueryPlan",
        "AlterTableAddColumns", "AlterTableAlterColumns", "AlterTableDropColumns",
        "UpdateTableSchemaMetadata", "GetTableStats", "CreateTableScalarIndex", "CreateTableIndex",
        "ListTableIndices", "DescribeTableIndexStats", "DropTableIndex", "CreateTableTag",
        "ListTableTags", "UpdateTableTag", "GetTableTagVersion", "DeleteTableTag",
        "CreateTableBranch", "ListTableBranches", "DeleteTableBranch", "DescribeTableVersion",
        "BatchDeleteTableVersions", "UpdateFieldMetadata", "BatchCommitTables",
    } <= answered  # fmt: skip


def test_pylance_rest_namespace_runs_the_data_operations_against_our_adapter(
    peer: Any, root: Path
) -> None:
    peer.create_namespace(ln.CreateNamespaceRequest(id=["p"]))
    created = peer.create_table(ln.CreateTableRequest(id=["p", "t"]), _ipc_stream(_items(3)))
    peer.insert_into_table(ln.InsertIntoTableRequest(id=["p", "t"]), _ipc_stream(_items(2, 3)))
    assert peer.count_table_rows(ln.CountTableRowsRequest(id=["p", "t"])).count == 5
    queried = peer.query_table(ln.QueryTableRequest(id=["p", "t"], k=10, vector={}))
    assert pa.ipc.open_file(pa.BufferReader(queried.data)).read_all().num_rows == 5
    peer.create_table_tag(ln.CreateTableTagRequest(id=["p", "t"], tag="v1", version=1))
    tags = peer.list_table_tags(ln.ListTableTagsRequest(id=["p", "t"]))
    assert tags.tags["v1"].version == 1
    # pylance 14.0.2's wrapper hands this one's request to Rust as is: it takes a dict
    version = peer.describe_table_version({"id": ["p", "t"], "version": 2})
    assert version["version"]["version"] == 2

    stored = lance.dataset(created.location)  # from storage, not through any server
    assert sorted(stored.to_table().column("id").to_pylist()) == [0, 1, 2, 3, 4]
    assert stored.tags.list()["v1"]["version"] == 1
