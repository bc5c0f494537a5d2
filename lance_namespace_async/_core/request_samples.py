"""A request of each operation holding every field the spec requires, of its type.

For calls whose answer matters more than their effect: asking an implementation
whether it runs an operation at all (the directory backend probing pylance), and
the conformance kit checking that an operation a backend does not list answers
code 0, which a request missing a required field would not reach (InvalidInput).
"""

from __future__ import annotations

import enum
from typing import Any

import attrs

__all__ = ["sample_request"]


def sample_request(model_name: str, table_id: list[str] | None = None) -> dict[str, Any]:
    """A request body of the generated model ``model_name``: its required fields, and
    ``id`` set to ``table_id`` when given and the model has one."""
    from .. import models

    model = getattr(models, model_name)
    body = _required_fields(model)
    if table_id is not None and "id" in attrs.fields_dict(model):
        body["id"] = list(table_id)
    return body


def _required_fields(model: type) -> dict[str, Any]:
    return {
        field.name: _sample(str(field.type))
        for field in attrs.fields(model)
        if field.default is attrs.NOTHING
    }


def _sample(annotation: str) -> Any:
    from .. import models

    kind = next(p.strip() for p in annotation.split("|") if p.strip() not in ("Unset", "None"))
    if kind.startswith("list["):
        return [_sample(kind[5:-1])]
    if kind.startswith("dict["):
        return {}
    simple: dict[str, Any] = {"str": "x", "int": 1, "float": 1.0, "bool": False}
    if kind in simple:
        return simple[kind]
    model = getattr(models, kind, None)
    if isinstance(model, type) and issubclass(model, enum.Enum):
        return next(iter(model)).value
    if isinstance(model, type) and attrs.has(model):
        return _required_fields(model)
    return "x"
