#!/usr/bin/env python3
"""Regenerate ``generated/lance_namespace_rest_client`` from ``spec/rest.yaml``.

Why this script exists: the low-level REST client (attrs models plus sync/async
httpx endpoint functions) is produced by openapi-python-client, and a generated
tree is only trustworthy if anyone can reproduce it byte for byte. So this script

* refuses to run unless the pinned generator and formatter are installed
  (openapi-python-client 0.29.1, ruff 0.17.6), since other versions emit
  different code;
* runs the generator from this interpreter's environment with
  ``scripts/codegen-config.yaml`` (ruff post-hooks in isolated, cache-less mode,
  so no project or user configuration leaks in);
* generates into a temporary directory and only then swaps the result into
  ``generated/lance_namespace_rest_client``, so stale files disappear and a failed
  run leaves the old tree untouched (``generated/README.md`` lives outside the
  package directory and is never touched); the additions to the generator's
  output are a ``py.typed`` marker (the package ships in our wheel) and
  ``operations.json`` and ``field_names.json`` (below);
* writes ``operations.json`` into the package: the operation table (id, method name,
  route, parameters, models, body kinds, idempotency) derived from the same spec, which
  ``lance_namespace_async._core.operations`` loads, so no list of operations is typed by hand;
* writes ``field_names.json``: for each model whose Python field names differ from the
  JSON names (``manifestSize`` -> ``manifest_size``, ``type`` -> ``type_``), the map
  Python name -> JSON name, named by the generator's own naming functions, so the
  library never has to read the generated source to find a field's wire name;
* writes ``constraints.json``: for each model, the JSON Schema constraints of its fields
  (``minLength``, ``minimum``, ``minItems``, …, of the field, its items and its map values),
  which the generated models cannot carry, so requests are checked against them;
* writes ``lance_namespace_async/_core/operation_methods.pyi``, the typed signatures of
  the coroutines ``AsyncLanceNamespace`` and ``SyncLanceNamespace`` install from that
  table at run time (formatted by the pinned ruff with the project's line length);
* with ``--check``, regenerates into a temporary directory and compares the whole
  tree (file set and bytes) with the checked-in one, exiting 1 and listing the
  differing files when they differ - suitable for CI.

Usage::

    .venv/bin/python scripts/codegen.py          # regenerate
    .venv/bin/python scripts/codegen.py --check  # verify, do not write
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "spec" / "rest.yaml"
CONFIG = ROOT / "scripts" / "codegen-config.yaml"
#: our changes to two of the generator's templates (faster from_dict/to_dict; see their comments)
TEMPLATES = ROOT / "scripts" / "codegen_templates"
GENERATED = ROOT / "generated"
PACKAGE = "lance_namespace_rest_client"
TARGET = GENERATED / PACKAGE

#: typed signatures of the operations' coroutines (the runtime side installs them)
STUB = ROOT / "lance_namespace_async" / "_core" / "operation_methods.pyi"
PINS: dict[str, str] = {"openapi-python-client": "0.29.1", "ruff": "0.17.6"}
# Byproducts of importing or type-checking the package; never part of the output.
IGNORED_DIRS = frozenset({"__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache"})
PY_TYPED = "# Marker file for PEP 561\n"
OPERATIONS_FILE = "operations.json"
FIELD_NAMES_FILE = "field_names.json"
CONSTRAINTS_FILE = "constraints.json"
#: the JSON Schema keywords of spec/rest.yaml that type annotations cannot carry
CONSTRAINT_KEYWORDS = ("minLength", "maxLength", "minimum", "maximum", "minItems", "maxItems")
ARROW_MEDIA_TYPES = ("application/vnd.apache.arrow.stream", "application/vnd.apache.arrow.file")


class CodegenError(Exception):
    """A failure that should end the script with a message and exit status 2."""


def bin_dir() -> Path:
    """Directory holding this interpreter's console scripts (the venv's ``bin``).

    ``sys.executable`` is deliberately not resolved: in a venv it is a symlink to
    the base interpreter, and the scripts live next to the link.
    """
    return Path(sys.executable).parent


def check_pins() -> None:
    """Fail unless the installed generator and ruff match the pinned versions."""
    problems: list[str] = []
    for dist, wanted in PINS.items():
        try:
            found = metadata.version(dist)
        except metadata.PackageNotFoundError:
            found = "not installed"
        if found != wanted:
            problems.append(f"{dist}=={wanted} is required, found {found}")
    ruff = bin_dir() / "ruff"
    if not ruff.is_file():
        problems.append(f"ruff executable not found at {ruff}")
    else:
        out = subprocess.run([str(ruff), "--version"], capture_output=True, text=True, check=False)
        reported = out.stdout.strip()
        if reported != f"ruff {PINS['ruff']}":
            found = reported or out.stderr.strip()
            problems.append(f"{ruff} reports {found!r}, expected 'ruff {PINS['ruff']}'")
    if problems:
        pins = " ".join(f"{dist}=={version}" for dist, version in PINS.items())
        raise CodegenError(
            "codegen needs pinned tool versions:\n  "
            + "\n  ".join(problems)
            + f"\nInstall them for the interpreter running this script ({sys.executable}):"
            + f"\n  {sys.executable} -m pip install {pins}"
        )


def tool_env() -> dict[str, str]:
    """Environment for the generator: pinned ruff first on PATH, no ambient knobs."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("RUFF_")}
    env["PATH"] = os.pathsep.join([str(bin_dir()), env.get("PATH", os.defpath)])
    # The generator collects imports in sets; fix hashing so nothing depends on it.
    env["PYTHONHASHSEED"] = "0"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def generate(workdir: Path) -> Path:
    """Generate the package into ``workdir / PACKAGE`` and return that path."""
    out = workdir / PACKAGE
    cmd = [
        sys.executable,
        "-m",
        "openapi_python_client",
        "generate",
        "--path",
        str(SPEC),
        "--config",
        str(CONFIG),
        "--meta",
        "none",
        "--output-path",
        str(out),
        "--fail-on-warning",
        "--custom-template-path",
        str(TEMPLATES),
    ]
    result = subprocess.run(
        cmd, cwd=workdir, env=tool_env(), capture_output=True, text=True, check=False
    )
    if result.returncode != 0 or not out.is_dir():
        output = (result.stdout + result.stderr).rstrip()
        raise CodegenError(f"openapi-python-client failed (exit {result.returncode}):\n{output}")
    # PEP 561 marker: the package ships in the wheel and is fully annotated. The
    # generator only writes it for --meta other than none.
    (out / "py.typed").write_text(PY_TYPED, encoding="utf-8")
    (out / OPERATIONS_FILE).write_text(operations_json(), encoding="utf-8")
    (out / FIELD_NAMES_FILE).write_text(field_names_json(), encoding="utf-8")
    (out / CONSTRAINTS_FILE).write_text(constraints_json(), encoding="utf-8")
    # Paths of this run must not leak into the output, or it would not be reproducible.
    marker = str(workdir).encode()
    leaks = sorted(name for name, data in read_tree(out).items() if marker in data)
    if leaks:
        raise CodegenError(f"generated files mention the temporary directory: {', '.join(leaks)}")
    return out


