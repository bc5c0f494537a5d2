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
third-party ones) are built from the properties unchanged. A mounting namespace
(``mounts``) gets these defaults mount by mount, in each mount's own properties, so
its worker processes rebuild every mount confined.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from .. import errors

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
    from ..mounts import MountNamespace

    if issubclass(resolve_impl(impl), MountNamespace):
        return _served_mounts(properties, allowed_locations, allowed_storage_options)
    served = confined_properties(impl, properties, allowed_locations)
    if resolve_impl(impl).stores_tables:
        served.setdefault("table_storage_options", ",".join(allowed_storage_options))
    return served


def _served_mounts(
    properties: Mapping[str, str],
    allowed_locations: Sequence[str],
    allowed_storage_options: Iterable[str],
) -> dict[str, str]:
    """Each mount's properties served as its own backend's would be; ``--allow-location``
    applies to the mounts that store tables (and is refused when none does)."""
    from .._core.registry import resolve_impl
    from ..mounts import flatten_mounts, split_mounts

    mounts = split_mounts(properties)
    storing = {name for name, own in mounts.items() if resolve_impl(own["impl"]).stores_tables}
    if allowed_locations and not storing:
        raise errors.InvalidInputError(
            "--allow-location applies to mounts of backends that store tables "
            "(dir, iceberg, unity, glue, hive); none of these mounts does"
        )
    allowed_options = list(allowed_storage_options)
    served: dict[str, dict[str, str]] = {}
    for name, own in mounts.items():
        impl = own["impl"]
        rest = {key: value for key, value in own.items() if key != "impl"}
        served[name] = {
            "impl": impl,
            **served_properties(
                impl,
                rest,
                allowed_locations=allowed_locations if name in storing else (),
                allowed_storage_options=allowed_options,
            ),
        }
    return flatten_mounts(served)
