from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="PhraseQuery")


@_attrs_define
class PhraseQuery:
    """
    Attributes:
        terms (str):
        column (str | Unset):
        slop (int | Unset):
    """

    terms: str
    column: str | Unset = UNSET
    slop: int | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        terms = self.terms

        column = self.column

        slop = self.slop

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "terms": terms,
            }
        )
        if column is not UNSET:
            field_dict["column"] = column
        if slop is not UNSET:
            field_dict["slop"] = slop

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        terms = d.pop("terms")

        column = d.pop("column", UNSET)

        slop = d.pop("slop", UNSET)

        phrase_query = cls(
            terms=terms,
            column=column,
            slop=slop,
        )

        phrase_query.additional_properties = d
        return phrase_query

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
