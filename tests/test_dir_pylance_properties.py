"""The dir backend takes pylance 14.0.2's DirectoryNamespace properties, all of them.

The list is pylance's: ``DirectoryNamespaceBuilder::from_properties`` of the lance
repository (rust/lance-namespace-impls/src/dir.rs, v14.0.2) and the Python wrapper's
``dynamic_context_provider.*``. Each key is accepted, handed to pylance with the value
given, and has its effect where one can be seen: ``ops_metrics_enabled`` counts as
pylance's own DirectoryNamespace counts the same calls, the ``vend_input_storage_options*``
switches put the storage options and their expiry into DescribeTable. Servers: none
(real pylance on temporary directories).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, ClassVar

import pyarrow as pa
import pytest
from lance.namespace import DirectoryNamespace as PylanceDirectoryNamespace

import lance_namespace_async as lna
from lance_namespace_async import errors
from lance_namespace_async.directory import DirectoryConfig

#: every key pylance 14.0.2's DirectoryNamespace reads, with a value other than its default
PYLANCE_KEYS = {
    "manifest_enabled": "true",
    "dir_listing_enabled": "false",
    "inline_optimization_enabled": "false",
    "table_version_tracking_enabled": "true",
    "dir_listing_to_manifest_migration_enabled": "true",
    "commit_retries": "3",
    "vend_input_storage_options": "true",
    "vend_input_storage_options_refresh_interval_millis": "60000",
    "ops_metrics_enabled": "true",
    "storage.allow_http": "true",
    "credential_vendor.permission": "read",
}


class RecordingProvider:
    """A ``dynamic_context_provider.impl``: records how it was built."""

    built: ClassVar[list[dict[str, str]]] = []

    def __init__(self, **settings: str) -> None:
        RecordingProvider.built.append(settings)

    def provide_context(self, info: dict[str, str]) -> dict[str, str]:
        return {}


def test_every_pylance_key_is_accepted_and_handed_to_pylance(tmp_path: Path) -> None:
    PylanceDirectoryNamespace(root=str(tmp_path / "theirs"), **PYLANCE_KEYS)  # pylance takes them
    config = DirectoryConfig.from_properties({"root": str(tmp_path / "ours"), **PYLANCE_KEYS})
    handed = config.rust_properties(str(tmp_path / "ours"))
    assert {key: handed[key] for key in PYLANCE_KEYS} == PYLANCE_KEYS


def test_commit_retries_is_no_longer_refused_and_pylance_writes_through_it(
    tmp_path: Path,
) -> None:
    """The setup of pylance's own namespace tests (``commit_retries``) on our facade."""
    import lance

    properties = {"root": str(tmp_path), "commit_retries": "2"}
    with lna.connect_sync("dir", properties) as ns:
        ns.create_namespace({"id": ["w"]})
        written = lance.write_dataset(
            pa.table({"a": [1, 2, 3]}), namespace_client=ns, table_id=["w", "t"]
        )
        assert written.count_rows() == 3
        assert ns.list_tables({"id": ["w"]}).tables == ["t"]


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("commit_retries", "-1"),
        ("commit_retries", str(2**32)),
        ("commit_retries", "many"),
        ("ops_metrics_enabled", "perhaps"),
        ("vend_input_storage_options", "2"),
        ("vend_input_storage_options_refresh_interval_millis", "0"),
    ],
)
def test_a_value_pylance_would_silently_ignore_is_invalid_input(
    tmp_path: Path, key: str, value: str
) -> None:
    """pylance falls back to its default for a value it cannot parse; we say so."""
    with pytest.raises(errors.InvalidInputError, match=key):
        lna.connect("dir", {"root": str(tmp_path), key: value})


def _same_calls(ns: Any) -> None:
    ns.create_namespace({"id": ["m"]})
    ns.list_namespaces({"id": []})
    ns.list_namespaces({"id": []})
    ns.declare_table({"id": ["m", "t"]})
    ns.describe_table({"id": ["m", "t"]})
    ns.list_tables({"id": ["m"]})
    ns.table_exists({"id": ["m", "t"]})


