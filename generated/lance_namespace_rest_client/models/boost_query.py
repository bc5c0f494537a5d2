from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.fts_query import FtsQuery


T = TypeVar("T", bound="BoostQuery")


@_attrs_define
class BoostQuery:
    """
    Attributes:
        positive (FtsQuery):
        negative (FtsQuery):
        negative_boost (float | Unset):
    """

    positive: FtsQuery
    negative: FtsQuery
    negative_boost: float | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        positive = self.positive.to_dict()

        negative = self.negative.to_dict()

        negative_boost = self.negative_boost

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "positive": positive,
                "negative": negative,
            }
        )
        if negative_boost is not UNSET:
            field_dict["negative_boost"] = negative_boost

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        positive = FtsQuery.from_dict(d.pop("positive"))

        negative = FtsQuery.from_dict(d.pop("negative"))

        negative_boost = d.pop("negative_boost", UNSET)

        boost_query = cls(
            positive=positive,
            negative=negative,
            negative_boost=negative_boost,
        )

        boost_query.additional_properties = d
        return boost_query

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


from ..models.fts_query import FtsQuery
