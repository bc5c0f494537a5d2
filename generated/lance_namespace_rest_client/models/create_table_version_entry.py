from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.create_table_version_entry_metadata import CreateTableVersionEntryMetadata


T = TypeVar("T", bound="CreateTableVersionEntry")


@_attrs_define
class CreateTableVersionEntry:
    """
    Attributes:
        id (list[str]):
        version (int):
        manifest_path (str):
        branch (str | Unset):
        manifest_size (int | Unset):
        e_tag (str | Unset):
        metadata (CreateTableVersionEntryMetadata | Unset):
        naming_scheme (str | Unset):
    """

    id: list[str]
    version: int
    manifest_path: str
    branch: str | Unset = UNSET
    manifest_size: int | Unset = UNSET
    e_tag: str | Unset = UNSET
    metadata: CreateTableVersionEntryMetadata | Unset = UNSET
    naming_scheme: str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        version = self.version

        manifest_path = self.manifest_path

        branch = self.branch

        manifest_size = self.manifest_size

        e_tag = self.e_tag

        metadata: dict[str, Any] | Unset = UNSET
        if not isinstance(self.metadata, Unset):
            metadata = self.metadata.to_dict()

        naming_scheme = self.naming_scheme

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "version": version,
                "manifest_path": manifest_path,
            }
        )
        if branch is not UNSET:
            field_dict["branch"] = branch
        if manifest_size is not UNSET:
            field_dict["manifest_size"] = manifest_size
        if e_tag is not UNSET:
            field_dict["e_tag"] = e_tag
        if metadata is not UNSET:
            field_dict["metadata"] = metadata
        if naming_scheme is not UNSET:
            field_dict["naming_scheme"] = naming_scheme

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        id = cast(list[str], d.pop("id"))

        version = d.pop("version")

        manifest_path = d.pop("manifest_path")

        branch = d.pop("branch", UNSET)

        manifest_size = d.pop("manifest_size", UNSET)

        e_tag = d.pop("e_tag", UNSET)

        _metadata = d.pop("metadata", UNSET)
        metadata: CreateTableVersionEntryMetadata | Unset
        if isinstance(_metadata, Unset):
            metadata = UNSET
        else:
            metadata = CreateTableVersionEntryMetadata.from_dict(_metadata)

        naming_scheme = d.pop("naming_scheme", UNSET)

        create_table_version_entry = cls(
            id=id,
            version=version,
            manifest_path=manifest_path,
            branch=branch,
            manifest_size=manifest_size,
            e_tag=e_tag,
            metadata=metadata,
            naming_scheme=naming_scheme,
        )

        create_table_version_entry.additional_properties = d
        return create_table_version_entry

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


from ..models.create_table_version_entry_metadata import CreateTableVersionEntryMetadata
