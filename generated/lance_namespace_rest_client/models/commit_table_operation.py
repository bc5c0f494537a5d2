from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.batch_delete_table_versions_request import BatchDeleteTableVersionsRequest
    from ..models.create_table_version_request import CreateTableVersionRequest
    from ..models.declare_table_request import DeclareTableRequest
    from ..models.deregister_table_request import DeregisterTableRequest


T = TypeVar("T", bound="CommitTableOperation")


@_attrs_define
class CommitTableOperation:
    """
    Attributes:
        declare_table (DeclareTableRequest | Unset):
        create_table_version (CreateTableVersionRequest | Unset): Request of CreateTableVersion.
        delete_table_versions (BatchDeleteTableVersionsRequest | Unset): Request of BatchDeleteTableVersions.
        deregister_table (DeregisterTableRequest | Unset):
    """

    declare_table: DeclareTableRequest | Unset = UNSET
    create_table_version: CreateTableVersionRequest | Unset = UNSET
    delete_table_versions: BatchDeleteTableVersionsRequest | Unset = UNSET
    deregister_table: DeregisterTableRequest | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        declare_table: dict[str, Any] | Unset = UNSET
        if not isinstance(self.declare_table, Unset):
            declare_table = self.declare_table.to_dict()

        create_table_version: dict[str, Any] | Unset = UNSET
        if not isinstance(self.create_table_version, Unset):
            create_table_version = self.create_table_version.to_dict()

        delete_table_versions: dict[str, Any] | Unset = UNSET
        if not isinstance(self.delete_table_versions, Unset):
            delete_table_versions = self.delete_table_versions.to_dict()

        deregister_table: dict[str, Any] | Unset = UNSET
        if not isinstance(self.deregister_table, Unset):
            deregister_table = self.deregister_table.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if declare_table is not UNSET:
            field_dict["declare_table"] = declare_table
        if create_table_version is not UNSET:
            field_dict["create_table_version"] = create_table_version
        if delete_table_versions is not UNSET:
            field_dict["delete_table_versions"] = delete_table_versions
        if deregister_table is not UNSET:
            field_dict["deregister_table"] = deregister_table

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        _declare_table = d.pop("declare_table", UNSET)
        declare_table: DeclareTableRequest | Unset
        if isinstance(_declare_table, Unset):
            declare_table = UNSET
        else:
            declare_table = DeclareTableRequest.from_dict(_declare_table)

        _create_table_version = d.pop("create_table_version", UNSET)
        create_table_version: CreateTableVersionRequest | Unset
        if isinstance(_create_table_version, Unset):
            create_table_version = UNSET
        else:
            create_table_version = CreateTableVersionRequest.from_dict(_create_table_version)

        _delete_table_versions = d.pop("delete_table_versions", UNSET)
        delete_table_versions: BatchDeleteTableVersionsRequest | Unset
        if isinstance(_delete_table_versions, Unset):
            delete_table_versions = UNSET
        else:
            delete_table_versions = BatchDeleteTableVersionsRequest.from_dict(_delete_table_versions)

        _deregister_table = d.pop("deregister_table", UNSET)
        deregister_table: DeregisterTableRequest | Unset
        if isinstance(_deregister_table, Unset):
            deregister_table = UNSET
        else:
            deregister_table = DeregisterTableRequest.from_dict(_deregister_table)

        commit_table_operation = cls(
            declare_table=declare_table,
            create_table_version=create_table_version,
            delete_table_versions=delete_table_versions,
            deregister_table=deregister_table,
        )

        commit_table_operation.additional_properties = d
        return commit_table_operation

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


from ..models.batch_delete_table_versions_request import BatchDeleteTableVersionsRequest
from ..models.create_table_version_request import CreateTableVersionRequest
from ..models.declare_table_request import DeclareTableRequest
from ..models.deregister_table_request import DeregisterTableRequest
