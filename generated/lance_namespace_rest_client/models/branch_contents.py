from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.branch_contents_metadata import BranchContentsMetadata


T = TypeVar("T", bound="BranchContents")


@_attrs_define
class BranchContents:
    """
    Attributes:
        parent_version (int):
        create_at (int):
        manifest_size (int):
        parent_branch (None | str | Unset):
        metadata (BranchContentsMetadata | None | Unset):
    """

    parent_version: int
    create_at: int
    manifest_size: int
    parent_branch: None | str | Unset = UNSET
    metadata: BranchContentsMetadata | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        parent_version = self.parent_version

        create_at = self.create_at

        manifest_size = self.manifest_size

        parent_branch: None | str | Unset
        if isinstance(self.parent_branch, Unset):
            parent_branch = UNSET
        else:
            parent_branch = self.parent_branch

        metadata: dict[str, Any] | None | Unset
        if isinstance(self.metadata, Unset):
            metadata = UNSET
        elif isinstance(self.metadata, BranchContentsMetadata):
            metadata = self.metadata.to_dict()
        else:
            metadata = self.metadata

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "parentVersion": parent_version,
                "createAt": create_at,
                "manifestSize": manifest_size,
            }
        )
        if parent_branch is not UNSET:
            field_dict["parentBranch"] = parent_branch
        if metadata is not UNSET:
            field_dict["metadata"] = metadata

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        parent_version = d.pop("parentVersion")

        create_at = d.pop("createAt")

        manifest_size = d.pop("manifestSize")

        parent_branch = cast(None | str | Unset, d.pop("parentBranch", UNSET))

        def _parse_metadata(data: object) -> BranchContentsMetadata | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                metadata_type_0 = BranchContentsMetadata.from_dict(data)

                return metadata_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(BranchContentsMetadata | None | Unset, data)

        metadata = _parse_metadata(d.pop("metadata", UNSET))

        branch_contents = cls(
            parent_version=parent_version,
            create_at=create_at,
            manifest_size=manifest_size,
            parent_branch=parent_branch,
            metadata=metadata,
        )

        branch_contents.additional_properties = d
        return branch_contents

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


from ..models.branch_contents_metadata import BranchContentsMetadata
