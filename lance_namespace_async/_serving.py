"""What serving a backend to untrusted clients changes in its properties.

A library user is the only caller of their backend; a served backend acts for every
client of the server, with the server's credentials. Both ``serve()`` (given an impl
name) and ``lance-ns serve`` build the backend from :func:`served_properties`, so the
server's defaults live once, and worker processes that rebuild the backend from the
same properties inherit them.

* ``table_storage_options``: the storage options a table's catalog properties or a
  CreateTable request may set for the server's storage work, only the keys the operator
  allows (none by default): otherwise a request registering a table with
  ``aws_endpoint`` would have the server send its signed requests to that endpoint.

A key the operator set is kept as given; backends without the key (``rest``,
third-party ones) are built from the properties unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

__all__ = ["served_properties"]


def served_properties(
    impl: str, properties: Mapping[str, str], *, allowed_storage_options: Iterable[str] = ()
) -> dict[str, str]:
    """``properties`` plus the server's defaults for the keys the backend declares."""
    from ._config import BackendConfig
    from ._registry import connect

    defaults = {"table_storage_options": ",".join(allowed_storage_options)}
    config = getattr(connect(impl, properties), "config", None)  # no I/O in constructors
    known = set(config.known_keys()) if isinstance(config, BackendConfig) else set()
    added = {k: v for k, v in defaults.items() if k in known and k not in properties}
    return {**properties, **added}
