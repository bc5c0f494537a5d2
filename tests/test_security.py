"""Security, end to end: hostile names, secrets, TLS verification, the adapter's bearer check.

* Path traversal and absolute-path tricks in namespace and table names are
  InvalidInputError (code 13) on every backend *before* anything is touched: the
  storage root's files are unchanged and the server (behind a recording proxy, or a
  listening socket for the Hive metastore) received no request at all.
* Secrets: every secret used here contains ``conftest.SECRET_CANARY``; reprs, configs
  and errors never show it, and the session-wide scanner of conftest sees every log
  record (DEBUG and up) and warning of the suite.
* TLS: every HTTP backend refuses a self-signed server by default with a typed error,
  and works once the CA is configured through properties.
* The REST adapter's bearer check: missing, wrong and malformed headers are 401 with
  code 16, compared in constant time, and nothing is applied.
* ``lance-ns serve`` (a real process) never answers with its backend's ``storage.*``
  credentials unless the operator opted in.

The Iceberg catalog here is our look-alike (tests/iceberg_rest_server.py): it enforces
OAuth2 and can serve TLS, which the Iceberg reference server does not.
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import hmac
import ipaddress
import logging
import os
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pytest
from conftest import SECRET_CANARY, SECRET_SCANNER, disk_state
from fault_proxy import AdapterServer, FaultProxy, fault_proxy, pylance_adapter
from glue_fixtures import REGION, moto_glue, use_fake_aws_env
from iceberg_rest_server import IcebergCatalogServer, iceberg_catalog
from serve_process import lance_ns_serve
from unity_server import UnityServer, unity_catalog

import lance_namespace_async as lna
from lance_namespace_async import errors
from lance_namespace_async._core.base import AsyncLanceNamespace

WH = "wh"
CATALOG = "main"
TOKEN = f"tok-{SECRET_CANARY}"


@pytest.fixture(autouse=True)
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    use_fake_aws_env(monkeypatch)


# -- the backends, each with the evidence that nothing was touched ------------------------------


@dataclass
class Target:
    """A backend to attack, and how to tell that nothing reached its storage."""

    impl: str
    properties: dict[str, str]
    namespace: list[str]  # an existing namespace to put tables in
    namespace_parent: list[str]  # where new namespaces go
    untouched: Callable[[], None]  # asserts no request / no file change happened


@pytest.fixture(scope="module")
def module_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("security")


@pytest.fixture(scope="module")
def adapter_behind_proxy(module_dir: Path) -> Iterator[tuple[FaultProxy, Path]]:
    root = module_dir / "adapter-root"
    root.mkdir()
    server = AdapterServer(lambda: lna.connect("dir", {"root": str(root)}))
    server.start()
    try:
        with fault_proxy(server.uri) as proxy:
            yield proxy, root
    finally:
        server.stop()


@pytest.fixture(scope="module")
def pylance_behind_proxy(module_dir: Path) -> Iterator[tuple[FaultProxy, Path]]:
    root = module_dir / "pylance-root"
    root.mkdir()
    with pylance_adapter(str(root)) as uri, fault_proxy(uri) as proxy:
        yield proxy, root


@pytest.fixture(scope="module")
def iceberg_behind_proxy(module_dir: Path) -> Iterator[tuple[FaultProxy, IcebergCatalogServer]]:
    with iceberg_catalog(module_dir / "iceberg") as server, fault_proxy(server.uri) as proxy:
        server.catalog(WH).create_namespace(("ns",))
        yield proxy, server


@pytest.fixture(scope="module")
def unity_behind_proxy() -> Iterator[FaultProxy]:
    with unity_catalog() as server, fault_proxy(server.uri) as proxy:
        server.add_catalog(CATALOG)
        server.add_schema(CATALOG, "s")
        yield proxy


@pytest.fixture(scope="module")
def glue_behind_proxy() -> Iterator[FaultProxy]:
    with moto_glue() as endpoint, fault_proxy(endpoint) as proxy:
        yield proxy


@pytest.fixture(scope="module")
def metastore_socket() -> Iterator[socket.socket]:
    """A listening socket where a Hive metastore would be: any connection shows."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.setblocking(False)
    yield listener
    listener.close()


def no_connection(listener: socket.socket) -> None:
    with pytest.raises(BlockingIOError):
        listener.accept()


