from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.add_virtual_column_entry_field_metadata import AddVirtualColumnEntryFieldMetadata
    from ..models.add_virtual_column_output_entry import AddVirtualColumnOutputEntry


T = TypeVar("T", bound="AddVirtualColumnEntry")


@_attrs_define
class AddVirtualColumnEntry:
    """
    Attributes:
        input_columns (list[str]):
        outputs (list[AddVirtualColumnOutputEntry]):
        image (str):
        udf (str):
        udf_name (str):
        udf_version (str):
        udf_backend (None | str | Unset):
        auto_backfill (bool | None | Unset):
        manifest (None | str | Unset):
        manifest_checksum (None | str | Unset):
        field_metadata (AddVirtualColumnEntryFieldMetadata | None | Unset):
    """

    input_columns: list[str]
    outputs: list[AddVirtualColumnOutputEntry]
    image: str
    udf: str
    udf_name: str
    udf_version: str
    udf_backend: None | str | Unset = UNSET
    auto_backfill: bool | None | Unset = UNSET
    manifest: None | str | Unset = UNSET
    manifest_checksum: None | str | Unset = UNSET
    field_metadata: AddVirtualColumnEntryFieldMetadata | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        input_columns = self.input_columns

        outputs = []
        for outputs_item_data in self.outputs:
            outputs_item = outputs_item_data.to_dict()
            outputs.append(outputs_item)

        image = self.image

        udf = self.udf

        udf_name = self.udf_name

        udf_version = self.udf_version

        udf_backend: None | str | Unset
        if isinstance(self.udf_backend, Unset):
            udf_backend = UNSET
        else:
            udf_backend = self.udf_backend

        auto_backfill: bool | None | Unset
        if isinstance(self.auto_backfill, Unset):
            auto_backfill = UNSET
        else:
            auto_backfill = self.auto_backfill

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

        field_metadata: dict[str, Any] | None | Unset
        if isinstance(self.field_metadata, Unset):
            field_metadata = UNSET
        elif isinstance(self.field_metadata, AddVirtualColumnEntryFieldMetadata):
            field_metadata = self.field_metadata.to_dict()
        else:
            field_metadata = self.field_metadata

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "input_columns": input_columns,
                "outputs": outputs,
                "image": image,
                "udf": udf,
                "udf_name": udf_name,
                "udf_version": udf_version,
            }
        )
        if udf_backend is not UNSET:
            field_dict["udf_backend"] = udf_backend
        if auto_backfill is not UNSET:
            field_dict["auto_backfill"] = auto_backfill
        if manifest is not UNSET:
            field_dict["manifest"] = manifest
        if manifest_checksum is not UNSET:
            field_dict["manifest_checksum"] = manifest_checksum
        if field_metadata is not UNSET:
            field_dict["field_metadata"] = field_metadata

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        input_columns = cast(list[str], d.pop("input_columns"))

        outputs = []
        _outputs = d.pop("outputs")
        for outputs_item_data in _outputs:
            outputs_item = AddVirtualColumnOutputEntry.from_dict(outputs_item_data)

            outputs.append(outputs_item)

        image = d.pop("image")

        udf = d.pop("udf")

        udf_name = d.pop("udf_name")

        udf_version = d.pop("udf_version")

        udf_backend = cast(None | str | Unset, d.pop("udf_backend", UNSET))

        auto_backfill = cast(bool | None | Unset, d.pop("auto_backfill", UNSET))

        manifest = cast(None | str | Unset, d.pop("manifest", UNSET))

        manifest_checksum = cast(None | str | Unset, d.pop("manifest_checksum", UNSET))

        def _parse_field_metadata(data: object) -> AddVirtualColumnEntryFieldMetadata | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                field_metadata_type_0 = AddVirtualColumnEntryFieldMetadata.from_dict(data)

                return field_metadata_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(AddVirtualColumnEntryFieldMetadata | None | Unset, data)

        field_metadata = _parse_field_metadata(d.pop("field_metadata", UNSET))

        add_virtual_column_entry = cls(
            input_columns=input_columns,
            outputs=outputs,
            image=image,
            udf=udf,
            udf_name=udf_name,
            udf_version=udf_version,
            udf_backend=udf_backend,
            auto_backfill=auto_backfill,
            manifest=manifest,
            manifest_checksum=manifest_checksum,
            field_metadata=field_metadata,
        )

        add_virtual_column_entry.additional_properties = d
        return add_virtual_column_entry

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


from ..models.add_virtual_column_entry_field_metadata import AddVirtualColumnEntryFieldMetadata
from ..models.add_virtual_column_output_entry import AddVirtualColumnOutputEntry
