from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="MatchQuery")


@_attrs_define
class MatchQuery:
    """
    Attributes:
        terms (str):
        boost (float | Unset):
        column (str | Unset):
        fuzziness (int | Unset):
        max_expansions (int | Unset):
        operator (str | Unset):
        prefix_length (int | Unset):
    """

    terms: str
    boost: float | Unset = UNSET
    column: str | Unset = UNSET
    fuzziness: int | Unset = UNSET
    max_expansions: int | Unset = UNSET
    operator: str | Unset = UNSET
    prefix_length: int | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        terms = self.terms

        boost = self.boost

        column = self.column

        fuzziness = self.fuzziness

        max_expansions = self.max_expansions

        operator = self.operator

        prefix_length = self.prefix_length

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "terms": terms,
            }
        )
        if boost is not UNSET:
            field_dict["boost"] = boost
        if column is not UNSET:
            field_dict["column"] = column
        if fuzziness is not UNSET:
            field_dict["fuzziness"] = fuzziness
        if max_expansions is not UNSET:
            field_dict["max_expansions"] = max_expansions
        if operator is not UNSET:
            field_dict["operator"] = operator
        if prefix_length is not UNSET:
            field_dict["prefix_length"] = prefix_length

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        terms = d.pop("terms")

        boost = d.pop("boost", UNSET)

        column = d.pop("column", UNSET)

        fuzziness = d.pop("fuzziness", UNSET)

        max_expansions = d.pop("max_expansions", UNSET)

        operator = d.pop("operator", UNSET)

        prefix_length = d.pop("prefix_length", UNSET)

        match_query = cls(
            terms=terms,
            boost=boost,
            column=column,
            fuzziness=fuzziness,
            max_expansions=max_expansions,
            operator=operator,
            prefix_length=prefix_length,
        )

        match_query.additional_properties = d
        return match_query

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
