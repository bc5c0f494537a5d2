"""Property-based fuzzing of the REST adapter against spec/rest.yaml (schemathesis).

Schemathesis reads spec/rest.yaml and generates requests for all its operations:
valid ones (positive mode: every value fits the schema) and invalid ones
(negative mode: one or more values break it), from its coverage phase
(deterministic boundary cases) and its fuzzing phase (Hypothesis). Every answer
goes through schemathesis' own checks (no 5xx, status declared by the spec,
content type, response schema, negative data rejected, positive data accepted,
declared authentication enforced) plus ours: an error's protocol ``code`` is the
one its HTTP status stands for.

The server is ``create_app(connect("dir", ...))`` with a bearer token. Each
operation starts from a fresh copy of a small catalog, and a share of the
generated ids, table names, locations, versions and modes are drawn from that
catalog (schemathesis "dictionaries"), so valid requests find, create, restore,
rename and drop real objects instead of only meeting 404s.

Two passes: in-process through ASGI (most cases: fast) and a smaller one over
real HTTP against uvicorn on a loopback port (h11's request parsing, a 4 KiB body
limit enforced while streaming). Generation is derandomized: the same cases
every run. The module prints the line the issue asks for, e.g.
``schemathesis: 2700 cases, 0 server errors, 0 off-spec (...)``.

Where the adapter is deliberately more lenient or stricter than the schema, the
check is adjusted in one place, with the reason next to it (``fuzz_config`` and
``run_case``). Below the fuzzing: the bugs it found, as plain regression tests,
and a small concurrency smoke test.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import tempfile
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import lance
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, settings

schemathesis = pytest.importorskip("schemathesis", reason="schemathesis is a dev dependency")
pytest.importorskip("starlette", reason="the server extra is not installed")
uvicorn = pytest.importorskip("uvicorn", reason="the server extra is not installed")

from conftest import disk_state  # noqa: E402
from schemathesis.core import NOT_SET  # noqa: E402
from schemathesis.core.failures import Failure, FailureGroup  # noqa: E402

import lance_namespace_async as lna  # noqa: E402
from lance_namespace_async import errors  # noqa: E402
from lance_namespace_async.server import ROUTES, create_app  # noqa: E402

SPEC_PATH = Path(__file__).resolve().parent.parent / "spec" / "rest.yaml"
TOKEN = "fuzz-T0ken_value"

# -- the seeded catalog -----------------------------------------------------------

#: ids (path form, ``$`` delimiter) of what every operation's catalog starts with
NAMESPACES = ("sales", "sales$eu", "empty")
DATA_TABLES = ("sales$orders", "sales$eu$events")  # two versions each
DECLARED_TABLES = ("sales$draft",)
#: existing and missing objects at every depth, and the root
KNOWN_IDS = (
    *NAMESPACES,
    *DATA_TABLES,
    *DECLARED_TABLES,
    "$",
    "missing",
    "sales$missing",
    "sales$eu$missing",
)
#: a Lance dataset inside the catalog root that no table points at (RegisterTable)
LOOSE_DATASET = "loose/unregistered.lance"


def build_catalog(root: Path) -> None:
    """The catalog every operation starts from (built once, then copied)."""

    async def build() -> None:
        async with lna.connect("dir", {"root": str(root)}) as ns:
            for namespace in NAMESPACES:
                await ns.create_namespace({"id": namespace.split("$")})
            for table in DATA_TABLES:
                declared = await ns.declare_table({"id": table.split("$")})
                assert isinstance(declared.location, str)
                lance.write_dataset(pa.table({"x": [1, 2]}), declared.location)
                lance.write_dataset(pa.table({"x": [3]}), declared.location, mode="append")
            for table in DECLARED_TABLES:
                await ns.declare_table({"id": table.split("$")})

    asyncio.run(build())
    lance.write_dataset(pa.table({"x": [1]}), str(root / LOOSE_DATASET))


def fuzz_config(root: Path, *, max_examples: int) -> Any:
    """Schemathesis settings: both modes, derandomized, values drawn from ``root``'s catalog."""
    return schemathesis.Config.from_dict(
        {
            "seed": 20240611,
            # the machine is shared: slow generation is not a failure of the server
            "suppress-health-check": ["too_slow"],
            # the adapter's one scheme of the three the spec offers
            "auth": {"openapi": {"BearerAuth": {"bearer": TOKEN}}},
            "generation": {
                "mode": "all",
                "max-examples": max_examples,
                "deterministic": True,
                "database": "none",
                # credentials are ours (auth above), not generated ones
                "with-security-parameters": False,
            },
            "dictionaries": {
                "ids": {"values": list(KNOWN_IDS)},
                "delimiters": {"values": ["$"]},
                "names": {"values": ["orders", "renamed", "draft"]},
                "locations": {"values": [f"file://{root / LOOSE_DATASET}"]},
                "versions": {"values": [1, 2]},
                "modes": {"values": ["Create", "ExistOk", "overwrite", "Fail", "skip"]},
                "behaviors": {"values": ["Restrict", "cascade"]},
            },
            "parameters": {
                "path.id": {"dictionary": "ids", "probability": 0.5},
                # the spec lets the delimiter be "", which every backend refuses
                # (code 13): most requests keep the default one, so they get further
                "query.delimiter": {"dictionary": "delimiters", "probability": 0.7},
                "body.new_table_name": {"dictionary": "names", "probability": 0.5},
                "body.location": {"dictionary": "locations", "probability": 0.3},
                "body.version": {"dictionary": "versions", "probability": 0.5},
                "body.mode": {"dictionary": "modes", "probability": 0.5},
                "body.behavior": {"dictionary": "behaviors", "probability": 0.5},
            },
            "checks": {
                # Valid-by-schema requests may still break rules a JSON Schema cannot
                # state (an identifier part holding the delimiter or a control
                # character, an empty delimiter, limit 0, a root-level table in the
                # directory backend, an unknown mode). The protocol's answer to those
                # is 400 InvalidInput (code 13), so 400 joins schemathesis' default
                # list here; error_code_matches_status below still insists that every
                # 400 is code 13. Stricter than the default: no 3xx, 429 or 5xx.
                "positive_data_acceptance": {
                    "expected-statuses": ["2xx", "400", "401", "403", "404", "409"]
                },
                # 413 added: the real-HTTP pass limits bodies to 4 KiB, and an
                # oversized invalid body is refused unread, with the 413 the spec
                # declares for every operation
                "negative_data_rejection": {
                    "expected-statuses": [
                        *("400", "401", "403", "404", "405", "406", "409", "413"),
                        *("415", "422", "428", "429", "5xx"),
                    ]
                },
            },
        }
    )