def no_request(proxy: FaultProxy) -> Callable[[], None]:
    def check() -> None:
        assert proxy.requests == [], "a request reached the server"

    return check


def unchanged(root: Path, proxy: FaultProxy | None = None) -> Callable[[], None]:
    before = disk_state(root)

    def check() -> None:
        assert disk_state(root) == before, "the storage root changed"
        if proxy is not None:
            no_request(proxy)()

    return check


BACKENDS = ["dir", "rest", "rest-pylance", "iceberg", "unity", "glue", "hive"]


@pytest.fixture(params=BACKENDS)
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Target:
    name = request.param
    storage = {"storage.aws_secret_access_key": SECRET_CANARY}
    if name == "dir":
        root = tmp_path / "dir"
        with lna.connect_sync("dir", {"root": str(root)}) as ns:
            ns.create_namespace({"id": ["ns"]})
        return Target("dir", {"root": str(root), **storage}, ["ns"], [], unchanged(root))
    if name in ("rest", "rest-pylance"):
        fixture = "adapter_behind_proxy" if name == "rest" else "pylance_behind_proxy"
        proxy, root = request.getfixturevalue(fixture)
        properties = {"uri": proxy.uri, "max_retries": "0", "auth_token": TOKEN}
        with (
            lna.connect_sync("rest", properties) as ns,
            contextlib.suppress(errors.NamespaceAlreadyExistsError),
        ):
            ns.create_namespace({"id": ["ns"]})
        proxy.clear()
        return Target("rest", properties, ["ns"], [], unchanged(root, proxy))
    if name == "iceberg":
        proxy, _ = request.getfixturevalue("iceberg_behind_proxy")
        proxy.clear()
        properties = {"endpoint": proxy.uri, "root": str(tmp_path / "lance"), **storage}
        return Target("iceberg", properties, [WH, "ns"], [WH], no_request(proxy))
    if name == "unity":
        proxy = request.getfixturevalue("unity_behind_proxy")
        proxy.clear()
        properties = {"endpoint": proxy.uri, "root": str(tmp_path / "lance"), "api_key": TOKEN}
        return Target("unity", properties, [CATALOG, "s"], [CATALOG], no_request(proxy))
    if name == "glue":
        proxy = request.getfixturevalue("glue_behind_proxy")
        proxy.clear()
        properties = {
            "endpoint": proxy.uri,
            "region": REGION,
            "root": str(tmp_path / "lance"),
            "child_catalogs": "false",
            "access_key_id": "testing",
            "secret_access_key": SECRET_CANARY,
        }
        return Target("glue", properties, ["db"], [], no_request(proxy))
    listener = request.getfixturevalue("metastore_socket")
    port = listener.getsockname()[1]
    properties = {"uri": f"thrift://127.0.0.1:{port}", "root": str(tmp_path), **storage}
    return Target("hive", properties, ["db"], [], lambda: no_connection(listener))


# -- hostile names -----------------------------------------------------------------------------

NASTY_NAMES = [
    pytest.param("..", id="dot-dot"),
    pytest.param(".", id="dot"),
    pytest.param("../x", id="parent-path"),
    pytest.param("a/b", id="separator"),
    pytest.param("/abs", id="absolute"),
    pytest.param("C:\\x", id="windows-drive"),
    pytest.param("C:", id="bare-drive"),
    pytest.param("\\\\server\\share", id="unc-path"),
    pytest.param("%2e%2e", id="percent-encoded-dot-dot"),
    pytest.param("%2F", id="percent-encoded-slash"),
    pytest.param("a\x00b", id="nul"),
    pytest.param("a\nb", id="newline"),
    pytest.param("\u202e", id="bidi-override"),
    pytest.param("", id="empty"),
    pytest.param("x" * 300, id="longer-than-a-file-name"),
]


async def refused(call: Callable[[], Any]) -> None:
    with pytest.raises(errors.InvalidInputError) as caught:
        await call()
    assert caught.value.code == 13
    assert type(caught.value) is errors.InvalidInputError


