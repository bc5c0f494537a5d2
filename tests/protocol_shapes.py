"""The field shapes of two protocol descriptions, side by side.

``spec_shapes`` reads our ``spec/rest.yaml``; ``reference_shapes`` reads the models of
the installed ``lance_namespace_urllib3_client`` (the generated client of the
lance-namespace release pylance pins). Both answer the same structure, so a test can
compare them and name every difference: ``{model: {json_field: (shape, required)}}``,
where a shape is ``"string"``, ``"integer"``, ``"number"``, ``"boolean"``, ``"any"``,
``("array", shape)``, ``("map", shape)`` or ``("model", name)``. A nested object that
our spec writes inline and the reference names (``QueryTableRequestColumns``) is
listed under the reference's name, so both sides compare it field by field.
"""

from __future__ import annotations

import datetime
import functools
import importlib
import inspect
import pkgutil
import re
import types
import typing
from pathlib import Path
from typing import Any

import yaml

Shape = Any
Fields = dict[str, tuple[Shape, bool]]

SPEC = Path(__file__).resolve().parent.parent / "spec" / "rest.yaml"


def load_yaml(path: Path) -> Any:
    """A YAML document, with libyaml's parser when there is one (the spec is 6,000 lines)."""
    return yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


# ---- the reference: pydantic models of lance_namespace_urllib3_client ----------------


def _reference_shape(annotation: Any, owner: str, field: str) -> Shape:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return _reference_shape(args[0], owner, field)
    if origin in (typing.Union, types.UnionType):
        members = [a for a in args if a is not type(None)]
        shapes = {_reference_shape(a, owner, field) for a in members}
        if shapes == {"number", "integer"}:
            return "number"
        if len(shapes) == 1:
            return shapes.pop()
        raise ValueError(f"{owner}.{field}: union {annotation!r}")
    if origin in (list, typing.List):  # noqa: UP006
        return ("array", _reference_shape(args[0], owner, field))
    if origin in (dict, typing.Dict):  # noqa: UP006
        return ("map", _reference_shape(args[1], owner, field))
    if origin in (tuple, typing.Tuple):  # noqa: UP006
        return "string"  # the generator's (file name, bytes) form of a binary string
    if annotation is Any:
        return "any"
    if inspect.isclass(annotation):
        from pydantic import BaseModel

        if issubclass(annotation, BaseModel):
            return ("model", annotation.__name__)
        if issubclass(annotation, bool):
            return "boolean"
        if issubclass(annotation, int):
            return "integer"
        if issubclass(annotation, float):
            return "number"
        if issubclass(annotation, str):
            return "string"
        if issubclass(annotation, (bytes, bytearray, datetime.datetime)):
            return "string"  # base64 bytes and date-times travel as JSON strings
    raise ValueError(f"{owner}.{field}: unknown annotation {annotation!r}")


@functools.cache
def reference_shapes() -> dict[str, Fields]:
    """Every model of the installed lance_namespace_urllib3_client, field by field."""
    from pydantic import BaseModel

    package = importlib.import_module("lance_namespace_urllib3_client.models")
    shapes: dict[str, Fields] = {}
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for name, cls in vars(module).items():
            if (
                inspect.isclass(cls)
                and issubclass(cls, BaseModel)
                and cls.__module__ == module.__name__
            ):
                shapes[name] = {
                    (info_.alias or field): (
                        _reference_shape(info_.annotation, name, field),
                        info_.is_required(),
                    )
                    for field, info_ in cls.model_fields.items()
                }
    return shapes


# ---- ours: spec/rest.yaml ------------------------------------------------------------


