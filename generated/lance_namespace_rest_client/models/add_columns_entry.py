from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.add_virtual_column_entry import AddVirtualColumnEntry


T = TypeVar("T", bound="AddColumnsEntry")


@_attrs_define
class AddColumnsEntry:
    """
    Attributes:
        name (str):
        expression (None | str | Unset):
        computed (None | str | Unset):
        virtual_column (AddVirtualColumnEntry | None | Unset):
    """

    name: str
    expression: None | str | Unset = UNSET
    computed: None | str | Unset = UNSET
    virtual_column: AddVirtualColumnEntry | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        expression: None | str | Unset
        if isinstance(self.expression, Unset):
            expression = UNSET
        else:
            expression = self.expression

        computed: None | str | Unset
        if isinstance(self.computed, Unset):
            computed = UNSET
        else:
            computed = self.computed

        virtual_column: dict[str, Any] | None | Unset
        if isinstance(self.virtual_column, Unset):
            virtual_column = UNSET
        elif isinstance(self.virtual_column, AddVirtualColumnEntry):
            virtual_column = self.virtual_column.to_dict()
        else:
            virtual_column = self.virtual_column

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "name": name,
            }
        )
        if expression is not UNSET:
            field_dict["expression"] = expression
        if computed is not UNSET:
            field_dict["computed"] = computed
        if virtual_column is not UNSET:
            field_dict["virtual_column"] = virtual_column

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        name = d.pop("name")

        expression = cast(None | str | Unset, d.pop("expression", UNSET))

        computed = cast(None | str | Unset, d.pop("computed", UNSET))

        def _parse_virtual_column(data: object) -> AddVirtualColumnEntry | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                virtual_column_type_1 = AddVirtualColumnEntry.from_dict(data)

                return virtual_column_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(AddVirtualColumnEntry | None | Unset, data)

        virtual_column = _parse_virtual_column(d.pop("virtual_column", UNSET))

        add_columns_entry = cls(
            name=name,
            expression=expression,
            computed=computed,
            virtual_column=virtual_column,
        )

        add_columns_entry.additional_properties = d
        return add_columns_entry

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


from ..models.add_virtual_column_entry import AddVirtualColumnEntry
