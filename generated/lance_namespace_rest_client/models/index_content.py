from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="IndexContent")


@_attrs_define
class IndexContent:
    """
    Attributes:
        index_name (str):
        index_uuid (str):
        columns (list[str]):
        status (str):
        index_type (None | str | Unset):
        type_url (None | str | Unset):
        num_indexed_rows (int | None | Unset):
        num_unindexed_rows (int | None | Unset):
        size_bytes (int | None | Unset):
        num_segments (int | None | Unset):
        created_at (datetime.datetime | None | Unset):
        index_version (int | None | Unset):
        index_details (None | str | Unset):
    """

    index_name: str
    index_uuid: str
    columns: list[str]
    status: str
    index_type: None | str | Unset = UNSET
    type_url: None | str | Unset = UNSET
    num_indexed_rows: int | None | Unset = UNSET
    num_unindexed_rows: int | None | Unset = UNSET
    size_bytes: int | None | Unset = UNSET
    num_segments: int | None | Unset = UNSET
    created_at: datetime.datetime | None | Unset = UNSET
    index_version: int | None | Unset = UNSET
    index_details: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        index_name = self.index_name

        index_uuid = self.index_uuid

        columns = self.columns

        status = self.status

        index_type: None | str | Unset
        if isinstance(self.index_type, Unset):
            index_type = UNSET
        else:
            index_type = self.index_type

        type_url: None | str | Unset
        if isinstance(self.type_url, Unset):
            type_url = UNSET
        else:
            type_url = self.type_url

        num_indexed_rows: int | None | Unset
        if isinstance(self.num_indexed_rows, Unset):
            num_indexed_rows = UNSET
        else:
            num_indexed_rows = self.num_indexed_rows

        num_unindexed_rows: int | None | Unset
        if isinstance(self.num_unindexed_rows, Unset):
            num_unindexed_rows = UNSET
        else:
            num_unindexed_rows = self.num_unindexed_rows

        size_bytes: int | None | Unset
        if isinstance(self.size_bytes, Unset):
            size_bytes = UNSET
        else:
            size_bytes = self.size_bytes

        num_segments: int | None | Unset
        if isinstance(self.num_segments, Unset):
            num_segments = UNSET
        else:
            num_segments = self.num_segments

        created_at: None | str | Unset
        if isinstance(self.created_at, Unset):
            created_at = UNSET
        elif isinstance(self.created_at, datetime.datetime):
            created_at = self.created_at.isoformat()
        else:
            created_at = self.created_at

        index_version: int | None | Unset
        if isinstance(self.index_version, Unset):
            index_version = UNSET
        else:
            index_version = self.index_version

        index_details: None | str | Unset
        if isinstance(self.index_details, Unset):
            index_details = UNSET
        else:
            index_details = self.index_details

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "index_name": index_name,
                "index_uuid": index_uuid,
                "columns": columns,
                "status": status,
            }
        )
        if index_type is not UNSET:
            field_dict["index_type"] = index_type
        if type_url is not UNSET:
            field_dict["type_url"] = type_url
        if num_indexed_rows is not UNSET:
            field_dict["num_indexed_rows"] = num_indexed_rows
        if num_unindexed_rows is not UNSET:
            field_dict["num_unindexed_rows"] = num_unindexed_rows
        if size_bytes is not UNSET:
            field_dict["size_bytes"] = size_bytes
        if num_segments is not UNSET:
            field_dict["num_segments"] = num_segments
        if created_at is not UNSET:
            field_dict["created_at"] = created_at
        if index_version is not UNSET:
            field_dict["index_version"] = index_version
        if index_details is not UNSET:
            field_dict["index_details"] = index_details

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        index_name = d.pop("index_name")

        index_uuid = d.pop("index_uuid")

        columns = cast(list[str], d.pop("columns"))

        status = d.pop("status")

        index_type = cast(None | str | Unset, d.pop("index_type", UNSET))

        type_url = cast(None | str | Unset, d.pop("type_url", UNSET))

        num_indexed_rows = cast(int | None | Unset, d.pop("num_indexed_rows", UNSET))

        num_unindexed_rows = cast(int | None | Unset, d.pop("num_unindexed_rows", UNSET))

        size_bytes = cast(int | None | Unset, d.pop("size_bytes", UNSET))

        num_segments = cast(int | None | Unset, d.pop("num_segments", UNSET))

        def _parse_created_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                created_at_type_0 = datetime.datetime.fromisoformat(data)

                return created_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        created_at = _parse_created_at(d.pop("created_at", UNSET))

        index_version = cast(int | None | Unset, d.pop("index_version", UNSET))

        index_details = cast(None | str | Unset, d.pop("index_details", UNSET))

        index_content = cls(
            index_name=index_name,
            index_uuid=index_uuid,
            columns=columns,
            status=status,
            index_type=index_type,
            type_url=type_url,
            num_indexed_rows=num_indexed_rows,
            num_unindexed_rows=num_unindexed_rows,
            size_bytes=size_bytes,
            num_segments=num_segments,
            created_at=created_at,
            index_version=index_version,
            index_details=index_details,
        )

        index_content.additional_properties = d
        return index_content

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