def test_ops_metrics_count_the_calls_as_pylance_counts_them(tmp_path: Path) -> None:
    from lance_namespace import (
        CreateNamespaceRequest,
        DeclareTableRequest,
        DescribeTableRequest,
        ListNamespacesRequest,
        ListTablesRequest,
        TableExistsRequest,
    )

    theirs = PylanceDirectoryNamespace(root=str(tmp_path / "theirs"), ops_metrics_enabled="true")
    theirs.create_namespace(CreateNamespaceRequest(id=["m"]))
    theirs.list_namespaces(ListNamespacesRequest(id=[]))
    theirs.list_namespaces(ListNamespacesRequest(id=[]))
    theirs.declare_table(DeclareTableRequest(id=["m", "t"]))
    theirs.describe_table(DescribeTableRequest(id=["m", "t"]))
    theirs.list_tables(ListTablesRequest(id=["m"]))
    theirs.table_exists(TableExistsRequest(id=["m", "t"]))
    properties = {"root": str(tmp_path / "ours"), "ops_metrics_enabled": "true"}
    with lna.connect_sync("dir", properties) as ours:
        _same_calls(ours)
        assert ours.retrieve_ops_metrics() == theirs.retrieve_ops_metrics()
        ours.reset_ops_metrics()
        ours.list_tables({"id": ["m"]})
        assert ours.retrieve_ops_metrics() == {"list_tables": 1}


def test_without_ops_metrics_nothing_is_counted(tmp_path: Path) -> None:
    with lna.connect_sync("dir", {"root": str(tmp_path)}) as ns:
        _same_calls(ns)
        assert ns.retrieve_ops_metrics() == {}


def test_vended_input_storage_options_carry_their_expiry(tmp_path: Path) -> None:
    properties = {
        "root": str(tmp_path),
        "storage.allow_http": "true",
        "vend_input_storage_options": "true",
        "vend_input_storage_options_refresh_interval_millis": "60000",
    }
    before = int(time.time() * 1000)
    with lna.connect_sync("dir", properties) as ns:
        ns.create_namespace({"id": ["v"]})
        ns.declare_table({"id": ["v", "t"]})
        options = ns.describe_table({"id": ["v", "t"]}).storage_options.to_dict()
    assert options["allow_http"] == "true"
    expires = int(options["expires_at_millis"])
    assert before + 60000 <= expires <= int(time.time() * 1000) + 60000


def test_a_dynamic_context_provider_is_built_as_pylance_builds_it(tmp_path: Path) -> None:
    RecordingProvider.built.clear()
    properties = {
        "root": str(tmp_path),
        "dynamic_context_provider.impl": f"{__name__}.RecordingProvider",
        "dynamic_context_provider.api_key": "k-1",
    }
    with lna.connect_sync("dir", properties) as ns:
        ns.list_namespaces({"id": []})
    assert RecordingProvider.built == [{"api_key": "k-1"}]
    bad = {"root": str(tmp_path), "dynamic_context_provider.impl": "no_such_module.Provider"}
    with (
        lna.connect_sync("dir", bad) as ns,
        pytest.raises(errors.InvalidInputError, match=r"dynamic_context_provider\.impl"),
    ):
        ns.list_namespaces({"id": []})


@pytest.mark.parametrize(
    ("impl", "typo", "meant"),
    [("dir", "roott", "root"), ("dir", "storage_region", "storage.*"), ("rest", "urii", "uri")],
)
def test_a_typo_of_a_key_is_named_with_its_close_match(impl: str, typo: str, meant: str) -> None:
    with pytest.raises(errors.InvalidInputError) as refused:
        lna.connect(impl, {typo: "x"})
    assert f"unknown configuration key {typo!r}" in refused.value.message
    assert f"did you mean {meant!r}?" in refused.value.message
