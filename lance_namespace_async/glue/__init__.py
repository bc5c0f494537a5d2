"""Lance tables in the AWS Glue Data Catalog: ``impl="glue"``, extra ``glue``.

Mapping (the Lance Namespace's Glue implementation spec, seed 004).
The root namespace is the starting catalog: ``catalog_id``
or, unset, the caller's account catalog. Child catalogs (GetCatalogs /
GetCatalog / CreateCatalog / DeleteCatalog) are inner namespace levels and
databases are the leaf level; identifiers join with ``$``. So users can write
``["mydb", "mytable"]`` as pyiceberg's Glue users do, a one-level namespace is
a database of the starting catalog unless a child catalog of that name exists;
deeper identifiers walk child catalogs down to a database
(``catalog$database$table``). A child catalog has the id
``<root id>:<name>[/<name>...]``; it is created by CreateNamespace with the
property ``glue.namespace_type=catalog`` (otherwise a database is created).
ListNamespaces of a catalog returns its databases and its child catalogs,
merged and sorted. ``child_catalogs=false`` turns the catalog hierarchy off for
Glue-compatible metastores without the catalog APIs (databases only); unset, the
backend finds out itself: the first catalog call that such an endpoint answers as an
unknown operation (moto answers an HTML page with status 500) turns the hierarchy off
for this connection, logged once at INFO. ``child_catalogs=true`` never falls back.

A Lance table is an ``EXTERNAL_TABLE`` with ``Parameters.table_type=lance``
(case-insensitive when read) and ``StorageDescriptor.Location`` its root.
Access denied is code 16 as the seed says, throttling 21, an unavailable
service 17.

A package, so that each part of the seed reads on its own:

* ``_properties``: the configuration properties (:class:`GlueConfig`);
* ``_client``: authentication, the aioboto3 client with botocore's retries and
  timeouts, and finding out whether the endpoint has the catalog APIs;
* ``_errors``: Glue's error codes as typed errors;
* ``_mapping``: the object mapping (databases, ``EXTERNAL_TABLE`` records, their
  ``Parameters`` and ``StorageDescriptor`` columns from the Lance schema);
* ``_catalogs``: the namespace levels (starting catalog, child catalogs, databases);
* ``_namespace``: :class:`GlueNamespace`, the basic operations in the seed's order,
  and what deletion may delete.

Layer (ARCHITECTURE.md): a backend, independent of the others. May import the
transport, storage, the core, ``errors`` and ``models``; never another backend.
"""

from ._mapping import NAMESPACE_TYPE as NAMESPACE_TYPE
from ._namespace import GlueNamespace
from ._properties import GlueConfig

__all__ = ["GlueConfig", "GlueNamespace"]