class _SpecReader:
    def __init__(self, schemas: dict[str, Any]) -> None:
        self.schemas = schemas
        self.models: dict[str, Fields] = {}

    def shape(self, schema: dict[str, Any], where: str) -> Shape:
        if "$ref" in schema:
            target = schema["$ref"].rsplit("/", 1)[-1]
            resolved = self.schemas[target]
            if self._is_object(resolved) and "properties" in resolved:
                return ("model", target)
            return self.shape(resolved, where)
        for combinator in ("anyOf", "oneOf"):
            if combinator in schema:
                members = [m for m in schema[combinator] if m.get("type") != "null"]
                shapes = {self.shape(m, where) for m in members}
                if len(shapes) != 1:
                    raise ValueError(f"{where}: {combinator} of several shapes")
                return shapes.pop()
        kinds = schema.get("type")
        kind_list = [kinds] if isinstance(kinds, str) else list(kinds or [])
        kind_list = [k for k in kind_list if k != "null"]
        if not kind_list:
            return "any"
        kind = kind_list[0]
        if kind == "array":
            return ("array", self.shape(schema.get("items", {}), where + "[]"))
        if kind == "object":
            if "properties" in schema:
                # an inline object: named as the reference names it (Owner + Field)
                return ("model", where)
            extra = schema.get("additionalProperties", True)
            if extra is True or extra == {}:
                return ("map", "any")
            return ("map", self.shape(extra, where + "{}"))
        return kind

    @staticmethod
    def _is_object(schema: dict[str, Any]) -> bool:
        kinds = schema.get("type")
        return kinds == "object" or (isinstance(kinds, list) and "object" in kinds)

    def model(self, name: str, schema: dict[str, Any]) -> None:
        required = set(schema.get("required", []))
        fields: Fields = {}
        for field, sub in schema.get("properties", {}).items():
            inline_name = name + "".join(part.capitalize() for part in field.split("_"))
            shape = self.shape(sub, inline_name)
            if shape == ("model", inline_name):
                self.model(inline_name, sub)
            fields[field] = (shape, field in required)
        self.models[name] = fields


def spec_shapes(path: Path = SPEC) -> dict[str, Fields]:
    """Every object schema of our spec (and its inline objects), field by field."""
    schemas = load_yaml(path)["components"]["schemas"]
    reader = _SpecReader(schemas)
    for name, schema in schemas.items():
        if reader._is_object(schema) and "properties" in schema:
            reader.model(name, schema)
    return reader.models


def drift(ours: dict[str, Fields], reference: dict[str, Fields]) -> list[str]:
    """One line per difference between the two descriptions (empty when they agree).

    Every model of the reference must be in ours with the same fields; a nested model
    counts as the same when its fields are (our spec may write it inline, under another
    name, where the reference names it once and reuses it)."""
    lines: list[str] = []
    for model in sorted(reference):
        if model not in ours:
            lines.append(f"{model}: missing from spec/rest.yaml")
            continue
        lines.extend(_field_drift(model, ours[model], reference[model], ours, reference))
    return lines


def _field_drift(
    where: str,
    mine: Fields,
    theirs: Fields,
    ours: dict[str, Fields],
    reference: dict[str, Fields],
) -> list[str]:
    lines = []
    for field in sorted(set(theirs) | set(mine)):
        if field not in mine:
            lines.append(f"{where}.{field}: missing from spec/rest.yaml ({_say(theirs[field])})")
        elif field not in theirs:
            lines.append(f"{where}.{field}: in spec/rest.yaml but not in the reference")
        elif mine[field][1] != theirs[field][1] or not _same(
            mine[field][0], theirs[field][0], ours, reference
        ):
            lines.append(
                f"{where}.{field}: reference {_say(theirs[field])}, "
                f"spec/rest.yaml {_say(mine[field])}"
            )
    return lines


def _same(
    mine: Shape, theirs: Shape, ours: dict[str, Fields], reference: dict[str, Fields]
) -> bool:
    if isinstance(mine, str) or isinstance(theirs, str):
        return bool(mine == theirs)
    if mine[0] != theirs[0]:
        return False
    if mine[0] != "model":
        return _same(mine[1], theirs[1], ours, reference)
    if mine[1] == theirs[1]:
        return True  # the same name: compared on its own, once
    if mine[1] not in ours or theirs[1] not in reference:
        return False
    return not _field_drift("", ours[mine[1]], reference[theirs[1]], ours, reference)


