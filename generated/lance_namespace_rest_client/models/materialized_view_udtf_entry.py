from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.materialized_view_udtf_entry_kind import MaterializedViewUdtfEntryKind
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.materialized_view_udtf_entry_error_handling_type_0 import MaterializedViewUdtfEntryErrorHandlingType0


T = TypeVar("T", bound="MaterializedViewUdtfEntry")


@_attrs_define
class MaterializedViewUdtfEntry:
    """
    Attributes:
        kind (MaterializedViewUdtfEntryKind):
        udtf (str):
        udtf_sha (str):
        udtf_name (str):
        udtf_version (str):
        input_columns (list[str] | None | Unset):
        partition_by (None | str | Unset):
        partition_by_indexed_column (None | str | Unset):
        num_cpus (float | None | Unset):
        num_gpus (float | None | Unset):
        memory (int | None | Unset):
        error_handling (MaterializedViewUdtfEntryErrorHandlingType0 | None | Unset):
        batch (bool | None | Unset):
        manifest (None | str | Unset):
        manifest_checksum (None | str | Unset):
    """

    kind: MaterializedViewUdtfEntryKind
    udtf: str
    udtf_sha: str
    udtf_name: str
    udtf_version: str
    input_columns: list[str] | None | Unset = UNSET
    partition_by: None | str | Unset = UNSET
    partition_by_indexed_column: None | str | Unset = UNSET
    num_cpus: float | None | Unset = UNSET
    num_gpus: float | None | Unset = UNSET
    memory: int | None | Unset = UNSET
    error_handling: MaterializedViewUdtfEntryErrorHandlingType0 | None | Unset = UNSET
    batch: bool | None | Unset = UNSET
    manifest: None | str | Unset = UNSET
    manifest_checksum: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        kind = self.kind.value

        udtf = self.udtf

        udtf_sha = self.udtf_sha

        udtf_name = self.udtf_name

        udtf_version = self.udtf_version

        input_columns: list[str] | None | Unset
        if isinstance(self.input_columns, Unset):
            input_columns = UNSET
        elif isinstance(self.input_columns, list):
            input_columns = self.input_columns

        else:
            input_columns = self.input_columns

        partition_by: None | str | Unset
        if isinstance(self.partition_by, Unset):
            partition_by = UNSET
        else:
            partition_by = self.partition_by

        partition_by_indexed_column: None | str | Unset
        if isinstance(self.partition_by_indexed_column, Unset):
            partition_by_indexed_column = UNSET
        else:
            partition_by_indexed_column = self.partition_by_indexed_column

        num_cpus: float | None | Unset
        if isinstance(self.num_cpus, Unset):
            num_cpus = UNSET
        else:
            num_cpus = self.num_cpus

        num_gpus: float | None | Unset
        if isinstance(self.num_gpus, Unset):
            num_gpus = UNSET
        else:
            num_gpus = self.num_gpus

        memory: int | None | Unset
        if isinstance(self.memory, Unset):
            memory = UNSET
        else:
            memory = self.memory

        error_handling: dict[str, Any] | None | Unset
        if isinstance(self.error_handling, Unset):
            error_handling = UNSET
        elif isinstance(self.error_handling, MaterializedViewUdtfEntryErrorHandlingType0):
            error_handling = self.error_handling.to_dict()
        else:
            error_handling = self.error_handling

        batch: bool | None | Unset
        if isinstance(self.batch, Unset):
            batch = UNSET
        else:
            batch = self.batch

        manifest: None | str | Unset
        if isinstance(self.manifest, Unset):
            manifest = UNSET
        else:
            manifest = self.manifest

        manifest_checksum: None | str | Unset
        if isinstance(self.manifest_checksum, Unset):
            manifest_checksum = UNSET
        else:
            manifest_checksum = self.manifest_checksum

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "kind": kind,
                "udtf": udtf,
                "udtf_sha": udtf_sha,
                "udtf_name": udtf_name,
                "udtf_version": udtf_version,
            }
        )
        if input_columns is not UNSET:
            field_dict["input_columns"] = input_columns
        if partition_by is not UNSET:
            field_dict["partition_by"] = partition_by
        if partition_by_indexed_column is not UNSET:
            field_dict["partition_by_indexed_column"] = partition_by_indexed_column
        if num_cpus is not UNSET:
            field_dict["num_cpus"] = num_cpus
        if num_gpus is not UNSET:
            field_dict["num_gpus"] = num_gpus
        if memory is not UNSET:
            field_dict["memory"] = memory
        if error_handling is not UNSET:
            field_dict["error_handling"] = error_handling
        if batch is not UNSET:
            field_dict["batch"] = batch
        if manifest is not UNSET:
            field_dict["manifest"] = manifest
        if manifest_checksum is not UNSET:
            field_dict["manifest_checksum"] = manifest_checksum

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        kind = MaterializedViewUdtfEntryKind(d.pop("kind"))

        udtf = d.pop("udtf")

        udtf_sha = d.pop("udtf_sha")

        udtf_name = d.pop("udtf_name")

        udtf_version = d.pop("udtf_version")

        def _parse_input_columns(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                input_columns_type_0 = cast(list[str], data)

                return input_columns_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        input_columns = _parse_input_columns(d.pop("input_columns", UNSET))

        partition_by = cast(None | str | Unset, d.pop("partition_by", UNSET))

        partition_by_indexed_column = cast(None | str | Unset, d.pop("partition_by_indexed_column", UNSET))

        num_cpus = cast(float | None | Unset, d.pop("num_cpus", UNSET))

        num_gpus = cast(float | None | Unset, d.pop("num_gpus", UNSET))

        memory = cast(int | None | Unset, d.pop("memory", UNSET))

        def _parse_error_handling(data: object) -> MaterializedViewUdtfEntryErrorHandlingType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                error_handling_type_0 = MaterializedViewUdtfEntryErrorHandlingType0.from_dict(data)

                return error_handling_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(MaterializedViewUdtfEntryErrorHandlingType0 | None | Unset, data)

        error_handling = _parse_error_handling(d.pop("error_handling", UNSET))

        batch = cast(bool | None | Unset, d.pop("batch", UNSET))

        manifest = cast(None | str | Unset, d.pop("manifest", UNSET))

        manifest_checksum = cast(None | str | Unset, d.pop("manifest_checksum", UNSET))

        materialized_view_udtf_entry = cls(
            kind=kind,
            udtf=udtf,
            udtf_sha=udtf_sha,
            udtf_name=udtf_name,
            udtf_version=udtf_version,
            input_columns=input_columns,
            partition_by=partition_by,
            partition_by_indexed_column=partition_by_indexed_column,
            num_cpus=num_cpus,
            num_gpus=num_gpus,
            memory=memory,
            error_handling=error_handling,
            batch=batch,
            manifest=manifest,
            manifest_checksum=manifest_checksum,
        )

        materialized_view_udtf_entry.additional_properties = d
        return materialized_view_udtf_entry

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties


from ..models.materialized_view_udtf_entry_error_handling_type_0 import MaterializedViewUdtfEntryErrorHandlingType0
