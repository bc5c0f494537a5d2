from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="TableBasicStats")


@_attrs_define
class TableBasicStats:
    """
    Attributes:
        num_deleted_rows (int):
        num_fragments (int):
    """

    num_deleted_rows: int
    num_fragments: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        num_deleted_rows = self.num_deleted_rows

        num_fragments = self.num_fragments

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "num_deleted_rows": num_deleted_rows,
                "num_fragments": num_fragments,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        num_deleted_rows = d.pop("num_deleted_rows")

        num_fragments = d.pop("num_fragments")

        table_basic_stats = cls(
            num_deleted_rows=num_deleted_rows,
            num_fragments=num_fragments,
        )

        table_basic_stats.additional_properties = d
        return table_basic_stats

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
