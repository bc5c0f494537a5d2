from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.alter_columns_entry_data_type import AlterColumnsEntryDataType
    from ..models.alter_virtual_column_entry import AlterVirtualColumnEntry


T = TypeVar("T", bound="AlterColumnsEntry")


@_attrs_define
class AlterColumnsEntry:
    """
    Attributes:
        path (str):
        data_type (AlterColumnsEntryDataType | Unset):
        rename (None | str | Unset):
        nullable (bool | None | Unset):
        virtual_column (AlterVirtualColumnEntry | None | Unset):
    """

    path: str
    data_type: AlterColumnsEntryDataType | Unset = UNSET
    rename: None | str | Unset = UNSET
    nullable: bool | None | Unset = UNSET
    virtual_column: AlterVirtualColumnEntry | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        path = self.path

        data_type: dict[str, Any] | Unset = UNSET
        if not isinstance(self.data_type, Unset):
            data_type = self.data_type.to_dict()

        rename: None | str | Unset
        if isinstance(self.rename, Unset):
            rename = UNSET
        else:
            rename = self.rename

        nullable: bool | None | Unset
        if isinstance(self.nullable, Unset):
            nullable = UNSET
        else:
            nullable = self.nullable

        virtual_column: dict[str, Any] | None | Unset
        if isinstance(self.virtual_column, Unset):
            virtual_column = UNSET
        elif isinstance(self.virtual_column, AlterVirtualColumnEntry):
            virtual_column = self.virtual_column.to_dict()
        else:
            virtual_column = self.virtual_column

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "path": path,
            }
        )
        if data_type is not UNSET:
            field_dict["data_type"] = data_type
        if rename is not UNSET:
            field_dict["rename"] = rename
        if nullable is not UNSET:
            field_dict["nullable"] = nullable
        if virtual_column is not UNSET:
            field_dict["virtual_column"] = virtual_column

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        path = d.pop("path")

        _data_type = d.pop("data_type", UNSET)
        data_type: AlterColumnsEntryDataType | Unset
        if isinstance(_data_type, Unset):
            data_type = UNSET
        else:
            data_type = AlterColumnsEntryDataType.from_dict(_data_type)

        rename = cast(None | str | Unset, d.pop("rename", UNSET))

        nullable = cast(bool | None | Unset, d.pop("nullable", UNSET))

        def _parse_virtual_column(data: object) -> AlterVirtualColumnEntry | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                virtual_column_type_1 = AlterVirtualColumnEntry.from_dict(data)

                return virtual_column_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(AlterVirtualColumnEntry | None | Unset, data)

        virtual_column = _parse_virtual_column(d.pop("virtual_column", UNSET))

        alter_columns_entry = cls(
            path=path,
            data_type=data_type,
            rename=rename,
            nullable=nullable,
            virtual_column=virtual_column,
        )

        alter_columns_entry.additional_properties = d
        return alter_columns_entry

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


from ..models.alter_columns_entry_data_type import AlterColumnsEntryDataType
from ..models.alter_virtual_column_entry import AlterVirtualColumnEntry
