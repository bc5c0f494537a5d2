"""The data-plane attacks of issue 27 over a catalog backend, not only the directory.

Servers: the Iceberg REST look-alike (tests/iceberg_rest_server.py, pyiceberg's SqlCatalog
on sqlite) on a free 127.0.0.1 port, and in front of it the real ``lance-ns serve --impl
iceberg`` process with its defaults (storage workers, request limits, confinement), run
under an address-space limit so that a failure cannot take the test machine with it.

Every attack goes through the same adapter and storage layers as on the directory backend
(tests/test_arrow_guard.py, test_request_bounds.py, test_storage_workers.py,
test_containment.py attack that one); here each is sent once to a catalog-backed table and
must be refused with its typed 4xx, leave the table's files exactly as they were, and
leave the server alive and answering.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from conftest import tree_digest
from iceberg_rest_server import iceberg_catalog
from serve_process import ServeProcess, lance_ns_serve
from test_arrow_guard import MALFORMED, ids, stream, zstd_bomb

pytest.importorskip("uvicorn", reason="the server extra is not installed")

#: the server's address space: pylance maps ~2.5 GiB once up; the attacks want far more
ADDRESS_SPACE = 6 * 2**30
TABLE = "/v1/table/wh$ns$t"
ARROW = {"Content-Type": "application/vnd.apache.arrow.stream"}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServeProcess, Path]]:
    prlimit = shutil.which("prlimit")
    if prlimit is None:
        pytest.skip("prlimit (util-linux) is needed to bound the server's address space")
    place = tmp_path_factory.mktemp("catalog-attacks")
    data = place / "lance-root"
    data.mkdir()
    with iceberg_catalog(place / "iceberg") as catalog:
        properties = {"endpoint": catalog.uri, "root": str(data), "retry_backoff_ms": "1"}
        with lance_ns_serve(
            properties,
            "--log-level",
            "error",
            "--storage-workers",
            "1",
            impl="iceberg",
            prefix=(prlimit, f"--as={ADDRESS_SPACE}", "--"),
        ) as server:
            with httpx.Client(base_url=server.uri, timeout=60) as http:
                assert http.post("/v1/namespace/wh$ns/create", json={}).status_code == 200
                created = http.post(f"{TABLE}/create", content=stream(ids(10)), headers=ARROW)
                assert created.status_code == 200, created.text
            yield server, data


def unchanged_and_serving(server: ServeProcess, data: Path, before: dict[str, str]) -> None:
    assert server.process.poll() is None, "the server died"
    assert tree_digest(data) == before, "the attack changed the table's files"
    with httpx.Client(base_url=server.uri, timeout=60) as http:
        counted = http.post(f"{TABLE}/count_rows", json={})
    assert (counted.status_code, counted.json()) == (200, 10), counted.text


@pytest.mark.parametrize("attack", sorted(MALFORMED))
def test_malformed_arrow_is_400_on_a_catalog_table(
    served: tuple[ServeProcess, Path], attack: str
) -> None:
    server, data = served
    before = tree_digest(data)
    answer = httpx.post(
        f"{server.uri}{TABLE}/insert", content=MALFORMED[attack](), headers=ARROW, timeout=60
    )
    assert (answer.status_code, answer.json()["code"]) == (400, 13), answer.text
    unchanged_and_serving(server, data, before)


def test_a_zstd_bomb_is_413_on_a_catalog_table(served: tuple[ServeProcess, Path]) -> None:
    server, data = served
    before = tree_digest(data)
    answer = httpx.post(f"{server.uri}{TABLE}/insert", content=zstd_bomb(), headers=ARROW)
    assert (answer.status_code, answer.json()["code"]) == (413, 13), answer.text
    unchanged_and_serving(server, data, before)


def _query(**fields: object) -> tuple[str, dict[str, object]]:
    return "query", {"k": 10, "vector": {}, **fields}


ATTACKS: dict[str, Callable[[], tuple[str, dict[str, object]]]] = {
    "filter of 700 chained additions": lambda: _query(filter="id" + " + id" * 700 + " > 0"),
    "k of a billion": lambda: _query(k=10**9),
    "a column aliased 2,000 times": lambda: _query(
        columns={"column_aliases": {f"a{i}": "id" for i in range(2000)}}
    ),
    "repeat(s, 8000) in a predicate": lambda: (
        "count_rows",
        {"predicate": "length(repeat(cast(id as string), 8000)) > 0"},
    ),
    "repeat in a new column": lambda: (
        "add_columns",
        {"new_columns": [{"name": "big", "expression": "repeat(cast(id as string), 1000)"}]},
    ),
    "an HNSW index of m = 2^31 - 1": lambda: (
        "create_index",
        {"column": "id", "index_type": "IVF_HNSW_SQ", "m": 2**31 - 1},
    ),
    "a delete on a missing branch": lambda: ("delete", {"predicate": "id < 5", "branch": "dev"}),
}
#: attacks answered with a typed not-found: (HTTP status, code)
NOT_FOUND = {"a delete on a missing branch": (404, 22)}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_bounded_requests_are_refused_on_a_catalog_table(
    served: tuple[ServeProcess, Path], attack: str
) -> None:
    server, data = served
    before = tree_digest(data)
    path, body = ATTACKS[attack]()
    answer = httpx.post(f"{server.uri}{TABLE}/{path}", json=body, timeout=60)
    if attack in NOT_FOUND:
        assert (answer.status_code, answer.json()["code"]) == NOT_FOUND[attack], answer.text
    else:
        assert answer.status_code in (400, 406), answer.text
        assert answer.json()["code"] in (0, 13), answer.text
    unchanged_and_serving(server, data, before)
