"""A request never points the server's storage credentials at another endpoint (issue 27).

Servers: moto's server on 127.0.0.1 (tests/glue_fixtures.py ``moto_glue``: its S3 holds the
data, its Glue is the glue backend's catalog), the real ``lance-ns serve`` process in front
of the dir backend (root on moto's S3) and of the glue backend (tests/serve_process.py),
and a "thief": a listener on 127.0.0.1 that records every connection made to it. Each
server carries its own S3 keys as ``storage.*`` properties.

A client asks the server to use the thief as its S3 endpoint, through CreateTable's
``storage_options`` and through a table's catalog properties (which the spec reads as the
table's storage options). The first is refused (400, code 13) and writes nothing; the
second is stored as the table's metadata but never steers the server's storage work. The
thief must see no connection at all. Keys the operator allows
(``--allow-storage-option``) still pass.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from urllib.parse import quote

import httpx
import pyarrow as pa
import pytest
from conftest import Listener
from glue_fixtures import REGION, moto_glue, s3_client
from serve_process import ServeProcess, lance_ns_serve
from test_kit import FAKE_AWS_ENV, aws_environment

pytest.importorskip("uvicorn", reason="the server extra is not installed")

BUCKET = "redirect-data"
ARROW = {"Content-Type": "application/vnd.apache.arrow.stream"}


@pytest.fixture(scope="module")
def moto() -> Iterator[str]:
    with aws_environment(), moto_glue() as endpoint:
        s3_client(endpoint).create_bucket(Bucket=BUCKET)
        yield endpoint


@pytest.fixture
def thief() -> Iterator[Listener]:
    """A listener that counts who connects: no request may send the server's traffic there."""
    with Listener() as listener:
        yield listener


def storage(endpoint: str) -> dict[str, str]:
    return {
        "storage.aws_endpoint": endpoint,
        "storage.aws_access_key_id": "server-key-id",
        "storage.aws_secret_access_key": "server-secret",
        "storage.aws_region": REGION,
        "storage.allow_http": "true",
    }


@pytest.fixture(scope="module", params=["dir", "glue"])
def served(request: pytest.FixtureRequest, moto: str) -> Iterator[ServeProcess]:
    impl = str(request.param)
    properties = {"root": f"s3://{BUCKET}/{impl}"} | storage(moto)
    if impl == "glue":
        properties |= {"endpoint": moto, "region": REGION, "child_catalogs": "false"}
    env = {k: v for k, v in FAKE_AWS_ENV.items() if v is not None}
    with lance_ns_serve(
        properties, "--log-level", "error", "--allow-storage-option", "timeout", impl=impl, env=env
    ) as process:
        httpx.post(
            f"{process.uri}/v1/namespace/db/create",
            content=b"{}",
            headers={"Content-Type": "application/json"},
            timeout=60,
        ).raise_for_status()
        yield process


def ipc(rows: int) -> bytes:
    table = pa.table({"id": list(range(rows))})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


def create(server: ServeProcess, name: str, **query: dict[str, str]) -> httpx.Response:
    params = {key: json.dumps(value) for key, value in query.items()}
    return httpx.post(
        f"{server.uri}/v1/table/{quote('db$' + name)}/create",
        params=params,
        content=ipc(5),
        headers=ARROW,
        timeout=60,
    )


def post(server: ServeProcess, path: str, body: dict[str, object]) -> httpx.Response:
    return httpx.post(
        f"{server.uri}{path}",
        json=body,
        headers={"Content-Type": "application/json"},
        timeout=60,
    )


def test_create_table_storage_options_cannot_name_another_endpoint(
    served: ServeProcess, thief: Listener
) -> None:
    answer = create(
        served, "stolen", storage_options={"aws_endpoint": f"http://127.0.0.1:{thief.port}"}
    )
    assert (answer.status_code, answer.json()["code"]) == (400, 13), answer.text
    assert "aws_endpoint" in answer.json()["error"]
    exists = post(served, f"/v1/table/{quote('db$stolen')}/exists", {})
    assert exists.status_code == 404
    assert thief.connections == 0


def test_nor_replace_the_servers_keys(served: ServeProcess, thief: Listener) -> None:
    answer = create(
        served,
        "rekeyed",
        storage_options={"aws_access_key_id": "mine", "aws_secret_access_key": "mine"},
    )
    assert (answer.status_code, answer.json()["code"]) == (400, 13)
    assert "aws_access_key_id" in answer.json()["error"]


def test_a_tables_properties_never_steer_the_servers_storage_work(
    served: ServeProcess, thief: Listener
) -> None:
    """Properties are the table's metadata: stored, listed, but not the server's settings."""
    answer = create(served, "decoy", properties={"aws_endpoint": f"http://127.0.0.1:{thief.port}"})
    assert answer.status_code == 200, answer.text
    table = quote("db$decoy")
    inserted = httpx.post(
        f"{served.uri}/v1/table/{table}/insert", content=ipc(3), headers=ARROW, timeout=60
    )
    assert inserted.status_code == 200, inserted.text
    counted = post(served, f"/v1/table/{table}/count_rows", {})
    assert counted.status_code == 200, counted.text
    assert counted.json() == 8
    described = post(served, f"/v1/table/{table}/describe", {"load_detailed_metadata": True})
    assert described.status_code == 200, described.text
    assert "storage_options" not in described.json()
    assert thief.connections == 0


def test_keys_the_operator_allows_pass(served: ServeProcess, thief: Listener) -> None:
    answer = create(served, "allowed", storage_options={"timeout": "60s"})
    assert answer.status_code == 200, answer.text
    assert thief.connections == 0