# The catalog's path must be known when the module is collected (the dictionaries
# hold its dataset's location), so it is fixed per process rather than a tmp_path.
FUZZ_ROOT = Path(tempfile.gettempdir()) / f"lna-fuzz-{os.getpid()}"
CATALOG = FUZZ_ROOT / "catalog"

# Arrow IPC bodies (CreateTable, InsertIntoTable, MergeInsertIntoTable) are binary; the
# generated value (bytes, or a string for format: binary) is sent as it is, so the adapter
# meets arbitrary bytes under the Arrow media type and must answer 13, never a 500.
schemathesis.serializer.alias("application/vnd.apache.arrow.stream", "application/octet-stream")

#: the schema of the in-process pass: its ``app`` is switched per operation
asgi_schema = schemathesis.openapi.from_path(
    SPEC_PATH, config=fuzz_config(CATALOG, max_examples=40)
)
#: the real-HTTP pass: fewer examples, same generation
http_schema = schemathesis.openapi.from_path(SPEC_PATH, config=fuzz_config(CATALOG, max_examples=8))


# -- the tally ----------------------------------------------------------------------


@dataclass
class Tally:
    """What the fuzzing passes sent and got back, for the summary line."""

    cases: int = 0
    by_pass: Counter[str] = field(default_factory=Counter)
    by_operation: Counter[str] = field(default_factory=Counter)
    by_mode: Counter[str] = field(default_factory=Counter)
    by_status: Counter[int] = field(default_factory=Counter)
    server_errors: int = 0
    failures: Counter[str] = field(default_factory=Counter)

    def record(self, case: Any, status: int, via: str) -> None:
        self.cases += 1
        self.by_pass[via] += 1
        self.by_operation[case.operation.label] += 1
        mode = case.meta.generation.mode.value if case.meta is not None else "explicit"
        self.by_mode[mode] += 1
        self.by_status[status] += 1
        if status >= 500:
            self.server_errors += 1

    def summary(self) -> str:
        passes = ", ".join(f"{n} {via}" for via, n in sorted(self.by_pass.items()))
        modes = ", ".join(f"{n} {mode}" for mode, n in sorted(self.by_mode.items()))
        statuses = ", ".join(f"{status}: {n}" for status, n in sorted(self.by_status.items()))
        return (
            f"schemathesis: {self.cases} cases, {self.server_errors} server errors, "
            f"{sum(self.failures.values())} off-spec ({passes}; {modes}; "
            f"{len(self.by_operation)} operations; statuses {statuses})"
        )


