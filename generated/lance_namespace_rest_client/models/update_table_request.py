from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.context import Context
    from ..models.identity import Identity
    from ..models.update_table_request_properties import UpdateTableRequestProperties


T = TypeVar("T", bound="UpdateTableRequest")


@_attrs_define
class UpdateTableRequest:
    """Request of UpdateTable.

    Attributes:
        updates (list[list[str]]):
        identity (Identity | Unset): Caller credentials. Over REST, `api_key` is sent as the `x-api-key` header and
            `auth_token` as `Authorization: Bearer <token>`.
        context (Context | Unset): Free-form string key/value pairs passed between caller and implementation. Over REST,
            request entries whose key starts with `header.` are sent as HTTP headers (prefix removed), and every response
            header comes back as an entry `header.<name>`.
        id (list[str] | Unset):
        branch (str | Unset):
        predicate (None | str | Unset):
        properties (UpdateTableRequestProperties | Unset):
    """

    updates: list[list[str]]
    identity: Identity | Unset = UNSET
    context: Context | Unset = UNSET
    id: list[str] | Unset = UNSET
    branch: str | Unset = UNSET
    predicate: None | str | Unset = UNSET
    properties: UpdateTableRequestProperties | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        updates = []
        for updates_item_data in self.updates:
            updates_item = updates_item_data

            updates.append(updates_item)

        identity: dict[str, Any] | Unset = UNSET
        if not isinstance(self.identity, Unset):
            identity = self.identity.to_dict()

        context: dict[str, Any] | Unset = UNSET
        if not isinstance(self.context, Unset):
            context = self.context.to_dict()

        id: list[str] | Unset = UNSET
        if not isinstance(self.id, Unset):
            id = self.id

        branch = self.branch

        predicate: None | str | Unset
        if isinstance(self.predicate, Unset):
            predicate = UNSET
        else:
            predicate = self.predicate

        properties: dict[str, Any] | Unset = UNSET
        if not isinstance(self.properties, Unset):
            properties = self.properties.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "updates": updates,
            }
        )
        if identity is not UNSET:
            field_dict["identity"] = identity
        if context is not UNSET:
            field_dict["context"] = context
        if id is not UNSET:
            field_dict["id"] = id
        if branch is not UNSET:
            field_dict["branch"] = branch
        if predicate is not UNSET:
            field_dict["predicate"] = predicate
        if properties is not UNSET:
            field_dict["properties"] = properties

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        updates = []
        _updates = d.pop("updates")
        for updates_item_data in _updates:
            updates_item = cast(list[str], updates_item_data)

            updates.append(updates_item)

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

        branch = d.pop("branch", UNSET)

        predicate = cast(None | str | Unset, d.pop("predicate", UNSET))

        _properties = d.pop("properties", UNSET)
        properties: UpdateTableRequestProperties | Unset
        if isinstance(_properties, Unset):
            properties = UNSET
        else:
            properties = UpdateTableRequestProperties.from_dict(_properties)

        update_table_request = cls(
            updates=updates,
            identity=identity,
            context=context,
            id=id,
            branch=branch,
            predicate=predicate,
            properties=properties,
        )

        update_table_request.additional_properties = d
        return update_table_request

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
from ..models.identity import Identity
from ..models.update_table_request_properties import UpdateTableRequestProperties
