"""What serving a backend to untrusted clients changes in its properties.

A library user is the only caller of their backend; a served backend acts for every
client of the server, with the server's credentials. Both ``serve()`` (given an impl
name) and ``lance-ns serve`` build the backend from :func:`served_properties`, so the
server's defaults live once, and worker processes that rebuild the backend from the
same properties inherit them.

* ``confine_storage=true`` and ``allowed_locations`` (``--allow-location``): no
  operation uses storage outside the root (``_storage.containment``);
* ``table_storage_options``: the storage options a table's catalog properties or a
  CreateTable request may set for the server's storage work, only the keys the operator
  allows (none by default): otherwise a request registering a table with
  ``aws_endpoint`` would have the server send its signed requests to that endpoint.

A key the operator set is kept as given; backends that store no tables (``rest``,
third-party ones) are built from the properties unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

__all__ = ["served_properties"]


def served_properties(
    impl: str,
    properties: Mapping[str, str],
    *,
    allowed_locations: Sequence[str] = (),
    allowed_storage_options: Iterable[str] = (),
) -> dict[str, str]:
    """``properties`` plus the server's defaults, for a backend that stores tables."""
    from .._core.registry import resolve_impl
    from .._storage.containment import confined_properties

    served = confined_properties(impl, properties, allowed_locations)
    if resolve_impl(impl).stores_tables:
        served.setdefault("table_storage_options", ",".join(allowed_storage_options))
    return served