TALLY = Tally()
#: the issue's bar for a full run (both passes, every operation)
MIN_CASES = 1_000


@pytest.fixture(scope="module", autouse=True)
def fuzz_summary(request: pytest.FixtureRequest) -> Iterator[None]:
    """Print the summary line; when every operation ran, hold the run to the issue's bar."""
    yield
    plugins = request.config.pluginmanager
    reporter = plugins.get_plugin("terminalreporter")
    capture = plugins.get_plugin("capturemanager")
    if TALLY.cases and reporter is not None and capture is not None:
        with capture.global_and_fixture_disabled():
            reporter.write_line("")
            reporter.write_line(TALLY.summary())
    if len(TALLY.by_operation) == len(ROUTES):
        assert TALLY.cases >= MIN_CASES, TALLY.summary()


# -- our own check ------------------------------------------------------------------

#: answers the adapter gives itself, outside the backend's error codes: unknown
#: route (404), wrong method (405), body over the limit (413), all code 13
ADAPTER_STATUSES_OF_INVALID_INPUT = frozenset({404, 405, 413})


def error_code_matches_status(ctx: Any, response: Any, case: Any) -> bool | None:
    """An error's protocol ``code`` is one the HTTP status stands for.

    Clients rebuild the typed error from the code alone, so a 404 must carry a
    not-found code, a 409 a conflict code, a 400 InvalidInput, and so on.
    """
    if response.status_code < 400:
        return None
    body = json.loads(response.content)
    code = body["code"]
    expected = errors.error_class(code).http_status
    if response.status_code == expected:
        return None
    if code == errors.ErrorCode.INVALID_INPUT and (
        response.status_code in ADAPTER_STATUSES_OF_INVALID_INPUT
    ):
        return None
    raise AssertionError(
        f"HTTP {response.status_code} carries code {code}, which stands for HTTP {expected}"
    )


# -- the in-process pass --------------------------------------------------------------


@pytest.fixture(scope="module")
def pristine() -> Iterator[Path]:
    """The seeded catalog, built once; each operation gets a fresh copy of it."""
    if FUZZ_ROOT.exists():
        shutil.rmtree(FUZZ_ROOT)
    build_catalog(CATALOG)
    shutil.copytree(CATALOG, FUZZ_ROOT / "pristine")
    yield FUZZ_ROOT / "pristine"
    shutil.rmtree(FUZZ_ROOT)


@pytest.fixture
def catalog(pristine: Path) -> Path:
    """A fresh copy of the seeded catalog at ``CATALOG`` (its tables' locations are there)."""
    shutil.rmtree(CATALOG)
    shutil.copytree(pristine, CATALOG)
    return CATALOG


class Switchboard:
    """The ASGI app the in-process schema calls: forwards to this operation's adapter."""

    def __init__(self) -> None:
        self.target: Any = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.target(scope, receive, send)


SWITCHBOARD = Switchboard()
asgi_schema.app = SWITCHBOARD


@pytest.fixture
def adapter(catalog: Path) -> Iterator[Any]:
    namespace = lna.connect("dir", {"root": str(catalog)})
    SWITCHBOARD.target = create_app(namespace, auth_token=TOKEN)
    yield SWITCHBOARD
    SWITCHBOARD.target = None


def body_is_missing(case: Any) -> bool:
    """A negative case whose request leaves out the body the operation requires."""
    return bool(case.operation.body) and case.body is NOT_SET


def run_case(case: Any, response: Any, **transport: Any) -> None:
    """Tally the case, then run every check on it (the failures go to the tally too)."""
    TALLY.record(case, response.status_code, "over HTTP" if transport else "in-process")
    excluded = []
    if body_is_missing(case):
        # The spec marks every request body as required, but the adapter reads a
        # missing body as {} on purpose (tests/test_server.py, "lenient where it is
        # harmless"): such a request is answered like one with {} and is not
        # counted as invalid data accepted. Every other check still runs on it.
        excluded.append(schemathesis.checks.negative_data_rejection)
    if response.status_code in (406, 413) and response.json().get("code") in (0, 13):
        # an operation the backend (dir) does not implement (406, code 0) or a body
        # above the adapter's limit (413, code 13): answers the spec declares for
        # valid data too, which are not "valid data rejected"
        excluded.append(schemathesis.checks.positive_data_acceptance)
    try:
        case.validate_response(
            response,
            additional_checks=[error_code_matches_status],
            excluded_checks=excluded,
            transport_kwargs=transport,
        )
    except FailureGroup as group:
        for failure in group.exceptions:
            title = failure.title if isinstance(failure, Failure) else type(failure).__name__
            TALLY.failures[title] += 1
        raise