def snake_case(name: str) -> str:
    """``ListTableVersions`` -> ``list_table_versions`` (the generator's module names too)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _ref_name(schema: dict[str, Any]) -> str | None:
    ref = schema.get("$ref")
    return ref.rsplit("/", 1)[1] if isinstance(ref, str) else None


def _json_type(schema: dict[str, Any], schemas: dict[str, Any]) -> str:
    """The JSON type of a parameter or bare body: string, integer, boolean, object."""
    name = _ref_name(schema)
    if name is not None:
        return _json_type(schemas[name], schemas)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next(k for k in kind if k != "null")
    if kind is None:
        raise CodegenError(f"no type in {schema}")
    return str(kind)


def _field_of_type(model: dict[str, Any], kind: str, schemas: dict[str, Any]) -> str:
    """The one property of ``model`` (context/identity aside) whose JSON type is ``kind``."""
    found = [
        name
        for name, prop in model.get("properties", {}).items()
        if name not in ("context", "identity") and _json_type(prop, schemas) == kind
    ]
    if len(found) != 1:
        raise CodegenError(f"cannot tell which field of {model} travels as the bare {kind}")
    return found[0]


def operations_table(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """One entry per operation of the spec, in the spec's order.

    Request model: the JSON body's schema, else ``<OperationId>Request``; response
    model: the success answer's schema, else ``<OperationId>Response``. A bare
    answer (an integer, a string, a map) names the model field it fills, and so
    does a bare map body.
    """
    components = spec["components"]
    schemas: dict[str, Any] = components["schemas"]
    parameters: dict[str, Any] = components["parameters"]
    responses: dict[str, Any] = components["responses"]
    table: list[dict[str, Any]] = []
    for path, item in spec["paths"].items():
        for http_method, op in item.items():
            if http_method == "parameters":
                continue
            operation_id = op["operationId"]
            params = []
            for param in [*item.get("parameters", []), *op.get("parameters", [])]:
                ref = _ref_name(param)
                param = parameters[ref] if ref is not None else param
                params.append(param)
            entry: dict[str, Any] = {
                "operation_id": operation_id,
                "method": snake_case(operation_id),
                "http_method": http_method.upper(),
                "path": path,
                "api_module": f"{snake_case(op['tags'][0])}.{snake_case(operation_id)}",
                "idempotent": bool(op["x-idempotent"]),
                "path_params": [p["name"] for p in params if p["in"] == "path"],
                "query_params": [
                    [p["name"], _json_type(p["schema"], schemas), bool(p.get("required", False))]
                    for p in params
                    if p["in"] == "query"
                ],
            }
            request_model = f"{operation_id}Request"
            body = op.get("requestBody")
            entry["request_body"], entry["request_field"] = "none", None
            if body is not None:
                ((media_type, media),) = body["content"].items()
                if media_type in ARROW_MEDIA_TYPES:
                    entry["request_body"] = "arrow"
                elif _ref_name(media["schema"]) is not None:
                    entry["request_body"] = "json"
                    request_model = str(_ref_name(media["schema"]))
                else:
                    entry["request_body"] = _json_type(media["schema"], schemas)
            entry["request_model"] = request_model
            codes = [code for code in op["responses"] if code in ("200", "201", "202")]
            if len(codes) != 1:
                raise CodegenError(f"{operation_id}: expected one success response, got {codes}")
            answer = op["responses"][codes[0]]
            answer = responses[_ref_name(answer)] if _ref_name(answer) is not None else answer
            response_model = f"{operation_id}Response"
            kind, field = "empty", None
            if "content" in answer:
                ((media_type, media),) = answer["content"].items()
                if media_type in ARROW_MEDIA_TYPES:
                    kind = "arrow"
                elif _ref_name(media["schema"]) is not None:
                    kind = "json"
                    response_model = str(_ref_name(media["schema"]))
                else:
                    kind = _json_type(media["schema"], schemas)
            for name in (request_model, response_model):
                if name not in schemas:
                    raise CodegenError(f"{operation_id}: no schema {name}")
            if kind not in ("json", "empty", "arrow"):
                field = _field_of_type(schemas[response_model], kind, schemas)
            if entry["request_body"] not in ("json", "none", "arrow"):
                entry["request_field"] = _field_of_type(
                    schemas[request_model], entry["request_body"], schemas
                )
            entry.update(
                request_model=request_model,
                response_model=response_model,
                response_body=kind,
                response_field=field,
                success_status=int(codes[0]),
            )
            table.append(entry)
    return table


def operations_json() -> str:
    """The operation table as the package's ``operations.json`` (stable text)."""
    import yaml

    spec = yaml.safe_load(SPEC.read_text(encoding="utf-8"))
    return json.dumps(operations_table(spec), indent=1) + "\n"


