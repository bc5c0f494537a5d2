from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="VersionRange")


@_attrs_define
class VersionRange:
    """
    Attributes:
        start_version (int): First version of the range (inclusive); 0 starts at the first version.
        end_version (int): End of the range (exclusive); -1 reaches the latest version, included.
    """

    start_version: int
    end_version: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        start_version = self.start_version

        end_version = self.end_version

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "start_version": start_version,
                "end_version": end_version,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        start_version = d.pop("start_version")

        end_version = d.pop("end_version")

        version_range = cls(
            start_version=start_version,
            end_version=end_version,
        )

        version_range.additional_properties = d
        return version_range

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
