from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.table_version_metadata import TableVersionMetadata


T = TypeVar("T", bound="TableVersion")


@_attrs_define
class TableVersion:
    """
    Attributes:
        version (int):
        manifest_path (str): Path of this version's manifest file.
        manifest_size (int | None | Unset): Manifest size in bytes.
        e_tag (None | str | Unset): ETag of the manifest, for optimistic concurrency on object stores.
        timestamp_millis (int | None | Unset): Commit time, milliseconds since the Unix epoch.
        metadata (None | TableVersionMetadata | Unset): Free-form version metadata.
    """

    version: int
    manifest_path: str
    manifest_size: int | None | Unset = UNSET
    e_tag: None | str | Unset = UNSET
    timestamp_millis: int | None | Unset = UNSET
    metadata: None | TableVersionMetadata | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        version = self.version

        manifest_path = self.manifest_path

        manifest_size: int | None | Unset
        if isinstance(self.manifest_size, Unset):
            manifest_size = UNSET
        else:
            manifest_size = self.manifest_size

        e_tag: None | str | Unset
        if isinstance(self.e_tag, Unset):
            e_tag = UNSET
        else:
            e_tag = self.e_tag

        timestamp_millis: int | None | Unset
        if isinstance(self.timestamp_millis, Unset):
            timestamp_millis = UNSET
        else:
            timestamp_millis = self.timestamp_millis

        metadata: dict[str, Any] | None | Unset
        if isinstance(self.metadata, Unset):
            metadata = UNSET
        elif isinstance(self.metadata, TableVersionMetadata):
            metadata = self.metadata.to_dict()
        else:
            metadata = self.metadata

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "version": version,
                "manifest_path": manifest_path,
            }
        )
        if manifest_size is not UNSET:
            field_dict["manifest_size"] = manifest_size
        if e_tag is not UNSET:
            field_dict["e_tag"] = e_tag
        if timestamp_millis is not UNSET:
            field_dict["timestamp_millis"] = timestamp_millis
        if metadata is not UNSET:
            field_dict["metadata"] = metadata

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        version = d.pop("version")

        manifest_path = d.pop("manifest_path")

        manifest_size = cast(int | None | Unset, d.pop("manifest_size", UNSET))

        e_tag = cast(None | str | Unset, d.pop("e_tag", UNSET))

        timestamp_millis = cast(int | None | Unset, d.pop("timestamp_millis", UNSET))

        def _parse_metadata(data: object) -> None | TableVersionMetadata | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                metadata_type_0 = TableVersionMetadata.from_dict(data)

                return metadata_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | TableVersionMetadata | Unset, data)

        metadata = _parse_metadata(d.pop("metadata", UNSET))

        table_version = cls(
            version=version,
            manifest_path=manifest_path,
            manifest_size=manifest_size,
            e_tag=e_tag,
            timestamp_millis=timestamp_millis,
            metadata=metadata,
        )

        table_version.additional_properties = d
        return table_version

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


from ..models.table_version_metadata import TableVersionMetadata
