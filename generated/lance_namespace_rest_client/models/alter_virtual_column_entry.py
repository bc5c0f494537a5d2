from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.alter_virtual_column_entry_field_metadata import AlterVirtualColumnEntryFieldMetadata


T = TypeVar("T", bound="AlterVirtualColumnEntry")


@_attrs_define
class AlterVirtualColumnEntry:
    """
    Attributes:
        input_columns (list[str] | None | Unset):
        image (None | str | Unset):
        udf (None | str | Unset):
        udf_name (None | str | Unset):
        udf_version (None | str | Unset):
        udf_backend (None | str | Unset):
        auto_backfill (bool | None | Unset):
        manifest (None | str | Unset):
        manifest_checksum (None | str | Unset):
        field_metadata (AlterVirtualColumnEntryFieldMetadata | None | Unset):
    """

    input_columns: list[str] | None | Unset = UNSET
    image: None | str | Unset = UNSET
    udf: None | str | Unset = UNSET
    udf_name: None | str | Unset = UNSET
    udf_version: None | str | Unset = UNSET
    udf_backend: None | str | Unset = UNSET
    auto_backfill: bool | None | Unset = UNSET
    manifest: None | str | Unset = UNSET
    manifest_checksum: None | str | Unset = UNSET
    field_metadata: AlterVirtualColumnEntryFieldMetadata | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        input_columns: list[str] | None | Unset
        if isinstance(self.input_columns, Unset):
            input_columns = UNSET
        elif isinstance(self.input_columns, list):
            input_columns = self.input_columns

        else:
            input_columns = self.input_columns

        image: None | str | Unset
        if isinstance(self.image, Unset):
            image = UNSET
        else:
            image = self.image

        udf: None | str | Unset
        if isinstance(self.udf, Unset):
            udf = UNSET
        else:
            udf = self.udf

        udf_name: None | str | Unset
        if isinstance(self.udf_name, Unset):
            udf_name = UNSET
        else:
            udf_name = self.udf_name

        udf_version: None | str | Unset
        if isinstance(self.udf_version, Unset):
            udf_version = UNSET
        else:
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
        elif isinstance(self.field_metadata, AlterVirtualColumnEntryFieldMetadata):
            field_metadata = self.field_metadata.to_dict()
        else:
            field_metadata = self.field_metadata

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if input_columns is not UNSET:
            field_dict["input_columns"] = input_columns
        if image is not UNSET:
            field_dict["image"] = image
        if udf is not UNSET:
            field_dict["udf"] = udf
        if udf_name is not UNSET:
            field_dict["udf_name"] = udf_name
        if udf_version is not UNSET:
            field_dict["udf_version"] = udf_version
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

        image = cast(None | str | Unset, d.pop("image", UNSET))

        udf = cast(None | str | Unset, d.pop("udf", UNSET))

        udf_name = cast(None | str | Unset, d.pop("udf_name", UNSET))

        udf_version = cast(None | str | Unset, d.pop("udf_version", UNSET))

        udf_backend = cast(None | str | Unset, d.pop("udf_backend", UNSET))

        auto_backfill = cast(bool | None | Unset, d.pop("auto_backfill", UNSET))

        manifest = cast(None | str | Unset, d.pop("manifest", UNSET))

        manifest_checksum = cast(None | str | Unset, d.pop("manifest_checksum", UNSET))

        def _parse_field_metadata(data: object) -> AlterVirtualColumnEntryFieldMetadata | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                field_metadata_type_0 = AlterVirtualColumnEntryFieldMetadata.from_dict(data)

                return field_metadata_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(AlterVirtualColumnEntryFieldMetadata | None | Unset, data)

        field_metadata = _parse_field_metadata(d.pop("field_metadata", UNSET))

        alter_virtual_column_entry = cls(
            input_columns=input_columns,
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

        alter_virtual_column_entry.additional_properties = d
        return alter_virtual_column_entry

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


from ..models.alter_virtual_column_entry_field_metadata import AlterVirtualColumnEntryFieldMetadata
