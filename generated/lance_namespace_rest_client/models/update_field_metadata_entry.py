from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.update_field_metadata_entry_metadata import UpdateFieldMetadataEntryMetadata


T = TypeVar("T", bound="UpdateFieldMetadataEntry")


@_attrs_define
class UpdateFieldMetadataEntry:
    """
    Attributes:
        path (str):
        metadata (UpdateFieldMetadataEntryMetadata):
        replace (bool | None | Unset):
    """

    path: str
    metadata: UpdateFieldMetadataEntryMetadata
    replace: bool | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        path = self.path

        metadata = self.metadata.to_dict()

        replace: bool | None | Unset
        if isinstance(self.replace, Unset):
            replace = UNSET
        else:
            replace = self.replace

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "path": path,
                "metadata": metadata,
            }
        )
        if replace is not UNSET:
            field_dict["replace"] = replace

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        path = d.pop("path")

        metadata = UpdateFieldMetadataEntryMetadata.from_dict(d.pop("metadata"))

        replace = cast(bool | None | Unset, d.pop("replace", UNSET))

        update_field_metadata_entry = cls(
            path=path,
            metadata=metadata,
            replace=replace,
        )

        update_field_metadata_entry.additional_properties = d
        return update_field_metadata_entry

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


from ..models.update_field_metadata_entry_metadata import UpdateFieldMetadataEntryMetadata