def _properties(schema: dict[str, Any]) -> dict[str, Any]:
    """A schema's own properties, those of its ``allOf`` parts included."""
    found: dict[str, Any] = dict(schema.get("properties") or {})
    for part in schema.get("allOf") or []:
        found.update(_properties(part))
    return found


def _nested_objects(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """Inline object schemas below ``schema`` (each one a generated class of its own)."""
    found: list[dict[str, Any]] = []
    for sub in _properties(schema).values():
        if not isinstance(sub, dict):
            continue
        for candidate in [sub, sub.get("items"), sub.get("additionalProperties")]:
            if isinstance(candidate, dict) and _properties(candidate):
                found.append(candidate)
                found.extend(_nested_objects(candidate))
    return found


def field_names(spec: dict[str, Any]) -> dict[str, dict[str, str]]:
    """Model class -> {Python field name: JSON name} for the fields the generator renames."""
    from openapi_python_client.config import ConfigFile
    from openapi_python_client.strings import ClassName, PythonIdentifier

    config = ConfigFile.load_from_path(CONFIG)
    table: dict[str, dict[str, str]] = {}
    for schema_name, schema in spec["components"]["schemas"].items():
        renamed = {
            str(PythonIdentifier(name, prefix=config.field_prefix)): name
            for name in _properties(schema)
        }
        renamed = {python: wire for python, wire in renamed.items() if python != wire}
        if renamed:
            table[str(ClassName(schema_name, prefix=config.field_prefix))] = dict(
                sorted(renamed.items())
            )
        for nested in _nested_objects(schema):
            if any(
                str(PythonIdentifier(name, prefix=config.field_prefix)) != name
                for name in _properties(nested)
            ):
                raise CodegenError(
                    f"{schema_name} has an inline object with a renamed field: give it a "
                    "component schema so field_names.json can name its class"
                )
    return dict(sorted(table.items()))


def field_names_json() -> str:
    """The renamed fields as the package's ``field_names.json`` (stable text)."""
    import yaml

    spec = yaml.safe_load(SPEC.read_text(encoding="utf-8"))
    return json.dumps(field_names(spec), indent=1) + "\n"


def _rules(schema: dict[str, Any]) -> dict[str, Any]:
    """A value's constraints: its own keywords, its items' (``items``) and its map
    values' (``values``), as far down as the spec states them."""
    rules: dict[str, Any] = {key: schema[key] for key in CONSTRAINT_KEYWORDS if key in schema}
    if schema.get("uniqueItems") is True:
        rules["uniqueItems"] = True
    items = schema.get("items")
    if isinstance(items, dict) and (found := _rules(items)):
        rules["items"] = found
    values = schema.get("additionalProperties")
    if isinstance(values, dict) and not _properties(values) and (found := _rules(values)):
        rules["values"] = found
    return rules


def constraints(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Model class -> {JSON field: its constraints}, for every field the spec constrains.

    Inline objects with a ``title`` are classes of their own, named as the generator
    names them (``use_path_prefixes_for_title_model_names``: parent + title).
    """
    from openapi_python_client.config import ConfigFile
    from openapi_python_client.strings import ClassName

    config = ConfigFile.load_from_path(CONFIG)
    table: dict[str, dict[str, Any]] = {}

    def walk(class_name: str, schema: dict[str, Any]) -> None:
        for name, sub in _properties(schema).items():
            if not isinstance(sub, dict):
                continue
            if found := _rules(sub):
                table.setdefault(class_name, {})[name] = found
            if "title" in sub and _properties(sub):
                nested = ClassName(class_name + str(sub["title"]), prefix=config.field_prefix)
                walk(str(nested), sub)

    for schema_name, schema in spec["components"]["schemas"].items():
        walk(str(ClassName(schema_name, prefix=config.field_prefix)), schema)
    return {name: dict(sorted(fields.items())) for name, fields in sorted(table.items())}


def constraints_json() -> str:
    """The constraints as the package's ``constraints.json`` (stable text)."""
    import yaml

    spec = yaml.safe_load(SPEC.read_text(encoding="utf-8"))
    return json.dumps(constraints(spec), indent=1) + "\n"


def operations_stub(table: list[dict[str, Any]]) -> str:
    """The typed stub of ``lance_namespace_async._core.operation_methods`` (unformatted).

    Type checkers see one coroutine per operation on ``AsyncLanceNamespace`` (and
    one blocking method on ``SyncLanceNamespace``) with the models of the spec.
    """
    names = sorted(
        {e["request_model"] for e in table}
        | {e["response_model"] for e in table if e["response_body"] != "arrow"}
    )
    lines = [
        f"# Generated by scripts/codegen.py from {SPEC.relative_to(ROOT).as_posix()}; do not edit.",
        '"""Typed signatures of the operations (installed at run time from the table)."""',
        "",
        "from collections.abc import Mapping",
        "from typing import Any, Protocol",
        "",
        "from .arrow_data import ArrowData",
        "from .timeout import TimeoutTypes",
        "from ..models import (",
        *[f"    {name}," for name in names],
        ")",
        "",
        "class OperationMethods:",
    ]
    for entry in table:
        method, request, response = entry["method"], entry["request_model"], entry["response_model"]
        data = ", data: Any = None" if entry["request_body"] == "arrow" else ""
        answer = "Any" if entry["response_body"] == "arrow" else response
        lines.append(
            f"    async def {method}(self, request: {request} | None = None{data}, *, "
            f"timeout: TimeoutTypes = ...) -> {answer}: ..."
        )
    for entry in table:
        method, request, response = entry["method"], entry["request_model"], entry["response_model"]
        data = ", data: ArrowData" if entry["request_body"] == "arrow" else ""
        answer = "bytes" if entry["response_body"] == "arrow" else response
        lines.append(f"    async def _{method}(self, request: {request}{data}) -> {answer}: ...")
    lines += ["", "class DictRequestOperations(Protocol):"]
    for entry in table:
        method, response = entry["method"], entry["response_model"]
        data = ", data: Any = None" if entry["request_body"] == "arrow" else ""
        answer = "Any" if entry["response_body"] == "arrow" else response
        lines.append(
            f"    async def {method}(self, request: Mapping[str, Any]{data}, *, "
            f"timeout: TimeoutTypes = ...) -> {answer}: ..."
        )
    lines += ["", "class SyncOperationMethods:"]
    for entry in table:
        method, response = entry["method"], entry["response_model"]
        data = ", data: Any = None" if entry["request_body"] == "arrow" else ""
        answer = "Any" if entry["response_body"] in ("arrow", "string") else response
        lines.append(
            f"    def {method}(self, request: Any = None{data}, *, "
            f"timeout: TimeoutTypes = ...) -> {answer}: ..."
        )
    return "\n".join(lines) + "\n"


def format_stub(text: str, workdir: Path) -> str:
    """``text`` as ruff (the project's settings) formats a .pyi file."""
    stub = workdir / "stub.pyi"
    stub.write_text(text, encoding="utf-8")
    ruff = str(bin_dir() / "ruff")
    settings = ["--isolated", "--no-cache", "--line-length", "100", "--target-version", "py311"]
    for command in (["check", "--select", "I", "--fix", "--quiet"], ["format", "--quiet"]):
        result = subprocess.run(
            [ruff, *command, *settings, str(stub)], capture_output=True, text=True, check=False
        )
        if result.returncode != 0:
            raise CodegenError(
                f"ruff {command[0]} failed on the stub:\n{result.stdout}{result.stderr}"
            )
    return stub.read_text(encoding="utf-8")


def stub_text(workdir: Path) -> str:
    import yaml

    spec = yaml.safe_load(SPEC.read_text(encoding="utf-8"))
    return format_stub(operations_stub(operations_table(spec)), workdir)


def read_tree(root: Path) -> dict[str, bytes]:
    """Map each file under ``root`` (POSIX relative path) to its bytes, skipping caches."""
    files: dict[str, bytes] = {}
    if not root.is_dir():
        return files
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if any(part in IGNORED_DIRS for part in rel.parts) or not path.is_file():
            continue
        files[rel.as_posix()] = path.read_bytes()
    return files


def diff_trees(expected: dict[str, bytes], actual: dict[str, bytes]) -> list[str]:
    """Describe every file that differs between two trees, sorted by path."""
    lines: list[str] = []
    for name in sorted(expected.keys() | actual.keys()):
        if name not in actual:
            lines.append(f"missing:  {name}")
        elif name not in expected:
            lines.append(f"extra:    {name}")
        elif expected[name] != actual[name]:
            lines.append(f"modified: {name}")
    return lines


def check() -> int:
    """Regenerate into a temporary directory and compare with the checked-in tree."""
    with tempfile.TemporaryDirectory(prefix="lance-codegen-") as tmp:
        expected = read_tree(generate(Path(tmp)))
        stub = stub_text(Path(tmp))
    differences = diff_trees(expected, read_tree(TARGET))
    if not STUB.is_file() or STUB.read_text(encoding="utf-8") != stub:
        differences.append(f"modified: {STUB.relative_to(ROOT)}")
    rel_target = TARGET.relative_to(ROOT)
    if differences:
        print(f"{rel_target} is out of date with {SPEC.relative_to(ROOT)}; run scripts/codegen.py:")
        for line in differences:
            print(f"  {line}")
        return 1
    print(f"{rel_target} is up to date ({len(expected)} files)")
    return 0


def write() -> int:
    """Regenerate and replace the checked-in package directory."""
    GENERATED.mkdir(exist_ok=True)
    # A sibling temporary directory keeps the final renames on one file system.
    with tempfile.TemporaryDirectory(prefix=".codegen-", dir=GENERATED) as tmp:
        fresh = generate(Path(tmp))
        stub = stub_text(Path(tmp))
        if not STUB.is_file() or STUB.read_text(encoding="utf-8") != stub:
            STUB.write_text(stub, encoding="utf-8")
            print(f"regenerated {STUB.relative_to(ROOT)}")
        rel_target = TARGET.relative_to(ROOT)
        if read_tree(fresh) == read_tree(TARGET):
            print(f"{rel_target} already up to date")
            return 0
        if TARGET.exists():
            TARGET.replace(Path(tmp) / "previous")  # deleted with the temporary directory
        fresh.replace(TARGET)
    print(f"regenerated {rel_target} from {SPEC.relative_to(ROOT)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--check",
        action="store_true",
        help="do not write; exit 1 and list differing files if the generated tree is stale",
    )
    args = parser.parse_args(argv)
    try:
        check_pins()
        return check() if args.check else write()
    except CodegenError as err:
        print(f"codegen: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