@pytest.mark.parametrize("name", NASTY_NAMES)
async def test_hostile_names_are_refused_before_anything_is_touched(
    target: Target, name: str
) -> None:
    table_in = [*target.namespace, name]
    async with lna.connect(target.impl, target.properties) as ns:
        await refused(lambda: ns.create_namespace({"id": [*target.namespace_parent, name]}))
        await refused(lambda: ns.drop_namespace({"id": [*target.namespace_parent, name]}))
        await refused(lambda: ns.list_tables({"id": [*target.namespace_parent, name]}))
        await refused(lambda: ns.declare_table({"id": table_in}))
        await refused(lambda: ns.describe_table({"id": table_in}))
        await refused(lambda: ns.drop_table({"id": table_in}))
        await refused(lambda: ns.declare_table({"id": [*target.namespace_parent, name, "t"]}))
        rows = pa.table({"x": [1]})
        await refused(lambda: ns.create_table({"id": table_in}, rows))
        await refused(lambda: ns.insert_into_table({"id": table_in}, rows))
        await refused(lambda: ns.count_table_rows({"id": table_in}))
        if "rename_table" in ns.list_operations():
            await refused(
                lambda: ns.rename_table({"id": [*target.namespace, "t"], "new_table_name": name})
            )
    target.untouched()


async def test_a_catalog_table_named_dot_dot_can_no_longer_delete_the_storage_root(
    glue_behind_proxy: FaultProxy, tmp_path: Path
) -> None:
    """Regression: ``[db, '..']`` had the default location ``<root>/db/..`` = the root,
    and DropTable deleted the data of every table below it."""
    import lance
    import pyarrow as pa

    root = tmp_path / "lance"
    properties = {
        "endpoint": glue_behind_proxy.uri,
        "region": REGION,
        "root": str(root),
        "child_catalogs": "false",
    }
    async with lna.connect("glue", properties) as ns:
        await ns.create_namespace({"id": ["keep"]})
        declared = await ns.declare_table({"id": ["keep", "precious"]})
        lance.write_dataset(pa.table({"x": [1, 2]}), declared.location)
        before = disk_state(root)
        await refused(lambda: ns.declare_table({"id": ["keep", ".."]}))
        await refused(lambda: ns.drop_table({"id": ["keep", ".."]}))
        assert disk_state(root) == before
        await ns.drop_namespace({"id": ["keep"], "behavior": "Cascade"})


# -- secrets: reprs, configuration errors, error messages, logs ----------------------------------

SECRET_PROPERTIES: dict[str, dict[str, str]] = {
    "dir": {
        "root": "/tmp/unused-root",
        "storage.aws_secret_access_key": SECRET_CANARY,
        "credential_vendor.api_key": SECRET_CANARY,
    },
    "rest": {
        "uri": "http://127.0.0.1:9",
        "auth_token": TOKEN,
        "api_key": TOKEN,
        "credential": f"client:{SECRET_CANARY}",
        "oauth2_server_uri": "http://127.0.0.1:9/token",
        "header.Authorization": f"Bearer {TOKEN}",
        "header.X-Password": SECRET_CANARY,
    },
    "iceberg": {
        "endpoint": "http://127.0.0.1:9",
        "credential": f"client:{SECRET_CANARY}",
        "auth_token": TOKEN,
        "storage.aws_secret_access_key": SECRET_CANARY,
    },
    "unity": {
        "endpoint": "http://127.0.0.1:9",
        "auth_token": TOKEN,
        "storage.azure_storage_account_key": SECRET_CANARY,
    },
    "glue": {
        "region": REGION,
        "access_key_id": "AKIDEXAMPLE",
        "secret_access_key": SECRET_CANARY,
        "session_token": SECRET_CANARY,
        "assume_role_external_id": SECRET_CANARY,
        "storage.aws_session_token": SECRET_CANARY,
    },
    "hive": {"uri": "thrift://127.0.0.1:9", "storage.gcs_service_account_key": SECRET_CANARY},
}


