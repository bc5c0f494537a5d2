from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.fragment_summary import FragmentSummary


T = TypeVar("T", bound="FragmentStats")


@_attrs_define
class FragmentStats:
    """
    Attributes:
        num_fragments (int):
        num_small_fragments (int):
        lengths (FragmentSummary):
    """

    num_fragments: int
    num_small_fragments: int
    lengths: FragmentSummary
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        num_fragments = self.num_fragments

        num_small_fragments = self.num_small_fragments

        lengths = self.lengths.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "num_fragments": num_fragments,
                "num_small_fragments": num_small_fragments,
                "lengths": lengths,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        num_fragments = d.pop("num_fragments")

        num_small_fragments = d.pop("num_small_fragments")

        lengths = FragmentSummary.from_dict(d.pop("lengths"))

        fragment_stats = cls(
            num_fragments=num_fragments,
            num_small_fragments=num_small_fragments,
            lengths=lengths,
        )

        fragment_stats.additional_properties = d
        return fragment_stats

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


from ..models.fragment_summary import FragmentSummary