#: the catalog fixtures are per operation on purpose: an operation's cases share
#: (and change) one catalog, as a client's requests would
PER_OPERATION_FIXTURES = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])


@asgi_schema.parametrize()
@PER_OPERATION_FIXTURES
def test_adapter_answers_generated_requests_as_the_spec_says(case: Any, adapter: Any) -> None:
    response = case.call()
    run_case(case, response)


# -- the real-HTTP pass ---------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def served(catalog: Path) -> Iterator[str]:
    """The adapter under uvicorn (h11) on a loopback port, over this operation's catalog."""
    namespace = lna.connect("dir", {"root": str(catalog)})
    port = _free_port()
    config = uvicorn.Config(
        create_app(namespace, auth_token=TOKEN, max_body_bytes=4096),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        lifespan="off",
        http="h11",
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("adapter server did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=20)


@http_schema.parametrize()
@PER_OPERATION_FIXTURES
def test_adapter_over_real_http_answers_generated_requests_as_the_spec_says(
    case: Any, served: str
) -> None:
    response = case.call(base_url=served)
    run_case(case, response, base_url=served)


# -- what the fuzzing found, as regression tests ----------------------------------------

AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
async def api(catalog: Path) -> AsyncIterator[httpx.AsyncClient]:
    """The adapter over a fresh copy of the seeded catalog, called in-process."""
    namespace = lna.connect("dir", {"root": str(catalog)})
    transport = httpx.ASGITransport(app=create_app(namespace, auth_token=TOKEN))
    async with httpx.AsyncClient(
        transport=transport, base_url="http://adapter", headers=AUTH
    ) as client:
        yield client
    await namespace.aclose()


async def test_a_newline_in_the_path_gets_an_error_response_not_a_plain_text_404(
    api: httpx.AsyncClient,
) -> None:
    # Starlette's Mount("") matched paths with ".*", which stops at a newline: such a
    # request never reached the adapter and got Starlette's own text/plain 404
    response = await api.post("/v1/namespace/a%0Ab/describe", json={})
    assert response.status_code == 400
    assert response.headers["content-type"] == "application/json"
    assert response.json()["code"] == errors.ErrorCode.INVALID_INPUT


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/table/sales$later/declare", {"location": True}),
        ("/v1/table/sales$later/declare", {"properties": {"owner": 1}}),
        ("/v1/namespace/fresh/create", {"mode": 1}),
        ("/v1/namespace/fresh/create", {"context": {"trace": ["a"]}}),
        ("/v1/namespace/fresh/create", {"identity": {"api_key": ["sk-live-SECRET"]}}),
        ("/v1/table/sales$orders/restore", {"version": "1"}),
        ("/v1/table/sales$orders/restore", {"version": True}),
        # the path's id wins, but a body id of the wrong type is still a bad request
        ("/v1/namespace/fresh/create", {"id": "fresh"}),
        # no declared field of a request body is nullable
        ("/v1/namespace/fresh/create", {"mode": None}),
        ("/v1/table/sales$orders/restore", {"version": None}),
    ],
)
async def test_a_body_value_of_the_wrong_json_type_is_invalid_input_and_changes_nothing(
    api: httpx.AsyncClient, catalog: Path, path: str, body: dict[str, Any]
) -> None:
    # the generated models' from_dict copies values without looking at their type:
    # {"location": true} used to declare the table at a location of the server's choice
    before = disk_state(catalog)
    response = await api.post(path, json=body)
    assert response.status_code == 400, response.text
    assert response.json()["code"] == errors.ErrorCode.INVALID_INPUT
    assert "SECRET" not in response.text
    assert disk_state(catalog) == before


async def test_a_body_of_whitespace_is_not_json_but_no_body_at_all_is_the_empty_object(
    api: httpx.AsyncClient,
) -> None:
    json_body = {"content-type": "application/json"}
    blank = await api.post("/v1/namespace/empty/drop", content=b" \r\n", headers=json_body)
    assert blank.status_code == 400, blank.text
    assert blank.json()["code"] == errors.ErrorCode.INVALID_INPUT
    nothing = await api.post("/v1/namespace/empty/drop", content=b"", headers=json_body)
    assert nothing.status_code == 200, nothing.text


async def test_unknown_body_fields_are_ignored_even_when_null(api: httpx.AsyncClient) -> None:
    response = await api.post("/v1/namespace/fresh/create", json={"added_later": None})
    assert response.status_code == 200, response.text


