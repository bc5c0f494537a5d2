from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.context import Context
    from ..models.register_table_response_properties import RegisterTableResponseProperties


T = TypeVar("T", bound="RegisterTableResponse")


@_attrs_define
class RegisterTableResponse:
    """
    Attributes:
        context (Context | None | Unset):
        transaction_id (None | str | Unset):
        location (None | str | Unset):
        properties (None | RegisterTableResponseProperties | Unset): The table's properties; null when unsupported.
    """

    context: Context | None | Unset = UNSET
    transaction_id: None | str | Unset = UNSET
    location: None | str | Unset = UNSET
    properties: None | RegisterTableResponseProperties | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        context: dict[str, Any] | None | Unset
        if isinstance(self.context, Unset):
            context = UNSET
        elif isinstance(self.context, Context):
            context = self.context.to_dict()
        else:
            context = self.context

        transaction_id: None | str | Unset
        if isinstance(self.transaction_id, Unset):
            transaction_id = UNSET
        else:
            transaction_id = self.transaction_id

        location: None | str | Unset
        if isinstance(self.location, Unset):
            location = UNSET
        else:
            location = self.location

        properties: dict[str, Any] | None | Unset
        if isinstance(self.properties, Unset):
            properties = UNSET
        elif isinstance(self.properties, RegisterTableResponseProperties):
            properties = self.properties.to_dict()
        else:
            properties = self.properties

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if context is not UNSET:
            field_dict["context"] = context
        if transaction_id is not UNSET:
            field_dict["transaction_id"] = transaction_id
        if location is not UNSET:
            field_dict["location"] = location
        if properties is not UNSET:
            field_dict["properties"] = properties

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)

        def _parse_context(data: object) -> Context | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                context_type_0 = Context.from_dict(data)

                return context_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(Context | None | Unset, data)

        context = _parse_context(d.pop("context", UNSET))

        transaction_id = cast(None | str | Unset, d.pop("transaction_id", UNSET))

        location = cast(None | str | Unset, d.pop("location", UNSET))

        def _parse_properties(data: object) -> None | RegisterTableResponseProperties | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                properties_type_0 = RegisterTableResponseProperties.from_dict(data)

                return properties_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | RegisterTableResponseProperties | Unset, data)

        properties = _parse_properties(d.pop("properties", UNSET))

        register_table_response = cls(
            context=context,
            transaction_id=transaction_id,
            location=location,
            properties=properties,
        )

        register_table_response.additional_properties = d
        return register_table_response

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


from ..models.context import Context
from ..models.register_table_response_properties import RegisterTableResponseProperties
