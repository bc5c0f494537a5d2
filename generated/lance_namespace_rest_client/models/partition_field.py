from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.json_arrow_data_type import JsonArrowDataType
    from ..models.partition_transform import PartitionTransform


T = TypeVar("T", bound="PartitionField")


@_attrs_define
class PartitionField:
    """
    Attributes:
        field_id (str):
        source_ids (list[int]):
        result_type (JsonArrowDataType): Apache Arrow data type in JSON form.
        transform (PartitionTransform | Unset):
        expression (str | Unset):
    """

    field_id: str
    source_ids: list[int]
    result_type: JsonArrowDataType
    transform: PartitionTransform | Unset = UNSET
    expression: str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        field_id = self.field_id

        source_ids = self.source_ids

        result_type = self.result_type.to_dict()

        transform: dict[str, Any] | Unset = UNSET
        if not isinstance(self.transform, Unset):
            transform = self.transform.to_dict()

        expression = self.expression

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "field_id": field_id,
                "source_ids": source_ids,
                "result_type": result_type,
            }
        )
        if transform is not UNSET:
            field_dict["transform"] = transform
        if expression is not UNSET:
            field_dict["expression"] = expression

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        field_id = d.pop("field_id")

        source_ids = cast(list[int], d.pop("source_ids"))

        result_type = JsonArrowDataType.from_dict(d.pop("result_type"))

        _transform = d.pop("transform", UNSET)
        transform: PartitionTransform | Unset
        if isinstance(_transform, Unset):
            transform = UNSET
        else:
            transform = PartitionTransform.from_dict(_transform)

        expression = d.pop("expression", UNSET)

        partition_field = cls(
            field_id=field_id,
            source_ids=source_ids,
            result_type=result_type,
            transform=transform,
            expression=expression,
        )

        partition_field.additional_properties = d
        return partition_field

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


from ..models.json_arrow_data_type import JsonArrowDataType
from ..models.partition_transform import PartitionTransform