async def test_a_version_written_with_a_zero_fraction_is_that_integer(
    api: httpx.AsyncClient,
) -> None:
    # JSON Schema's "integer" includes 1.0; schemathesis sends such values as valid data
    json_body = {"content-type": "application/json"}
    restored = await api.post(
        "/v1/table/sales$orders/restore", content=b'{"version": 1.0}', headers=json_body
    )
    assert restored.status_code == 200, restored.text
    versions = (await api.post("/v1/table/sales$orders/version/list")).json()["versions"]
    assert [v["version"] for v in versions] == [1, 2, 3]
    fractional = await api.post(
        "/v1/table/sales$orders/restore", content=b'{"version": 1.5}', headers=json_body
    )
    assert fractional.status_code == 400
    assert fractional.json()["code"] == errors.ErrorCode.INVALID_INPUT


@pytest.mark.parametrize("version", [-1, 2**64])
@pytest.mark.parametrize("operation", ["describe", "exists", "restore"])
async def test_a_version_outside_lances_range_is_invalid_input_not_an_internal_error(
    api: httpx.AsyncClient, operation: str, version: int
) -> None:
    # Lance versions are u64: pylance raised OverflowError, which surfaced as a 500
    response = await api.post(f"/v1/table/sales$orders/{operation}", json={"version": version})
    assert response.status_code == 400, response.text
    assert response.json()["code"] == errors.ErrorCode.INVALID_INPUT


async def test_dict_requests_are_type_checked_before_a_backend_sees_them(root: Path) -> None:
    async with lna.connect("dir", {"root": str(root)}) as ns:
        await ns.create_namespace({"id": ["a"]})
        before = disk_state(root)
        with pytest.raises(errors.InvalidInputError, match=r"location must be str, got bool"):
            await ns.declare_table({"id": ["a", "t"], "location": True})
        with pytest.raises(errors.InvalidInputError, match=r"properties values must be strings"):
            await ns.declare_table({"id": ["a", "t"], "properties": {"n": 1}})
        with pytest.raises(errors.InvalidInputError, match=r"identity\.auth_token must be str"):
            await ns.describe_namespace({"id": ["a"], "identity": {"auth_token": 12345}})
        assert disk_state(root) == before
        # None still means "unset" (peer models send their unset fields so)
        described = await ns.describe_namespace({"id": ["a"], "identity": None})
        assert described.properties is not None


async def test_directory_refuses_namespace_names_with_a_single_quote(root: Path) -> None:
    # pylance 14 quotes namespace ids into SQL unescaped: such a namespace broke
    # ListNamespaces/ListTables of itself and ListAllTables of the whole catalog (500)
    async with lna.connect("dir", {"root": str(root)}) as ns:
        await ns.create_namespace({"id": ["ok"]})
        with pytest.raises(errors.InvalidInputError, match="single quote"):
            await ns.create_namespace({"id": ["it's"]})
        assert (await ns.list_namespaces({"id": []})).namespaces == ["ok"]
        assert (await ns.list_all_tables({"include_declared": False})).tables == []


# -- many clients at once --------------------------------------------------------------


async def test_fifty_concurrent_clients_get_only_the_answers_they_expect(served: str) -> None:
    """50 keep-alive clients at once, reading and creating/dropping namespaces.

    A smoke version of benchmarks/adapter_load.py: it asserts answers, not timings.
    """
    reads = [
        ("GET", "/v1/namespace/%24/list"),
        ("GET", "/v1/namespace/sales/table/list"),
        ("POST", "/v1/namespace/sales/describe"),
        ("POST", "/v1/table/sales%24orders/describe"),
        ("POST", "/v1/table/sales%24draft/exists"),
    ]

    async def client(index: int) -> list[tuple[str, int]]:
        answers = []
        async with httpx.AsyncClient(base_url=served, headers=AUTH, timeout=60) as http:
            for method, path in reads:
                body = None if method == "GET" else {}
                response = await http.request(method, path, json=body)
                answers.append((path, response.status_code))
            for action in ("create", "drop"):
                path = f"/v1/namespace/client{index}/{action}"
                answers.append((path, (await http.post(path, json={})).status_code))
        return answers

    results = await asyncio.gather(*(client(index) for index in range(50)))
    assert [answer for answers in results for answer in answers if answer[1] != 200] == []
    async with httpx.AsyncClient(base_url=served, headers=AUTH) as http:
        listed = (await http.get("/v1/namespace/%24/list")).json()["namespaces"]
    assert sorted(listed) == ["empty", "sales"]
