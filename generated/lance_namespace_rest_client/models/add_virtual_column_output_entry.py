from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.add_virtual_column_output_entry_data_type import AddVirtualColumnOutputEntryDataType
    from ..models.add_virtual_column_output_entry_metadata import AddVirtualColumnOutputEntryMetadata


T = TypeVar("T", bound="AddVirtualColumnOutputEntry")


@_attrs_define
class AddVirtualColumnOutputEntry:
    """
    Attributes:
        column (str):
        struct_field (str):
        data_type (AddVirtualColumnOutputEntryDataType):
        nullable (bool):
        metadata (AddVirtualColumnOutputEntryMetadata | Unset):
    """

    column: str
    struct_field: str
    data_type: AddVirtualColumnOutputEntryDataType
    nullable: bool
    metadata: AddVirtualColumnOutputEntryMetadata | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        column = self.column

        struct_field = self.struct_field

        data_type = self.data_type.to_dict()

        nullable = self.nullable

        metadata: dict[str, Any] | Unset = UNSET
        if not isinstance(self.metadata, Unset):
            metadata = self.metadata.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "column": column,
                "struct_field": struct_field,
                "data_type": data_type,
                "nullable": nullable,
            }
        )
        if metadata is not UNSET:
            field_dict["metadata"] = metadata

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        column = d.pop("column")

        struct_field = d.pop("struct_field")

        data_type = AddVirtualColumnOutputEntryDataType.from_dict(d.pop("data_type"))

        nullable = d.pop("nullable")

        _metadata = d.pop("metadata", UNSET)
        metadata: AddVirtualColumnOutputEntryMetadata | Unset
        if isinstance(_metadata, Unset):
            metadata = UNSET
        else:
            metadata = AddVirtualColumnOutputEntryMetadata.from_dict(_metadata)

        add_virtual_column_output_entry = cls(
            column=column,
            struct_field=struct_field,
            data_type=data_type,
            nullable=nullable,
            metadata=metadata,
        )

        add_virtual_column_output_entry.additional_properties = d
        return add_virtual_column_output_entry

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


from ..models.add_virtual_column_output_entry_data_type import AddVirtualColumnOutputEntryDataType
from ..models.add_virtual_column_output_entry_metadata import AddVirtualColumnOutputEntryMetadata