# ---- operation parameters (path and query) -------------------------------------------

Params = dict[str, tuple[Shape, bool]]


def spec_parameters(path: Path = SPEC) -> dict[str, Params]:
    """snake_case operation -> {path or query parameter: (shape, required)} of our spec."""
    document = load_yaml(path)
    shared = document["components"]["parameters"]
    reader = _SpecReader(document["components"]["schemas"])
    operations: dict[str, Params] = {}
    for item in document["paths"].values():
        for method, operation in item.items():
            if method == "parameters" or not isinstance(operation, dict):
                continue
            params: Params = {}
            for param in [*item.get("parameters", []), *operation.get("parameters", [])]:
                if "$ref" in param:
                    param = shared[param["$ref"].rsplit("/", 1)[-1]]
                shape = reader.shape(param.get("schema", {}), param["name"])
                params[param["name"]] = (shape, bool(param.get("required", False)))
            operations[_snake(operation["operationId"])] = params
    return operations


@functools.cache
def reference_parameters() -> dict[str, Params]:
    """snake_case operation -> {parameter: (shape, required)} of the reference's API
    classes (its request body, JSON or Arrow, left out: the models carry its fields)."""
    package = importlib.import_module("lance_namespace_urllib3_client.api")
    operations: dict[str, Params] = {}
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for cls in vars(module).values():
            if not inspect.isclass(cls) or cls.__module__ != module.__name__:
                continue
            for name, function in vars(cls).items():
                if name.startswith("_") or name.endswith(("_with_http_info", "_preload_content")):
                    continue
                serialize = inspect.getsource(getattr(cls, f"_{name}_serialize"))
                body = re.findall(r"_body_params = (\w+)", serialize)
                params: Params = {}
                hints = typing.get_type_hints(function, include_extras=True)
                for param in inspect.signature(function).parameters.values():
                    if param.name in ("self", *body) or param.name.startswith("_"):
                        continue
                    shape = _reference_shape(hints[param.name], name, param.name)
                    params[param.name] = (shape, param.default is inspect.Parameter.empty)
                operations[name] = params
    return operations


def parameter_drift(ours: dict[str, Params], reference: dict[str, Params]) -> list[str]:
    """One line per difference of the operations' path and query parameters."""
    lines: list[str] = []
    for operation in sorted(reference):
        if operation not in ours:
            lines.append(f"operation {operation}: missing from spec/rest.yaml")
            continue
        mine, theirs = ours[operation], reference[operation]
        for name in sorted(set(mine) | set(theirs)):
            if name not in mine:
                lines.append(
                    f"{operation}?{name}: missing from spec/rest.yaml ({_say(theirs[name])})"
                )
            elif name not in theirs:
                lines.append(f"{operation}?{name}: in spec/rest.yaml but not in the reference")
            elif mine[name] != theirs[name]:
                lines.append(
                    f"{operation}?{name}: reference {_say(theirs[name])}, "
                    f"spec/rest.yaml {_say(mine[name])}"
                )
    for operation in sorted(set(ours) - set(reference)):
        lines.append(f"operation {operation}: in spec/rest.yaml but not in the reference")
    return lines


def _snake(operation_id: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", operation_id).lower()


def _say(entry: tuple[Shape, bool]) -> str:
    shape, required = entry
    return f"{_shape_text(shape)}, {'required' if required else 'optional'}"


def _shape_text(shape: Shape) -> str:
    if isinstance(shape, str):
        return shape
    kind, inner = shape
    if kind == "model":
        return f"model {inner}"
    return f"{kind} of {_shape_text(inner)}"