@pytest.mark.parametrize("impl", sorted(SECRET_PROPERTIES))
async def test_secrets_never_show_in_reprs_or_configuration_errors(impl: str) -> None:
    properties = SECRET_PROPERTIES[impl]
    namespace = lna.connect(impl, properties)
    config = namespace.config
    shown = [
        repr(namespace),
        str(namespace),
        namespace.namespace_id(),
        repr(config),
        str(config),
        str(config.redacted_properties()),
        repr(getattr(namespace, "transport", None)),
        repr(getattr(getattr(namespace, "transport", None), "oauth", None)),
    ]
    # configuration errors name keys, never secret values; a password in a URL is redacted
    url_key = {"rest": "uri", "iceberg": "endpoint", "unity": "endpoint", "hive": "uri"}
    broken_cases: list[dict[str, str]] = [
        {**properties, "unknown_key": SECRET_CANARY},
        {**properties, "max_retries": "many"} if impl != "dir" else {"root": ""},
    ]
    if impl in url_key:
        broken_cases.append({**properties, url_key[impl]: f"ftp://user:{SECRET_CANARY}@host"})
    for broken in broken_cases:
        with pytest.raises(errors.InvalidInputError) as caught:
            lna.connect(impl, broken)
        shown += [str(caught.value), repr(caught.value), str(caught.value.to_error_response())]
    await namespace.aclose()
    for text in shown:
        assert SECRET_CANARY not in text, text


def test_malformed_secrets_are_refused_without_echoing_them() -> None:
    for properties in (
        {"uri": "http://127.0.0.1:9", "credential": f"no-colon-{SECRET_CANARY}"},
        {"uri": f"http://user:{SECRET_CANARY}@127.0.0.1:9", "credential": "x"},
        {"uri": "http://127.0.0.1:9", "auth_token": TOKEN, "retry_backoff_ms": "0"},
    ):
        with pytest.raises(errors.InvalidInputError) as caught:
            lna.connect("rest", properties)
        assert SECRET_CANARY not in str(caught.value)


async def test_a_server_echoing_credentials_in_its_error_gets_them_redacted(
    adapter_behind_proxy: tuple[FaultProxy, Path],
) -> None:
    """A buggy or hostile server quoting our headers back: the error still shows none."""
    proxy, _ = adapter_behind_proxy
    echoed = (
        f'{{"code": 16, "error": "rejected Authorization: Bearer {TOKEN} '
        f'(api_key={TOKEN}, password: {SECRET_CANARY})"}}'
    ).encode()
    proxy.fail_next(1, 401, body=echoed, headers={"content-type": "application/json"})
    properties = {"uri": proxy.uri, "auth_token": TOKEN, "max_retries": "0"}
    async with lna.connect("rest", properties) as ns:
        with pytest.raises(errors.UnauthenticatedError) as caught:
            await ns.list_namespaces()
    assert caught.value.code == 16
    for text in (str(caught.value), repr(caught.value), str(caught.value.to_error_response())):
        assert SECRET_CANARY not in text, text
    proxy.clear()


async def test_a_rejected_oauth2_client_secret_never_shows(tmp_path: Path) -> None:
    secret = f"right-{SECRET_CANARY}"
    with iceberg_catalog(tmp_path / "iceberg", require_auth=True, client_secret=secret) as server:
        properties = {
            "endpoint": server.uri,
            "credential": f"cid:wrong-{SECRET_CANARY}",
            "root": str(tmp_path),
        }
        async with lna.connect("iceberg", properties) as ns:
            with pytest.raises(errors.UnauthenticatedError) as caught:
                await ns.list_namespaces({"id": [WH]})
            text = f"{caught.value} {caught.value!r} {ns!r} {ns.config!r}"
        assert SECRET_CANARY not in text
        assert server.token_requests == 1


def test_the_log_scanner_sees_every_logger_at_debug() -> None:
    """The session-wide check of conftest is real: a leaked canary is caught."""
    seen_before = SECRET_SCANNER.records
    leaks_before = len(SECRET_SCANNER.leaks)
    logging.getLogger("some.library.deep.inside").debug("token=%s", SECRET_CANARY)
    assert SECRET_SCANNER.records == seen_before + 1
    assert len(SECRET_SCANNER.leaks) == leaks_before + 1
    del SECRET_SCANNER.leaks[leaks_before:]  # planted on purpose: not a finding


