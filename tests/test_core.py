"""The shared core: errors, identifiers, modes, configuration, connect() and the registry."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import lance_namespace_async as lna
from lance_namespace_async import errors
from lance_namespace_async._core.base import AsyncLanceNamespace
from lance_namespace_async._core.modes import CREATE_MODES, parse_mode
from lance_namespace_async.models import ListTablesRequest

PROTOCOL_CODES = {
    0: "UnsupportedOperationError",
    1: "NamespaceNotFoundError",
    2: "NamespaceAlreadyExistsError",
    3: "NamespaceNotEmptyError",
    4: "TableNotFoundError",
    5: "TableAlreadyExistsError",
    6: "TableIndexNotFoundError",
    7: "TableIndexAlreadyExistsError",
    8: "TableTagNotFoundError",
    9: "TableTagAlreadyExistsError",
    10: "TransactionNotFoundError",
    11: "TableVersionNotFoundError",
    12: "TableColumnNotFoundError",
    13: "InvalidInputError",
    14: "ConcurrentModificationError",
    15: "PermissionDeniedError",
    16: "UnauthenticatedError",
    17: "ServiceUnavailableError",
    18: "InternalError",
    19: "InvalidTableStateError",
    20: "TableSchemaValidationError",
    21: "ThrottlingError",
}
HTTP_STATUS = {0: 406, 1: 404, 2: 409, 3: 409, 4: 404, 5: 409, 13: 400, 14: 409, 15: 403}
HTTP_STATUS |= {16: 401, 17: 503, 18: 500, 19: 409, 20: 400, 21: 429}


class TestErrors:
    @pytest.mark.parametrize(("code", "name"), sorted(PROTOCOL_CODES.items()))
    def test_every_protocol_code_has_its_class(self, code: int, name: str) -> None:
        error = errors.from_code(code, "boom")
        assert type(error).__name__ == name
        assert error.code == code
        assert isinstance(error, errors.LanceNamespaceError)
        assert error.to_error_response()["code"] == code
        if code in HTTP_STATUS:
            assert error.http_status == HTTP_STATUS[code]

    def test_unknown_code_is_internal(self) -> None:
        assert isinstance(errors.from_code(999, "x"), errors.InternalError)

    def test_not_found_and_already_exists_families(self) -> None:
        assert isinstance(errors.TableNotFoundError(), errors.NotFoundError)
        assert isinstance(errors.NamespaceNotFoundError(), errors.NotFoundError)
        assert isinstance(errors.TableAlreadyExistsError(), errors.AlreadyExistsError)

    @pytest.mark.parametrize(
        "message",
        [
            "token=abc123secret failed",
            "Authorization: Bearer abc123secret",
            "https://user:abc123secret@host/x",
            "aws_secret_access_key='abc123secret'",
            "credential = abc123secret",
        ],
    )
    def test_messages_never_carry_secrets(self, message: str) -> None:
        error = errors.InvalidInputError(message, detail=message)
        assert "abc123secret" not in str(error)
        assert "abc123secret" not in repr(error)
        assert "abc123secret" not in str(error.to_error_response())


class TestIdentifiers:
    @pytest.mark.parametrize(
        ("text", "parts"),
        [("", ()), ("$", ()), ("a", ("a",)), ("a$b$c", ("a", "b", "c")), ("é t$x", ("é t", "x"))],
    )
    def test_string_to_list_and_back(self, text: str, parts: tuple[str, ...]) -> None:
        assert lna.parse_identifier(text) == parts
        if parts:
            assert lna.join_identifier(parts) == text

    def test_custom_delimiter(self) -> None:
        assert lna.parse_identifier("a.b", ".") == ("a", "b")
        assert lna.join_identifier(("a", "b"), ".") == "a.b"

    @pytest.mark.parametrize("text", ["a$$b", "$a", "a$", "a$\x07"])
    def test_empty_or_control_names_are_invalid(self, text: str) -> None:
        with pytest.raises(errors.InvalidInputError):
            lna.parse_identifier(text)

    def test_list_with_delimiter_inside_a_name_is_invalid(self) -> None:
        with pytest.raises(errors.InvalidInputError, match="delimiter"):
            lna.parse_identifier(["a$b"])


class TestModes:
    @pytest.mark.parametrize(
        ("given", "expected"),
        [
            ("Create", "Create"),
            ("CREATE", "Create"),
            ("exist_ok", "ExistOk"),
            ("EXIST_OK", "ExistOk"),
            ("ExistOk", "ExistOk"),
            ("overwrite", "Overwrite"),
            (None, "Create"),
        ],
    )
    def test_modes_are_case_insensitive(self, given: str | None, expected: str) -> None:
        assert parse_mode(given, CREATE_MODES, default="Create") == expected


class TestConnect:
    def test_unknown_impl_names_the_choices(self) -> None:
        with pytest.raises(errors.InvalidInputError, match="dir"):
            lna.connect("nonexistent", {})

    def test_dotted_class_path_and_registration(self, tmp_path: Path) -> None:
        namespace = lna.connect(
            "lance_namespace_async.directory.DirectoryNamespace", {"root": str(tmp_path)}
        )
        assert type(namespace).__name__ == "DirectoryNamespace"
        lna.register_impl("my-dir", "lance_namespace_async.directory:DirectoryNamespace")
        assert "my-dir" in lna.available_impls()
        assert type(lna.connect("my-dir", {"root": str(tmp_path)})).__name__ == "DirectoryNamespace"

    def test_a_class_that_is_not_a_namespace_is_refused(self) -> None:
        with pytest.raises(errors.InvalidInputError, match="not an AsyncLanceNamespace"):
            lna.connect("pathlib.Path", {})

    def test_missing_optional_dependency_names_the_extra(self) -> None:
        from lance_namespace_async._core import registry as _registry

        _registry._BUILTIN["needs-extra"] = ("module_that_is_not_installed:X", "glue")
        try:
            with pytest.raises(errors.MissingDependencyError, match=r"\[glue\]") as caught:
                lna.connect("needs-extra", {})
            assert isinstance(caught.value, ImportError)
            assert caught.value.code == 0
        finally:
            del _registry._BUILTIN["needs-extra"]

    def test_non_string_property_values_are_invalid(self, tmp_path: Path) -> None:
        with pytest.raises(errors.InvalidInputError, match="manifest_enabled"):
            lna.connect("dir", {"root": str(tmp_path), "manifest_enabled": True})  # type: ignore[dict-item]


class Minimal(AsyncLanceNamespace):
    impl_name = "minimal"


async def test_operations_a_backend_lacks_are_unsupported() -> None:
    namespace = Minimal(config=None)  # type: ignore[arg-type]
    assert namespace.list_operations() == []
    with pytest.raises(errors.UnsupportedOperationError) as caught:
        await namespace.list_tables(ListTablesRequest(id=["a"]))
    assert caught.value.code == 0
    assert "ListTables" in str(caught.value)


def test_import_is_lazy_and_cheap() -> None:
    """Importing the package loads no backend, transport or pylance."""
    code = (
        "import sys, lance_namespace_async;"
        "heavy = [m for m in ('lance', 'pyarrow', 'httpx', 'anyio', 'lance_namespace')"
        " if m in sys.modules];"
        "print(','.join(heavy))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == ""


def test_every_model_writes_the_json_names_field_names_json_gives() -> None:
    """field_names.json (from the generator's naming rules) matches the generated models:
    a value set under each Python name comes out of to_dict under its JSON name."""
    import attrs

    from lance_namespace_async import models
    from lance_namespace_async._core.base import _field_names, json_data

    class Probe:  # a value every generated to_dict passes on, as is or as its to_dict()
        def to_dict(self) -> dict[str, bool]:
            return {"probe": True}

    probe = Probe()
    renamed = _field_names()
    assert renamed["TagContents"] == {"manifest_size": "manifestSize"}
    checked = 0
    for name in dir(models):
        model = getattr(models, name)
        if not (isinstance(model, type) and attrs.has(model) and hasattr(model, "to_dict")):
            continue
        for python_name, json_name in renamed.get(name, {}).items():
            assert python_name in attrs.fields_dict(model), (name, python_name)
            instance = model.__new__(model)
            for field in attrs.fields(model):
                default = field.default
                if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
                    default = default.factory()
                object.__setattr__(instance, field.name, default)
            object.__setattr__(instance, python_name, probe)
            assert instance.to_dict()[json_name] in (probe, probe.to_dict())
            assert json_data(instance)[json_name] in (probe, probe.to_dict())
            checked += 1
    assert checked == sum(len(fields) for fields in renamed.values())


async def test_the_specs_constraints_hold_at_any_depth_and_change_nothing(tmp_path: Path) -> None:
    """constraints.json carries what a type cannot (minLength, minimum, minItems...): a
    request breaking one, however deep, is InvalidInput naming the field, before any I/O."""
    async with lna.connect("dir", {"root": str(tmp_path)}) as ns:
        match = {"column": "", "terms": "x"}
        deep = {"full_text_query": {"structured_query": {"query": {"match": match}}}, "k": 1}
        with pytest.raises(errors.InvalidInputError, match=r"match\.column must not be empty"):
            await ns.explain_table_query_plan({"id": ["t"], "query": deep})
        with pytest.raises(errors.InvalidInputError, match=r"query\.k must be >= 0"):
            await ns.explain_table_query_plan({"id": ["t"], "query": {"k": -1}})
        with pytest.raises(errors.InvalidInputError, match=r"column_names\[1\] must not be empty"):
            await ns.query_table({"id": ["t"], "k": 1, "columns": {"column_names": ["a", ""]}})
        with pytest.raises(errors.InvalidInputError, match=r"version must be >= 0"):
            await ns.describe_table({"id": ["t"], "version": -1})
    assert list(tmp_path.iterdir()) == []
