from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.commit_table_operation import CommitTableOperation
    from ..models.context import Context
    from ..models.identity import Identity


T = TypeVar("T", bound="BatchCommitTablesRequest")


@_attrs_define
class BatchCommitTablesRequest:
    """Request of BatchCommitTables.

    Attributes:
        operations (list[CommitTableOperation]):
        identity (Identity | Unset): Caller credentials. Over REST, `api_key` is sent as the `x-api-key` header and
            `auth_token` as `Authorization: Bearer <token>`.
        context (Context | Unset): Free-form string key/value pairs passed between caller and implementation. Over REST,
            request entries whose key starts with `header.` are sent as HTTP headers (prefix removed), and every response
            header comes back as an entry `header.<name>`.
    """

    operations: list[CommitTableOperation]
    identity: Identity | Unset = UNSET
    context: Context | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        operations = []
        for operations_item_data in self.operations:
            operations_item = operations_item_data.to_dict()
            operations.append(operations_item)

        identity: dict[str, Any] | Unset = UNSET
        if not isinstance(self.identity, Unset):
            identity = self.identity.to_dict()

        context: dict[str, Any] | Unset = UNSET
        if not isinstance(self.context, Unset):
            context = self.context.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "operations": operations,
            }
        )
        if identity is not UNSET:
            field_dict["identity"] = identity
        if context is not UNSET:
            field_dict["context"] = context

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        operations = []
        _operations = d.pop("operations")
        for operations_item_data in _operations:
            operations_item = CommitTableOperation.from_dict(operations_item_data)

            operations.append(operations_item)

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

        batch_commit_tables_request = cls(
            operations=operations,
            identity=identity,
            context=context,
        )

        batch_commit_tables_request.additional_properties = d
        return batch_commit_tables_request

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


from ..models.commit_table_operation import CommitTableOperation
from ..models.context import Context
from ..models.identity import Identity
