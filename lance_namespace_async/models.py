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
