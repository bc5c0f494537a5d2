from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="QueryTableRequestVector")


@_attrs_define
class QueryTableRequestVector:
    """
    Attributes:
        single_vector (list[float] | Unset):
        multi_vector (list[list[float]] | Unset):
    """

    single_vector: list[float] | Unset = UNSET
    multi_vector: list[list[float]] | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        single_vector: list[float] | Unset = UNSET
        if not isinstance(self.single_vector, Unset):
            single_vector = self.single_vector

        multi_vector: list[list[float]] | Unset = UNSET
        if not isinstance(self.multi_vector, Unset):
            multi_vector = []
            for multi_vector_item_data in self.multi_vector:
                multi_vector_item = multi_vector_item_data

                multi_vector.append(multi_vector_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if single_vector is not UNSET:
            field_dict["single_vector"] = single_vector
        if multi_vector is not UNSET:
            field_dict["multi_vector"] = multi_vector

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        single_vector = cast(list[float], d.pop("single_vector", UNSET))

        _multi_vector = d.pop("multi_vector", UNSET)
        multi_vector: list[list[float]] | Unset = UNSET
        if _multi_vector is not UNSET:
            multi_vector = []
            for multi_vector_item_data in _multi_vector:
                multi_vector_item = cast(list[float], multi_vector_item_data)

                multi_vector.append(multi_vector_item)

        query_table_request_vector = cls(
            single_vector=single_vector,
            multi_vector=multi_vector,
        )

        query_table_request_vector.additional_properties = d
        return query_table_request_vector

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
