from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.json_arrow_field import JsonArrowField
    from ..models.json_arrow_schema_metadata import JsonArrowSchemaMetadata


T = TypeVar("T", bound="JsonArrowSchema")


@_attrs_define
class JsonArrowSchema:
    """Apache Arrow schema in JSON form.

    Attributes:
        fields (list[JsonArrowField]):
        metadata (JsonArrowSchemaMetadata | None | Unset):
    """

    fields: list[JsonArrowField]
    metadata: JsonArrowSchemaMetadata | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        fields = []
        for fields_item_data in self.fields:
            fields_item = fields_item_data.to_dict()
            fields.append(fields_item)

        metadata: dict[str, Any] | None | Unset
        if isinstance(self.metadata, Unset):
            metadata = UNSET
        elif isinstance(self.metadata, JsonArrowSchemaMetadata):
            metadata = self.metadata.to_dict()
        else:
            metadata = self.metadata

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "fields": fields,
            }
        )
        if metadata is not UNSET:
            field_dict["metadata"] = metadata

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        fields = []
        _fields = d.pop("fields")
        for fields_item_data in _fields:
            fields_item = JsonArrowField.from_dict(fields_item_data)

            fields.append(fields_item)

        def _parse_metadata(data: object) -> JsonArrowSchemaMetadata | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                metadata_type_0 = JsonArrowSchemaMetadata.from_dict(data)

                return metadata_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(JsonArrowSchemaMetadata | None | Unset, data)

        metadata = _parse_metadata(d.pop("metadata", UNSET))

        json_arrow_schema = cls(
            fields=fields,
            metadata=metadata,
        )

        json_arrow_schema.additional_properties = d
        return json_arrow_schema

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


from ..models.json_arrow_field import JsonArrowField
from ..models.json_arrow_schema_metadata import JsonArrowSchemaMetadata