async def test_secrets_used_end_to_end_never_reach_a_log_record(
    tmp_path: Path, module_dir: Path
) -> None:
    """Bearer tokens, OAuth2 client secrets and API keys travel through real servers
    with every logger at DEBUG; the scanner sees the records and no secret in them."""
    leaks_before = len(SECRET_SCANNER.leaks)
    records_before = SECRET_SCANNER.records
    root = tmp_path / "served"
    server = AdapterServer(lambda: lna.connect("dir", {"root": str(root)}), auth_token=TOKEN)
    server.start()
    try:
        async with lna.connect(
            "rest", {"uri": server.uri, "auth_token": TOKEN, "api_key": TOKEN}
        ) as ns:
            await ns.create_namespace({"id": ["a"]})
            await ns.declare_table({"id": ["a", "t"]})
        async with lna.connect("rest", {"uri": server.uri, "max_retries": "0"}) as anonymous:
            with pytest.raises(errors.UnauthenticatedError):
                await anonymous.list_namespaces()
    finally:
        server.stop()
    secret = f"client-{SECRET_CANARY}"
    with iceberg_catalog(tmp_path / "iceberg", require_auth=True, client_secret=secret) as ice:
        properties = {"endpoint": ice.uri, "credential": f"cid:{secret}", "root": str(tmp_path)}
        async with lna.connect("iceberg", properties) as ns:
            await ns.create_namespace({"id": [WH, "a"]})
            await ns.declare_table({"id": [WH, "a", "t"]})
    assert SECRET_SCANNER.records > records_before
    assert SECRET_SCANNER.leaks[leaks_before:] == []


# -- TLS verification ------------------------------------------------------------------------------


@dataclass
class Pki:
    ca: Path
    cert: Path
    key: Path


