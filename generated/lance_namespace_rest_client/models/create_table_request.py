from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.context import Context
    from ..models.create_table_request_properties import CreateTableRequestProperties
    from ..models.create_table_request_storage_options import CreateTableRequestStorageOptions
    from ..models.identity import Identity


T = TypeVar("T", bound="CreateTableRequest")


@_attrs_define
class CreateTableRequest:
    """Request of CreateTable.

    Attributes:
        identity (Identity | Unset): Caller credentials. Over REST, `api_key` is sent as the `x-api-key` header and
            `auth_token` as `Authorization: Bearer <token>`.
        context (Context | Unset): Free-form string key/value pairs passed between caller and implementation. Over REST,
            request entries whose key starts with `header.` are sent as HTTP headers (prefix removed), and every response
            header comes back as an entry `header.<name>`.
        id (list[str] | Unset):
        mode (str | Unset):
        properties (CreateTableRequestProperties | Unset):
        storage_options (CreateTableRequestStorageOptions | Unset):
    """

    identity: Identity | Unset = UNSET
    context: Context | Unset = UNSET
    id: list[str] | Unset = UNSET
    mode: str | Unset = UNSET
    properties: CreateTableRequestProperties | Unset = UNSET
    storage_options: CreateTableRequestStorageOptions | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        identity: dict[str, Any] | Unset = UNSET
        if not isinstance(self.identity, Unset):
            identity = self.identity.to_dict()

        context: dict[str, Any] | Unset = UNSET
        if not isinstance(self.context, Unset):
            context = self.context.to_dict()

        id: list[str] | Unset = UNSET
        if not isinstance(self.id, Unset):
            id = self.id

        mode = self.mode

        properties: dict[str, Any] | Unset = UNSET
        if not isinstance(self.properties, Unset):
            properties = self.properties.to_dict()

        storage_options: dict[str, Any] | Unset = UNSET
        if not isinstance(self.storage_options, Unset):
            storage_options = self.storage_options.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if identity is not UNSET:
            field_dict["identity"] = identity
        if context is not UNSET:
            field_dict["context"] = context
        if id is not UNSET:
            field_dict["id"] = id
        if mode is not UNSET:
            field_dict["mode"] = mode
        if properties is not UNSET:
            field_dict["properties"] = properties
        if storage_options is not UNSET:
            field_dict["storage_options"] = storage_options

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        _identity = d.pop("identity", UNSET)
        identity: Identity | Unset
        if isinstance(_identity, Unset):
            identity = UNSET
        else:
            identity = Identity.from_dict(_identity)

        _context = d.pop("context", UNSET)
        context: Context | Unset
        if isinstance(_context, Unset):
            context = UNSET
        else:
            context = Context.from_dict(_context)

        id = cast(list[str], d.pop("id", UNSET))

        mode = d.pop("mode", UNSET)

        _properties = d.pop("properties", UNSET)
        properties: CreateTableRequestProperties | Unset
        if isinstance(_properties, Unset):
            properties = UNSET
        else:
            properties = CreateTableRequestProperties.from_dict(_properties)

        _storage_options = d.pop("storage_options", UNSET)
        storage_options: CreateTableRequestStorageOptions | Unset
        if isinstance(_storage_options, Unset):
            storage_options = UNSET
        else:
            storage_options = CreateTableRequestStorageOptions.from_dict(_storage_options)

        create_table_request = cls(
            identity=identity,
            context=context,
            id=id,
            mode=mode,
            properties=properties,
            storage_options=storage_options,
        )

        create_table_request.additional_properties = d
        return create_table_request

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
from ..models.create_table_request_properties import CreateTableRequestProperties
from ..models.create_table_request_storage_options import CreateTableRequestStorageOptions
from ..models.identity import Identity
