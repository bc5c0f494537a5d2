"""The public request and response types: the models generated from spec/rest.yaml.

They are attrs classes produced by openapi-python-client (never edited by hand);
build them with keyword arguments or ``Model.from_dict({...})`` and read them
with attributes or ``.to_dict()``. Optional fields a caller did not set are
``UNSET`` (distinct from ``None``, which the protocol uses for "null").
"""

from lance_namespace_rest_client.models import *  # noqa: F403
from lance_namespace_rest_client.models import __all__ as _generated_all
from lance_namespace_rest_client.types import UNSET, Unset

__all__ = [*_generated_all, "UNSET", "Unset"]


def _unset_repr(self: Unset) -> str:
    return "UNSET"


# The generated class has object's repr ("<...Unset object at 0x7f...>"), which is
# what printing a model with unset fields showed; generated/ is never edited by hand.
Unset.__repr__ = _unset_repr  # type: ignore[method-assign,assignment]


def _storage_options_repr(self: object) -> str:
    keys = sorted(getattr(self, "additional_properties", {}))
    return f"{type(self).__name__}(keys={keys!r})"


# Storage options carry credentials (the operator's, or ones a catalog vended): their
# generated attrs repr would print the values wherever a response is logged or shown.
for _name in _generated_all:
    if _name.endswith("StorageOptions"):
        globals()[_name].__repr__ = _storage_options_repr
