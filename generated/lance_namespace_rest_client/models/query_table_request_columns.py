from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.query_table_request_columns_column_aliases import QueryTableRequestColumnsColumnAliases


T = TypeVar("T", bound="QueryTableRequestColumns")


@_attrs_define
class QueryTableRequestColumns:
    """
    Attributes:
        column_names (list[str] | Unset):
        column_aliases (QueryTableRequestColumnsColumnAliases | Unset):
    """

    column_names: list[str] | Unset = UNSET
    column_aliases: QueryTableRequestColumnsColumnAliases | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        column_names: list[str] | Unset = UNSET
        if not isinstance(self.column_names, Unset):
            column_names = self.column_names

        column_aliases: dict[str, Any] | Unset = UNSET
        if not isinstance(self.column_aliases, Unset):
            column_aliases = self.column_aliases.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if column_names is not UNSET:
            field_dict["column_names"] = column_names
        if column_aliases is not UNSET:
            field_dict["column_aliases"] = column_aliases

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        column_names = cast(list[str], d.pop("column_names", UNSET))

        _column_aliases = d.pop("column_aliases", UNSET)
        column_aliases: QueryTableRequestColumnsColumnAliases | Unset
        if isinstance(_column_aliases, Unset):
            column_aliases = UNSET
        else:
            column_aliases = QueryTableRequestColumnsColumnAliases.from_dict(_column_aliases)

        query_table_request_columns = cls(
            column_names=column_names,
            column_aliases=column_aliases,
        )

        query_table_request_columns.additional_properties = d
        return query_table_request_columns

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


from ..models.query_table_request_columns_column_aliases import QueryTableRequestColumnsColumnAliases
