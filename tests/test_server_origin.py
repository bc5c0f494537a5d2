"""Web pages cannot drive a token-less ``lance-ns serve`` (issue 27).

Server: the real ``lance-ns serve --impl dir`` process without a token on a free
127.0.0.1 port (tests/serve_process.py), started by a module fixture. A browser sends
what these tests send: an ``Origin`` header with every cross-origin request (and every
POST), a "simple" POST without preflight (no Content-Type, or a form type), and after a
DNS rebinding the attacker's host name in ``Host``. Each is refused and changes
nothing; the protocol's own clients (no Origin, an IP address or localhost in Host)
pass, and the operator's ``--allow-origin`` / ``--allow-host`` let a page or a name in.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from serve_process import ServeProcess, lance_ns_serve

import lance_namespace_async as lna
from lance_namespace_async.errors import InvalidInputError
from lance_namespace_async.server._origin import OriginPolicy

pytest.importorskip("uvicorn", reason="the server extra is not installed")

ALLOWED_PAGE = "https://catalog-ui.example"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    root = tmp_path_factory.mktemp("origin") / "root"
    root.mkdir()
    with lance_ns_serve(
        {"root": str(root)},
        "--log-level",
        "error",
        "--allow-origin",
        ALLOWED_PAGE,
        "--allow-host",
        "catalog.internal",
    ) as process:
        yield process


def namespaces(server: ServeProcess) -> list[str]:
    answer = httpx.get(f"{server.uri}/v1/namespace/%24/list")
    assert answer.status_code == 200, answer.text
    names: list[str] = answer.json()["namespaces"]
    return names


def create(server: ServeProcess, name: str, **headers: str) -> httpx.Response:
    return httpx.post(
        f"{server.uri}/v1/namespace/{name}/create",
        content=b"{}",
        headers={"Content-Type": "application/json", **headers},
    )


def test_a_cross_origin_post_is_refused_and_changes_nothing(served: ServeProcess) -> None:
    answer = create(served, "from_evil", Origin="https://evil.example")
    assert answer.status_code == 403
    assert answer.json()["code"] == 15
    assert "cross-origin" in answer.json()["error"]
    assert "from_evil" not in namespaces(served)


@pytest.mark.parametrize("origin", ["null", "http://127.0.0.1:1", "https://evil.example/"])
def test_every_origin_the_operator_did_not_allow_is_refused(
    served: ServeProcess, origin: str
) -> None:
    answer = httpx.get(f"{served.uri}/v1/namespace/%24/list", headers={"Origin": origin})
    assert (answer.status_code, answer.json()["code"]) == (403, 15)


def test_an_allowed_page_is_answered(served: ServeProcess) -> None:
    answer = create(served, "from_ui", Origin=ALLOWED_PAGE.upper())
    assert answer.status_code == 200, answer.text
    assert "from_ui" in namespaces(served)


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded"])
def test_a_simple_post_without_json_content_type_is_refused(
    served: ServeProcess, content_type: str | None
) -> None:
    headers = {} if content_type is None else {"Content-Type": content_type}
    answer = httpx.post(
        f"{served.uri}/v1/namespace/simple_post/create", content=b"{}", headers=headers
    )
    assert (answer.status_code, answer.json()["code"]) == (400, 13)
    assert "application/json" in answer.json()["error"]
    assert "simple_post" not in namespaces(served)


def test_an_arrow_body_must_say_it_is_arrow(served: ServeProcess) -> None:
    answer = httpx.post(
        f"{served.uri}/v1/table/t/insert", content=b"\xff" * 16, headers={"Content-Type": ""}
    )
    assert (answer.status_code, answer.json()["code"]) == (400, 13)


@pytest.mark.parametrize("host", ["evil.example", "evil.example:2333", "localhost.evil.example"])
def test_a_rebound_host_name_is_refused(served: ServeProcess, host: str) -> None:
    """After DNS rebinding the browser sends the attacker's name: refused, even for reads."""
    answer = httpx.get(f"{served.uri}/v1/namespace/%24/list", headers={"Host": host})
    assert answer.status_code == 421
    assert answer.json()["code"] == 13
    assert create(served, "rebound", Host=host).status_code == 421
    assert "rebound" not in namespaces(served)


@pytest.mark.parametrize(
    "host", ["127.0.0.1:1", "localhost", "LOCALHOST:2333", "[::1]:2333", "catalog.internal:80"]
)
def test_addresses_localhost_and_allowed_names_are_answered(
    served: ServeProcess, host: str
) -> None:
    answer = httpx.get(f"{served.uri}/v1/namespace/%24/list", headers={"Host": host})
    assert answer.status_code == 200, answer.text


def test_the_protocols_clients_send_neither_and_pass(served: ServeProcess) -> None:
    with lna.connect_sync("rest", {"uri": served.uri}) as ns:
        ns.create_namespace({"id": ["by_client"]})
        assert ["by_client"] in [[n] for n in ns.list_namespaces({"id": []}).namespaces]


def test_an_allowed_origin_must_be_an_origin() -> None:
    for bad in ("evil.example", "ftp://x", "https://x/path", ""):
        with pytest.raises(InvalidInputError):
            OriginPolicy([bad])
    with pytest.raises(InvalidInputError):
        OriginPolicy(hosts=[""])
    OriginPolicy(hosts=["*"]).check(None, "anything.example")
