from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.batch_delete_table_versions_response import BatchDeleteTableVersionsResponse
    from ..models.create_table_version_response import CreateTableVersionResponse
    from ..models.declare_table_response import DeclareTableResponse
    from ..models.deregister_table_response import DeregisterTableResponse


T = TypeVar("T", bound="CommitTableResult")


@_attrs_define
class CommitTableResult:
    """
    Attributes:
        declare_table (DeclareTableResponse | None | Unset):
        create_table_version (CreateTableVersionResponse | None | Unset):
        delete_table_versions (BatchDeleteTableVersionsResponse | None | Unset):
        deregister_table (DeregisterTableResponse | None | Unset):
    """

    declare_table: DeclareTableResponse | None | Unset = UNSET
    create_table_version: CreateTableVersionResponse | None | Unset = UNSET
    delete_table_versions: BatchDeleteTableVersionsResponse | None | Unset = UNSET
    deregister_table: DeregisterTableResponse | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        declare_table: dict[str, Any] | None | Unset
        if isinstance(self.declare_table, Unset):
            declare_table = UNSET
        elif isinstance(self.declare_table, DeclareTableResponse):
            declare_table = self.declare_table.to_dict()
        else:
            declare_table = self.declare_table

        create_table_version: dict[str, Any] | None | Unset
        if isinstance(self.create_table_version, Unset):
            create_table_version = UNSET
        elif isinstance(self.create_table_version, CreateTableVersionResponse):
            create_table_version = self.create_table_version.to_dict()
        else:
            create_table_version = self.create_table_version

        delete_table_versions: dict[str, Any] | None | Unset
        if isinstance(self.delete_table_versions, Unset):
            delete_table_versions = UNSET
        elif isinstance(self.delete_table_versions, BatchDeleteTableVersionsResponse):
            delete_table_versions = self.delete_table_versions.to_dict()
        else:
            delete_table_versions = self.delete_table_versions

        deregister_table: dict[str, Any] | None | Unset
        if isinstance(self.deregister_table, Unset):
            deregister_table = UNSET
        elif isinstance(self.deregister_table, DeregisterTableResponse):
            deregister_table = self.deregister_table.to_dict()
        else:
            deregister_table = self.deregister_table

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

        def _parse_declare_table(data: object) -> DeclareTableResponse | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                declare_table_type_0 = DeclareTableResponse.from_dict(data)

                return declare_table_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(DeclareTableResponse | None | Unset, data)

        declare_table = _parse_declare_table(d.pop("declare_table", UNSET))

        def _parse_create_table_version(data: object) -> CreateTableVersionResponse | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                create_table_version_type_0 = CreateTableVersionResponse.from_dict(data)

                return create_table_version_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(CreateTableVersionResponse | None | Unset, data)

        create_table_version = _parse_create_table_version(d.pop("create_table_version", UNSET))

        def _parse_delete_table_versions(data: object) -> BatchDeleteTableVersionsResponse | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                delete_table_versions_type_0 = BatchDeleteTableVersionsResponse.from_dict(data)

                return delete_table_versions_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(BatchDeleteTableVersionsResponse | None | Unset, data)

        delete_table_versions = _parse_delete_table_versions(d.pop("delete_table_versions", UNSET))

        def _parse_deregister_table(data: object) -> DeregisterTableResponse | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                deregister_table_type_0 = DeregisterTableResponse.from_dict(data)

                return deregister_table_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(DeregisterTableResponse | None | Unset, data)

        deregister_table = _parse_deregister_table(d.pop("deregister_table", UNSET))

        commit_table_result = cls(
            declare_table=declare_table,
            create_table_version=create_table_version,
            delete_table_versions=delete_table_versions,
            deregister_table=deregister_table,
        )

        commit_table_result.additional_properties = d
        return commit_table_result

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


from ..models.batch_delete_table_versions_response import BatchDeleteTableVersionsResponse
from ..models.create_table_version_response import CreateTableVersionResponse
from ..models.declare_table_response import DeclareTableResponse
from ..models.deregister_table_response import DeregisterTableResponse
