"""spec/rest.yaml against the protocol pylance speaks: the models and operation parameters
of the installed ``lance_namespace_urllib3_client`` (lance-namespace's generated client,
a dependency of pylance), field by field. No server: both sides are read from disk.

When a new lance-namespace release adds, removes or retypes a field, these tests fail
with one line per difference, so the spec is brought up to date before a user finds it.
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

import pytest
import yaml
from protocol_shapes import (
    SPEC,
    drift,
    load_yaml,
    parameter_drift,
    reference_parameters,
    reference_shapes,
    spec_parameters,
    spec_shapes,
)

pytest.importorskip("lance_namespace_urllib3_client", reason="installed with pylance")


def _report(lines: list[str]) -> str:
    return f"{len(lines)} difference(s) from lance_namespace_urllib3_client " + (
        metadata.version("lance_namespace_urllib3_client") + ":\n  " + "\n  ".join(lines)
    )


def test_every_model_of_the_reference_has_the_same_fields_in_our_spec() -> None:
    lines = drift(spec_shapes(), reference_shapes())
    assert not lines, _report(lines)


def test_every_operation_has_the_reference_path_and_query_parameters() -> None:
    lines = parameter_drift(spec_parameters(), reference_parameters())
    assert not lines, _report(lines)


def test_the_comparison_covers_the_whole_protocol() -> None:
    """A comparison that reads nothing would pass: both sides hold every operation and
    well over a hundred models, and the fields the 0.12/0.13 releases changed."""
    reference = reference_shapes()
    assert len(reference) > 140
    assert len(reference_parameters()) == len(spec_parameters()) == 54
    assert reference["QueryTableRequest"]["minimum_nprobes"] == ("integer", False)
    assert reference["MergeInsertIntoTableRequest"]["on"] == (("array", "string"), False)
    assert reference_parameters()["merge_insert_into_table"]["on"] == (("array", "string"), True)


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (
            lambda doc: doc["components"]["schemas"]["QueryTableRequest"]["properties"].pop(
                "maximum_nprobes"
            ),
            "QueryTableRequest.maximum_nprobes: missing from spec/rest.yaml (integer, optional)",
        ),
        (
            lambda doc: doc["components"]["schemas"]["MergeInsertIntoTableRequest"][
                "properties"
            ].__setitem__("on", {"type": "string"}),
            "MergeInsertIntoTableRequest.on: reference array of string, optional, "
            "spec/rest.yaml string, optional",
        ),
        (
            lambda doc: doc["components"]["schemas"]["TableVersion"]["required"].remove(
                "manifest_path"
            ),
            "TableVersion.manifest_path: reference string, required, "
            "spec/rest.yaml string, optional",
        ),
        (
            lambda doc: doc["components"]["schemas"]["QueryTableRequest"]["properties"]["columns"][
                "properties"
            ].__setitem__("column_names", {"type": "string"}),
            "QueryTableRequestColumns.column_names: reference array of string, optional, "
            "spec/rest.yaml string, optional",
        ),
        (
            # no longer an object with fields (its references still resolve)
            lambda doc: doc["components"]["schemas"].__setitem__(
                "TableBasicStats", {"type": "string"}
            ),
            "TableBasicStats: missing from spec/rest.yaml",
        ),
    ],
    ids=["missing-field", "retyped-field", "required-ness", "nested-inline-model", "model"],
)
def test_a_drift_is_named_in_the_failure(tmp_path: Path, edit: object, expected: str) -> None:
    document = load_yaml(SPEC)
    edit(document)  # type: ignore[operator]
    changed = tmp_path / "rest.yaml"
    changed.write_text(yaml.safe_dump(document))
    lines = drift(spec_shapes(changed), reference_shapes())
    assert any(line.startswith(expected) for line in lines), lines


def test_a_query_parameter_drift_is_named(tmp_path: Path) -> None:
    document = load_yaml(SPEC)
    for param in document["paths"]["/v1/table/{id}/merge_insert"]["parameters"]:
        if param.get("name") == "on":
            param["schema"] = {"type": "string"}
    changed = tmp_path / "rest.yaml"
    changed.write_text(yaml.safe_dump(document))
    lines = parameter_drift(spec_parameters(changed), reference_parameters())
    assert lines == [
        "merge_insert_into_table?on: reference array of string, required, "
        "spec/rest.yaml string, required"
    ]
