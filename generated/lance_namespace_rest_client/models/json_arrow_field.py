from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.json_arrow_data_type import JsonArrowDataType
    from ..models.json_arrow_field_metadata import JsonArrowFieldMetadata


T = TypeVar("T", bound="JsonArrowField")


@_attrs_define
class JsonArrowField:
    """Apache Arrow field in JSON form.

    Attributes:
        name (str):
        nullable (bool):
        type_ (JsonArrowDataType): Apache Arrow data type in JSON form.
        metadata (JsonArrowFieldMetadata | None | Unset):
    """

    name: str
    nullable: bool
    type_: JsonArrowDataType
    metadata: JsonArrowFieldMetadata | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        nullable = self.nullable

        type_ = self.type_.to_dict()

        metadata: dict[str, Any] | None | Unset
        if isinstance(self.metadata, Unset):
            metadata = UNSET
        elif isinstance(self.metadata, JsonArrowFieldMetadata):
            metadata = self.metadata.to_dict()
        else:
            metadata = self.metadata

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "name": name,
                "nullable": nullable,
                "type": type_,
            }
        )
        if metadata is not UNSET:
            field_dict["metadata"] = metadata

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        name = d.pop("name")

        nullable = d.pop("nullable")

        type_ = JsonArrowDataType.from_dict(d.pop("type"))

        def _parse_metadata(data: object) -> JsonArrowFieldMetadata | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                metadata_type_0 = JsonArrowFieldMetadata.from_dict(data)

                return metadata_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(JsonArrowFieldMetadata | None | Unset, data)

        metadata = _parse_metadata(d.pop("metadata", UNSET))

        json_arrow_field = cls(
            name=name,
            nullable=nullable,
            type_=type_,
            metadata=metadata,
        )

        json_arrow_field.additional_properties = d
        return json_arrow_field

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
from ..models.json_arrow_field_metadata import JsonArrowFieldMetadata
