from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="FragmentSummary")


@_attrs_define
class FragmentSummary:
    """
    Attributes:
        min_ (int):
        max_ (int):
        mean (int):
        p25 (int):
        p50 (int):
        p75 (int):
        p99 (int):
    """

    min_: int
    max_: int
    mean: int
    p25: int
    p50: int
    p75: int
    p99: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        min_ = self.min_

        max_ = self.max_

        mean = self.mean

        p25 = self.p25

        p50 = self.p50

        p75 = self.p75

        p99 = self.p99

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "min": min_,
                "max": max_,
                "mean": mean,
                "p25": p25,
                "p50": p50,
                "p75": p75,
                "p99": p99,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        min_ = d.pop("min")

        max_ = d.pop("max")

        mean = d.pop("mean")

        p25 = d.pop("p25")

        p50 = d.pop("p50")

        p75 = d.pop("p75")

        p99 = d.pop("p99")

        fragment_summary = cls(
            min_=min_,
            max_=max_,
            mean=mean,
            p25=p25,
            p50=p50,
            p75=p75,
            p99=p99,
        )

        fragment_summary.additional_properties = d
        return fragment_summary

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
