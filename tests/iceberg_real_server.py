"""The Iceberg project's own REST catalog server, from Maven Central, for the suite.

``org.apache.iceberg.rest.RESTCatalogServer`` (``iceberg-open-api``'s test-fixtures jar,
see ``jvm/iceberg-rest/pom.xml``) is what Iceberg's REST compatibility kit runs: the Java
``RESTCatalogAdapter`` and ``CatalogHandlers`` in front of a ``JdbcCatalog``. Here the
JDBC catalog is a sqlite file and the warehouse a folder, both in the caller's temporary
directory. The server reads its properties from ``CATALOG_*`` environment variables
(``CATALOG_URI`` -> ``uri``, ``CATALOG_REST_PORT`` -> ``rest.port``,
``CATALOG_JDBC_SCHEMA__VERSION`` -> ``jdbc.schema-version``: ``__`` becomes ``-``,
``_`` becomes ``.``).

What it is, as a client sees it (each point met by the suite):

* one catalog, no ``prefix`` in ``/v1/config`` and no route under ``/v1/{prefix}/``, so
  the backend runs with ``warehouse_prefix=false`` and the warehouse level is a name only;
* ``namespace-separator`` is ``%2E`` (``.``): Jetty 12 refuses ``%1F`` in a path
  ("400 Suspicious Path Character", an HTML page) although the OpenAPI document says
  servers must accept it;
* a literal ``.`` in a path is part of one level (``a.b`` is the namespace ``["a.b"]``):
  the separator must be sent encoded, ``%2E``;
* it does not check parents: ``POST /v1/namespaces {"namespace": ["a", "missing", "x"]}``
  succeeds when ``a.missing`` does not exist, and so does creating a table in a
  namespace that does not exist (both then exist implicitly);
* every table it creates gets ``write.parquet.compression-codec=zstd``, and every error
  carries the Java ``stack``;
* it listens on every interface: ``RESTCatalogServer`` builds ``new Server(port)`` and
  takes no host, so the port is a free one and requests go to 127.0.0.1 only.

The server keeps no state outside its temporary directory (``java.io.tmpdir`` is set
there by :func:`jvm.java_server`), so a session can share one server: tests isolate
themselves with namespaces of unique names (:func:`unique_name`).
"""

from __future__ import annotations

import contextlib
import json
import urllib.request
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from jvm import JavaServer, classpath, free_port, java_server

if TYPE_CHECKING:
    from pyiceberg.catalog.rest import RestCatalog

__all__ = [
    "ICEBERG_VERSION",
    "ReferenceIcebergServer",
    "reference_iceberg",
    "unique_name",
]

PROJECT = "iceberg-rest"
MAIN_CLASS = "org.apache.iceberg.rest.RESTCatalogServer"


def _pom_version() -> str:
    pom = Path(__file__).resolve().parents[1] / "jvm" / PROJECT / "pom.xml"
    text = pom.read_text()
    start = text.index("<iceberg.version>") + len("<iceberg.version>")
    return text[start : text.index("</iceberg.version>")]


ICEBERG_VERSION = _pom_version()


def unique_name(stem: str) -> str:
    """A namespace name no other test of the session uses."""
    return f"{stem}_{uuid.uuid4().hex[:10]}"


@dataclass
class ReferenceIcebergServer:
    """A running reference server and how to reach it."""

    java: JavaServer
    warehouse: Path
    _clients: list[RestCatalog] = field(default_factory=list, repr=False)

    @property
    def uri(self) -> str:
        return self.java.url

    @property
    def startup_seconds(self) -> float:
        return self.java.startup_seconds

    def properties(self, **extra: str) -> dict[str, str]:
        """Backend properties for this server (no prefix: it serves one catalog)."""
        return {"endpoint": self.uri, "warehouse_prefix": "false", **extra}

    def rest_client(self) -> RestCatalog:
        """pyiceberg's RestCatalog on this server: the independent reader."""
        from pyiceberg.catalog.rest import RestCatalog

        client = RestCatalog("reference", uri=self.uri)
        self._clients.append(client)
        return client

    def close_clients(self) -> None:
        for client in self._clients:
            session = getattr(client, "_session", None)
            if session is not None:
                session.close()
        self._clients.clear()


def _serving(port: int) -> bool:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/config", timeout=2) as answer:
        body = json.loads(answer.read(1 << 20))
        return isinstance(body, dict) and "overrides" in body


@contextlib.contextmanager
def reference_iceberg(
    tmp: Path,
    properties: Mapping[str, str] | None = None,
    *,
    s3_endpoint: str | None = None,
) -> Iterator[ReferenceIcebergServer]:
    """Start the reference server in ``tmp``; raises ``jvm.JvmUnavailable`` without Java/Maven.

    ``properties`` are more catalog properties (``include-credentials``, ``s3.access-key-id``),
    passed as the server reads them: ``CATALOG_`` + the name with ``-`` as ``__`` and ``.``
    as ``_``, upper-cased. ``s3_endpoint``: an S3 server (moto's) where the server writes the
    metadata of tables at ``s3://`` locations, with moto's fake keys; other locations stay
    local.
    """
    jars = classpath(PROJECT).split(":")
    warehouse = tmp / "warehouse"
    warehouse.mkdir(parents=True, exist_ok=True)
    port = free_port()
    env = {
        # WAL and a long busy timeout: the kit drops dozens of tables at once, and sqlite's
        # default 3 s wait for its write lock ran out on a loaded machine (a 500 to DropTable)
        "CATALOG_URI": f"jdbc:sqlite:{tmp / 'catalog.db'}?journal_mode=WAL&busy_timeout=60000",
        "CATALOG_JDBC_SCHEMA__VERSION": "V1",
        "CATALOG_WAREHOUSE": str(warehouse),
        "CATALOG_REST_PORT": str(port),
    }
    if s3_endpoint is not None:  # ResolvingFileIO: S3FileIO for s3://, HadoopFileIO else
        env |= {
            "CATALOG_IO__IMPL": "org.apache.iceberg.io.ResolvingFileIO",
            "CATALOG_S3_ENDPOINT": s3_endpoint,
            "CATALOG_S3_PATH__STYLE__ACCESS": "true",
            "CATALOG_S3_ACCESS__KEY__ID": "testing",
            "CATALOG_S3_SECRET__ACCESS__KEY": "testing",
            "CATALOG_CLIENT_REGION": "us-east-1",
        }
    for name, value in (properties or {}).items():
        env["CATALOG_" + name.replace("-", "__").replace(".", "_").upper()] = value
    with java_server(
        "Iceberg REST catalog server",
        main_class=MAIN_CLASS,
        classpath_entries=jars,
        workdir=tmp / "server",
        port=port,
        ready=lambda: _serving(port),
        env=env,
    ) as java:
        server = ReferenceIcebergServer(java, warehouse)
        try:
            yield server
        finally:
            server.close_clients()
