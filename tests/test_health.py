"""``/healthz`` and ``/readyz`` of ``lance-ns serve`` (server._health, _core.readiness).

Servers: real ``lance-ns serve`` processes (tests/serve_process.py): over a directory
catalog, over moto's Glue (tests/glue_fixtures.py, stopped and restarted on its port), and
over another ``lance-ns serve`` (the rest backend), whose JSON access log counts the calls
that reach that catalog. The per-part report is checked in-process on real directory
catalogs and a rest backend pointed at a closed port.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from glue_fixtures import FAKE_AWS_ENV, REGION, free_port
from serve_process import ServeProcess, lance_ns_serve
from test_kit import aws_environment

import lance_namespace_async
from lance_namespace_async.server import Health

TOKEN = "health-probe-secret-7f3a"


def _readyz(served: ServeProcess, **headers: str) -> httpx.Response:
    return httpx.get(f"{served.uri}/readyz", headers=headers, timeout=30)


# -- the process answers, without a token -------------------------------------------------


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    root = tmp_path_factory.mktemp("health-auth")
    env = {"HEALTH_TOKEN": TOKEN}
    options = ("--auth-token-env", "HEALTH_TOKEN", "--storage-workers", "0")
    with lance_ns_serve({"root": str(root)}, *options, "--log-level", "error", env=env) as served:
        yield served


def test_healthz_and_readyz_answer_without_the_token_the_api_requires(
    guarded: ServeProcess,
) -> None:
    api = httpx.get(f"{guarded.uri}/v1/namespace/$/list", timeout=30)
    assert api.status_code == 401  # the protocol's routes still need it

    health = httpx.get(f"{guarded.uri}/healthz", timeout=30)
    assert health.status_code == 200
    assert health.json() == {"status": "ok"}
    assert health.headers["cache-control"] == "no-store"

    ready = _wait_for(guarded, 200, within=30)  # a loaded machine may miss the first deadline
    assert ready.status_code == 200
    body = ready.json()
    assert body["status"] == "ready"
    assert [(check["name"], check["ready"]) for check in body["checks"]] == [("backend", True)]
    assert httpx.head(f"{guarded.uri}/readyz", timeout=30).status_code == 200


def test_health_paths_take_get_and_head_only_and_never_shadow_a_protocol_route(
    guarded: ServeProcess,
) -> None:
    refused = httpx.post(f"{guarded.uri}/readyz", timeout=30)
    assert refused.status_code == 405
    assert refused.headers["allow"] == "GET, HEAD"
    # near misses are the protocol's paths (unknown routes: 401 first, as for any path)
    for near in ("/healthz/", "/v1/healthz", "/readyz/x"):
        assert httpx.get(f"{guarded.uri}{near}", timeout=30).status_code == 401
    spec = (Path(__file__).parents[1] / "spec" / "rest.yaml").read_text()
    paths = [line.strip() for line in spec.splitlines() if line.startswith("  /")]
    assert paths
    assert all(path.startswith("/v1/") for path in paths)


def test_readyz_keeps_the_origin_and_host_checks_healthz_skips_them(
    guarded: ServeProcess,
) -> None:
    """A DNS-rebound page (a foreign Host) cannot read /readyz; /healthz says nothing."""
    rebound = {"host": f"attacker.example:{guarded.port}"}
    assert httpx.get(f"{guarded.uri}/readyz", headers=rebound, timeout=30).status_code == 421
    page = {"origin": "https://attacker.example"}
    assert httpx.get(f"{guarded.uri}/readyz", headers=page, timeout=30).status_code == 403
    health = httpx.get(f"{guarded.uri}/healthz", headers={**rebound, **page}, timeout=30)
    assert (health.status_code, health.json()) == (200, {"status": "ok"})


# -- the backend answers: moto's Glue stopped, then back ----------------------------------


@contextlib.contextmanager
def _moto_on(port: int) -> Iterator[None]:
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield
    finally:
        server.stop()


def _wait_for(served: ServeProcess, status: int, within: float) -> httpx.Response:
    deadline = time.monotonic() + within
    while True:
        answer = _readyz(served)
        if answer.status_code == status or time.monotonic() > deadline:
            return answer
        time.sleep(0.2)


def test_readyz_fails_while_the_glue_catalog_is_down_and_recovers_when_it_returns(
    tmp_path: Path,
) -> None:
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in FAKE_AWS_ENV.items() if v is not None}
    properties = {
        "endpoint": endpoint,
        "region": REGION,
        "child_catalogs": "false",
        "root": str(tmp_path),
    }
    options = ("--ready-timeout", "3", "--storage-workers", "0", "--log-level", "error")
    with aws_environment():
        moto = contextlib.ExitStack()
        moto.enter_context(_moto_on(port))
        with moto, lance_ns_serve(properties, *options, impl="glue", env=env) as served:
            # the first call builds the AWS client: on a loaded machine it may miss a deadline
            assert _wait_for(served, 200, within=30).status_code == 200

            moto.close()  # the catalog goes away
            down = _wait_for(served, 503, within=20)
            assert down.status_code == 503
            body = down.json()
            assert body["status"] == "not ready"
            [check] = body["checks"]
            assert check["name"] == "backend"
            assert check["ready"] is False
            assert check["reason"].startswith(("unavailable: ", "timeout: "))
            # nothing of where the catalog is: /readyz answers anyone
            assert str(port) not in down.text
            assert "127.0.0.1" not in down.text
            assert check["ms"] <= 3000 + 1000  # the deadline held

            moto.enter_context(_moto_on(port))  # back on the same port
            assert _wait_for(served, 200, within=30).status_code == 200


# -- a probe storm is one call on the catalog; a silent catalog is a timeout --------------


def _access_lines(path: Path, operation: str) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in path.read_text().splitlines() if line]
    return [line for line in lines if line.get("operation") == operation]


def test_a_probe_storm_reaches_the_catalog_once_per_cache_period(tmp_path: Path) -> None:
    """50 concurrent /readyz on a rest backend: the catalog behind it sees one ListNamespaces."""
    log = tmp_path / "catalog-access.log"
    root = tmp_path / "root"
    root.mkdir()
    catalog_options = ("--storage-workers", "0", "--log-level", "error", "--access-log", "json")
    with (
        lance_ns_serve(
            {"root": str(root)}, *catalog_options, "--access-log-file", str(log)
        ) as catalog,
        lance_ns_serve(
            {"uri": catalog.uri}, "--storage-workers", "0", "--log-level", "error", impl="rest"
        ) as front,
    ):
        # the first check warms both servers (a loaded machine may need more than 2 s)
        assert _wait_for(front, 200, within=30).status_code == 200
        time.sleep(1.1)  # past the cache
        before = len(_access_lines(log, "ListNamespaces"))
        started = time.monotonic()
        with ThreadPoolExecutor(50) as pool:
            answers = list(pool.map(lambda _: _readyz(front), range(50)))
        elapsed = time.monotonic() - started
        assert [answer.status_code for answer in answers] == [200] * 50
        time.sleep(0.3)  # the catalog's log writer
        probes = _access_lines(log, "ListNamespaces")[before:]
        # one check per 1 s cache period the storm spanned (one, unless the machine is slow)
        assert 1 <= len(probes) <= 1 + int(elapsed)
        assert probes[0]["id"] == "$"  # the root, limit 1: the cheap call
        assert probes[0]["path"].endswith("/list")

        time.sleep(1.1)  # past the cache: the next probe asks again
        assert _readyz(front).status_code == 200
        time.sleep(0.3)
        assert len(_access_lines(log, "ListNamespaces")) == before + len(probes) + 1


@contextlib.contextmanager
def _silent_catalog() -> Iterator[str]:
    """A port that accepts connections (the kernel's backlog) and never answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"


def test_readyz_is_503_once_the_ready_timeout_passes(tmp_path: Path) -> None:
    with (
        _silent_catalog() as uri,
        lance_ns_serve(
            {"uri": uri},
            "--ready-timeout",
            "0.5",
            "--storage-workers",
            "0",
            "--log-level",
            "error",
            impl="rest",
        ) as front,
    ):
        started = time.monotonic()
        answer = _readyz(front)
        assert time.monotonic() - started < 10
        assert answer.status_code == 503
        [check] = answer.json()["checks"]
        assert check["reason"] == "timeout: no answer within 0.5 s"
        assert check["ms"] < 500 + 1000  # the deadline held, whatever the retries
        assert uri not in answer.text


# -- a namespace of several parts reports each part ---------------------------------------


class _TwoMounts:
    """What a mounting namespace implements for /readyz (_core.readiness.ReadinessParts)."""

    def __init__(self, parts: dict[str, Any]) -> None:
        self.parts = parts

    def readiness_parts(self) -> dict[str, Any]:
        return self.parts


async def test_each_part_of_a_mounting_namespace_is_reported_on_its_own(tmp_path: Path) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{closed.getsockname()[1]}"  # bound, not listening: refused
        async with (
            lance_namespace_async.connect("dir", {"root": str(tmp_path)}) as local,
            lance_namespace_async.connect("rest", {"uri": dead, "max_retries": "0"}) as remote,
        ):
            inner = _TwoMounts({"b": local})
            health = Health(_TwoMounts({"sales": local, "ml": remote, "a": inner}), 1.0)  # type: ignore[arg-type]
            parts = await health.readiness()
            assert [(p.name, p.ready) for p in parts] == [
                ("sales", True),
                ("ml", False),
                ("a/b", True),
            ]
            assert parts[1].reason is not None
            assert dead not in parts[1].reason
            answer = await health.answer("GET", "/readyz")
            assert answer.status_code == 503
            shown = json.loads(bytes(answer.body))
            assert shown["status"] == "not ready"
            assert [c["name"] for c in shown["checks"]] == ["sales", "ml", "a/b"]
            # cached: the same result object answers within the cache period
            assert await health.readiness() is parts
            await asyncio.sleep(0)


@pytest.mark.parametrize("bad", [0, -1, 301, True, "2", float("nan")])
async def test_a_bad_ready_timeout_is_a_typed_error(tmp_path: Path, bad: object) -> None:
    from lance_namespace_async import errors
    from lance_namespace_async.server import create_app

    async with lance_namespace_async.connect("dir", {"root": str(tmp_path)}) as local:
        with pytest.raises(errors.InvalidInputError, match="ready_timeout"):
            create_app(local, ready_timeout=bad)  # type: ignore[arg-type]
        with pytest.raises(errors.InvalidInputError, match="access_log"):
            create_app(local, access_log="json")  # type: ignore[arg-type]
