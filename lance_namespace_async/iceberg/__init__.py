"""Lance tables in an Apache Iceberg REST Catalog: ``impl="iceberg"``.

Mapping (the Lance Namespace's Iceberg implementation spec, seed 000).
The root namespace is the catalog server; the first level
is a *warehouse*, whose configuration comes from ``GET /v1/config?warehouse=``
(cached, one request in flight per warehouse; ``defaults`` < our properties <
``overrides``, and the ``prefix`` found there, else the warehouse name, prefixes
every API path). Deeper levels are Iceberg namespaces, joined with the unit
separator ``\\x1F`` and percent-encoded exactly once, in paths and in the
``parent`` query parameter. A table ``[warehouse, ns1, ..., name]`` is an
Iceberg table whose ``location`` is the Lance table root, with a dummy schema
(one nullable string column ``dummy``) and ``properties.table_type=lance``.

Table management (Lance tables inside Iceberg, seed 003).
``managed_by`` is ``storage`` (default: the Lance
table directory decides the version) or ``impl`` (the catalog decides:
``current-snapshot-id`` is the Lance version, and every commit of a new Lance
version advances it through UpdateTable with an ``assert-ref-snapshot-id``
requirement, so a concurrent commit fails with ConcurrentModification, code 14).
The ``managed_by`` property names the default of
new tables. With ``iceberg_tooling=true`` the Iceberg metadata also carries the
Lance schema converted to Iceberg types (schema id 1, a new id when the columns
change), and a snapshot plus snapshot-log entry whose id is the Lance version, so
Iceberg tools such as pyiceberg show the real columns.

A package, so that each part of the seeds reads on its own:

* ``_properties``: the configuration properties (:class:`IcebergConfig`);
* ``_client``: the REST side: HTTP and OAuth2 through the shared transport, the
  ``/v1/config`` layering of each warehouse, its prefix and namespace separator,
  API paths, LoadTable and UpdateTable;
* ``_errors``: Iceberg's ErrorModel types as typed errors;
* ``_mapping``: the object mapping (the dummy schema, ``table_type`` and
  ``managed_by``, which properties are storage options; tooling mode's Arrow ->
  Iceberg schema and a Lance version as a snapshot);
* ``_managed``: ``managed_by=impl`` commits (CreateTableVersion through UpdateTable,
  staged manifests, the versions listed up to the catalog's);
* ``_namespace``: :class:`IcebergNamespace`, the basic operations in the seed's order,
  the rest, and what deletion may delete.

Layer (ARCHITECTURE.md): a backend, independent of the others. May import the
transport, storage, the core, ``errors`` and ``models``; never another backend.
"""

from ._mapping import DUMMY_SCHEMA as DUMMY_SCHEMA
from ._mapping import MANAGED_BY as MANAGED_BY
from ._mapping import UNIT_SEPARATOR as UNIT_SEPARATOR
from ._mapping import arrow_to_iceberg_schema
from ._namespace import IcebergNamespace
from ._properties import IcebergConfig

__all__ = ["IcebergConfig", "IcebergNamespace", "arrow_to_iceberg_schema"]
