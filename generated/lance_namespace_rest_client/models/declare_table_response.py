from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.context import Context
    from ..models.declare_table_response_properties import DeclareTableResponseProperties
    from ..models.declare_table_response_storage_options import DeclareTableResponseStorageOptions


T = TypeVar("T", bound="DeclareTableResponse")


@_attrs_define
class DeclareTableResponse:
    """
    Attributes:
        context (Context | None | Unset):
        transaction_id (None | str | Unset):
        location (None | str | Unset):
        storage_options (DeclareTableResponseStorageOptions | None | Unset): Options handed to Lance for storage access,
            possibly with vended credentials.
        properties (DeclareTableResponseProperties | None | Unset): The table's properties; null when unsupported.
        managed_versioning (bool | None | Unset): When true, table versions must be managed through the namespace's
            table-version operations instead of Lance's own.
    """

    context: Context | None | Unset = UNSET
    transaction_id: None | str | Unset = UNSET
    location: None | str | Unset = UNSET
    storage_options: DeclareTableResponseStorageOptions | None | Unset = UNSET
    properties: DeclareTableResponseProperties | None | Unset = UNSET
    managed_versioning: bool | None | Unset = UNSET
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

        storage_options: dict[str, Any] | None | Unset
        if isinstance(self.storage_options, Unset):
            storage_options = UNSET
        elif isinstance(self.storage_options, DeclareTableResponseStorageOptions):
            storage_options = self.storage_options.to_dict()
        else:
            storage_options = self.storage_options

        properties: dict[str, Any] | None | Unset
        if isinstance(self.properties, Unset):
            properties = UNSET
        elif isinstance(self.properties, DeclareTableResponseProperties):
            properties = self.properties.to_dict()
        else:
            properties = self.properties

        managed_versioning: bool | None | Unset
        if isinstance(self.managed_versioning, Unset):
            managed_versioning = UNSET
        else:
            managed_versioning = self.managed_versioning

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if context is not UNSET:
            field_dict["context"] = context
        if transaction_id is not UNSET:
            field_dict["transaction_id"] = transaction_id
        if location is not UNSET:
            field_dict["location"] = location
        if storage_options is not UNSET:
            field_dict["storage_options"] = storage_options
        if properties is not UNSET:
            field_dict["properties"] = properties
        if managed_versioning is not UNSET:
            field_dict["managed_versioning"] = managed_versioning

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

        def _parse_storage_options(data: object) -> DeclareTableResponseStorageOptions | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                storage_options_type_0 = DeclareTableResponseStorageOptions.from_dict(data)

                return storage_options_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(DeclareTableResponseStorageOptions | None | Unset, data)

        storage_options = _parse_storage_options(d.pop("storage_options", UNSET))

        def _parse_properties(data: object) -> DeclareTableResponseProperties | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                properties_type_0 = DeclareTableResponseProperties.from_dict(data)

                return properties_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(DeclareTableResponseProperties | None | Unset, data)

        properties = _parse_properties(d.pop("properties", UNSET))

        managed_versioning = cast(bool | None | Unset, d.pop("managed_versioning", UNSET))

        declare_table_response = cls(
            context=context,
            transaction_id=transaction_id,
            location=location,
            storage_options=storage_options,
            properties=properties,
            managed_versioning=managed_versioning,
        )

        declare_table_response.additional_properties = d
        return declare_table_response

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
from ..models.declare_table_response_properties import DeclareTableResponseProperties
from ..models.declare_table_response_storage_options import DeclareTableResponseStorageOptions