@pytest.fixture(scope="module")
def pki(module_dir: Path) -> Pki:
    """A throwaway CA and a certificate for 127.0.0.1/localhost signed by it."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "lna test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    folder = module_dir / "pki"
    folder.mkdir()
    paths = Pki(folder / "ca.pem", folder / "server.pem", folder / "server.key")
    paths.ca.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths.key.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    os.chmod(paths.key, 0o600)
    return paths


@dataclass
class TlsTarget:
    impl: str
    properties: dict[str, str]
    call: Callable[[AsyncLanceNamespace], Any]
    applied: Callable[[], int]


@pytest.fixture(params=["rest", "iceberg", "unity"])
def tls_target(request: pytest.FixtureRequest, pki: Pki, tmp_path: Path) -> Iterator[TlsTarget]:
    """Each HTTP backend's real server, served over https with the test CA's certificate."""
    tls = (str(pki.cert), str(pki.key))
    catalog: IcebergCatalogServer | None = None
    if request.param == "rest":
        root = tmp_path / "served"
        server = AdapterServer(lambda: lna.connect("dir", {"root": str(root)}), tls=tls)
        server.start()

        def applied() -> int:
            return len([p for p in disk_state(root) if p.startswith("__manifest")])

        target = TlsTarget(
            "rest",
            {"uri": server.uri},
            lambda ns: ns.create_namespace({"id": ["a"]}),
            applied,
        )
    elif request.param == "iceberg":
        catalog = iceberg = IcebergCatalogServer(tmp_path / "iceberg")
        server = AdapterServer(lambda: None, tls=tls, app=catalog.app)
        server.start()
        target = TlsTarget(
            "iceberg",
            {"endpoint": server.uri, "root": str(tmp_path)},
            lambda ns: ns.create_namespace({"id": [WH, "a"]}),
            lambda: len(iceberg.catalog(WH).list_namespaces()),
        )
    else:
        unity = UnityServer()
        unity.add_catalog(CATALOG)
        server = AdapterServer(lambda: None, tls=tls, app=unity.app)
        server.start()
        target = TlsTarget(
            "unity",
            {"endpoint": server.uri},
            lambda ns: ns.create_namespace({"id": [CATALOG, "a"]}),
            lambda: len(unity.schemas),
        )
    try:
        yield target
    finally:
        server.stop()
        if catalog is not None:
            catalog.stop()  # disposes its sqlite engines


@pytest.mark.parametrize("http_client", ["httpx", "aiohttp", "lean"])
async def test_tls_verification_is_on_by_default(
    tls_target: TlsTarget, pki: Pki, http_client: str
) -> None:
    base = {**tls_target.properties, "http_client": http_client, "retry_backoff_ms": "1"}
    async with lna.connect(tls_target.impl, {**base, "max_retries": "1"}) as ns:
        with pytest.raises(errors.LanceNamespaceError) as caught:
            await tls_target.call(ns)
    assert type(caught.value) is errors.ServiceUnavailableError
    assert (
        "CERTIFICATE_VERIFY_FAILED" in str(caught.value)
        or "certificate" in str(caught.value).lower()
    )
    assert tls_target.applied() == 0, "nothing reached the server"
    trusted = {**base, "tls.ssl_ca_cert": str(pki.ca)}
    async with lna.connect(tls_target.impl, trusted) as ns:
        await tls_target.call(ns)
    assert tls_target.applied() > 0


async def test_tls_verification_is_off_only_when_asked(tls_target: TlsTarget) -> None:
    properties = {**tls_target.properties, "tls.verify": "false"}
    async with lna.connect(tls_target.impl, properties) as ns:
        await tls_target.call(ns)
    assert tls_target.applied() > 0


def test_a_missing_ca_file_is_a_configuration_error(tmp_path: Path) -> None:
    properties = {"uri": "https://127.0.0.1:9", "tls.ssl_ca_cert": str(tmp_path / "none.pem")}
    with lna.connect_sync("rest", properties) as ns, pytest.raises(errors.InvalidInputError):
        ns.list_namespaces()


# -- the adapter's bearer check ---------------------------------------------------------------


def raw_request(port: int, head: list[str]) -> tuple[int, dict[str, str], bytes]:
    """One HTTP/1.1 request written byte for byte (no client normalises the headers)."""
    body = b"{}"
    lines = [
        "POST /v1/namespace/intruder/create HTTP/1.1",
        f"Host: 127.0.0.1:{port}",
        "Content-Type: application/json",
        f"Content-Length: {len(body)}",
        "Connection: close",
        *head,
    ]
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    response = b"".join(chunks)
    header_block, _, content = response.partition(b"\r\n\r\n")
    status_line, *header_lines = header_block.decode("latin-1").split("\r\n")
    headers = {}
    for line in header_lines:
        key, _, value = line.partition(":")
        headers[key.strip().lower()] = value.strip()
    return int(status_line.split()[1]), headers, content


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


REFUSED_HEADERS = [
    pytest.param([], id="missing"),
    pytest.param(["Authorization:"], id="empty"),
    pytest.param(["Authorization: Bearer"], id="scheme-without-token"),
    pytest.param(["Authorization: Bearer "], id="scheme-and-space"),
    pytest.param(["Authorization: Bearer wrong"], id="wrong-token"),
    pytest.param(["Authorization: bearer wrong"], id="lower-case-scheme-wrong-token"),
    pytest.param([f"Authorization: Bearer {TOKEN}x"], id="token-with-suffix"),
    pytest.param([f"Authorization: Bearer {TOKEN[:-1]}"], id="token-prefix"),
    pytest.param([f"Authorization: Bearer {TOKEN.upper()}"], id="token-other-case"),
    pytest.param([f"Authorization: Bearer  {TOKEN}"], id="two-spaces"),
    pytest.param([f"Authorization: Bearer\t{TOKEN}"], id="tab"),
    pytest.param([f"Authorization: Bearer {TOKEN} extra"], id="trailing-word"),
    pytest.param([f"Authorization: Bearer {TOKEN}   "], id="trailing-spaces"),
    pytest.param([f"Authorization: Bearer {TOKEN},Bearer x"], id="comma-list"),
    pytest.param([f"Authorization: {TOKEN}"], id="token-without-scheme"),
    pytest.param([f"Authorization: Token {TOKEN}"], id="other-scheme"),
    pytest.param([f"Authorization: {basic('user', TOKEN)}"], id="basic-with-the-token"),
    pytest.param([f"Authorization: Basic {TOKEN}"], id="basic-raw-token"),
    pytest.param([f"X-Authorization: Bearer {TOKEN}"], id="wrong-header-name"),
    pytest.param([f"Authorization: Bearer {TOKEN}", "Authorization: Bearer x"], id="two-right-1st"),
    pytest.param(["Authorization: Bearer x", f"Authorization: Bearer {TOKEN}"], id="two-right-2nd"),
]


@pytest.fixture(scope="module")
def guarded_adapter(module_dir: Path) -> Iterator[tuple[AdapterServer, Path]]:
    root = module_dir / "guarded"
    server = AdapterServer(lambda: lna.connect("dir", {"root": str(root)}), auth_token=TOKEN)
    server.start()
    try:
        yield server, root
    finally:
        server.stop()


@pytest.mark.parametrize("head", REFUSED_HEADERS)
def test_the_bearer_check_cannot_be_bypassed(
    guarded_adapter: tuple[AdapterServer, Path], head: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    server, root = guarded_adapter
    compared: list[int] = []
    real_compare = hmac.compare_digest

    def spy(a: Any, b: Any) -> bool:
        compared.append(1)
        return real_compare(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    before = disk_state(root) if root.exists() else {}
    status, headers, content = raw_request(server.port, head)
    assert status == 401, content
    assert headers["www-authenticate"] == "Bearer"
    assert b'"code":16' in content.replace(b" ", b"")
    assert SECRET_CANARY.encode() not in content
    has_header = any(line.lower().startswith("authorization:") for line in head)
    assert len(compared) == (1 if has_header else 0), "a present header is compared in full"
    assert (disk_state(root) if root.exists() else {}) == before, "nothing was applied"


@pytest.mark.parametrize(
    "value",
    [
        pytest.param(f"Bearer {TOKEN}", id="exact"),
        pytest.param(f"bearer {TOKEN}", id="scheme-is-case-insensitive-rfc-9110-11.1"),
    ],
)
def test_the_right_token_is_accepted(
    guarded_adapter: tuple[AdapterServer, Path], value: str
) -> None:
    server, _ = guarded_adapter
    status, _, content = raw_request(server.port, [f"Authorization: {value}"])
    assert status in (200, 409), content  # created, or created by an earlier case


# -- the adapter never hands out the server's own storage credentials ---------------------------

CANARY_STORAGE = {
    "storage.aws_access_key_id": f"AKIA-{SECRET_CANARY}",
    "storage.aws_secret_access_key": f"secret-{SECRET_CANARY}",
    "storage.aws_session_token": f"session-{SECRET_CANARY}",
}


def every_operation(client: httpx.Client, location: str) -> list[httpx.Response]:
    """Each of the 16 operations, successful and failing, on a catalog with one table."""
    calls: list[tuple[str, str, dict[str, Any] | None]] = [
        ("POST", "/v1/namespace/n/create", {}),
        ("GET", "/v1/namespace/$/list", None),
        ("POST", "/v1/namespace/n/describe", {}),
        ("POST", "/v1/namespace/n/exists", {}),
        ("POST", "/v1/namespace/missing/describe", {}),
        ("POST", "/v1/table/n$d/declare", {}),
        ("POST", "/v1/table/n$t/register", {"location": location}),
        ("GET", "/v1/namespace/n/table/list", None),
        ("GET", "/v1/table", None),
        ("POST", "/v1/table/n$t/describe", {}),
        ("POST", "/v1/table/n$t/describe?load_detailed_metadata=true&with_table_uri=true", {}),
        ("POST", "/v1/table/n$d/describe?check_declared=true", {}),
        ("POST", "/v1/table/n$missing/describe", {}),
        ("POST", "/v1/table/n$t/exists", {}),
        ("POST", "/v1/table/n$t/version/list", {}),
        ("POST", "/v1/table/n$t/restore", {"version": 1}),
        ("POST", "/v1/table/n$t/rename", {"new_table_name": "t2"}),
        ("POST", "/v1/table/n$t2/deregister", {}),
        ("POST", "/v1/table/n$d/drop", {}),
        ("POST", "/v1/namespace/n/drop", {}),
    ]
    return [client.request(method, path, json=body) for method, path, body in calls]


def test_storage_credentials_never_leave_the_server(tmp_path: Path) -> None:
    """``lance-ns serve`` over a dir backend holding canary storage.* credentials: no answer
    shows them unless the operator opted in (--expose-storage-options), and then
    DescribeTable does (so this check can fail)."""
    import lance
    import pyarrow as pa

    for expose in (False, True):
        root = tmp_path / f"root-{expose}"
        table = root / "registered" / "t.lance"
        lance.write_dataset(pa.table({"x": [1, 2]}), str(table))
        options = ["--log-level", "error"] + (["--expose-storage-options"] if expose else [])
        with (
            lance_ns_serve({"root": str(root), **CANARY_STORAGE}, *options) as served,
            httpx.Client(base_url=served.uri, timeout=30) as client,
        ):
            answers = every_operation(client, f"file://{table}")
        assert {a.status_code for a in answers} <= {200, 404, 409}, [a.text for a in answers]
        shown = [
            (a.request.url.path, a.status_code)
            for a in answers
            if SECRET_CANARY in a.text or SECRET_CANARY in str(a.headers)
        ]
        if expose:
            assert ("/v1/table/n$t/describe", 200) in shown
        else:
            assert shown == []
