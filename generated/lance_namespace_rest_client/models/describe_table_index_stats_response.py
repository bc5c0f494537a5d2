from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.context import Context


T = TypeVar("T", bound="DescribeTableIndexStatsResponse")


@_attrs_define
class DescribeTableIndexStatsResponse:
    """Answer of DescribeTableIndexStats.

    Attributes:
        context (Context | None | Unset):
        distance_type (None | str | Unset):
        index_type (None | str | Unset):
        num_indexed_rows (int | None | Unset):
        num_unindexed_rows (int | None | Unset):
        num_indices (int | None | Unset):
    """

    context: Context | None | Unset = UNSET
    distance_type: None | str | Unset = UNSET
    index_type: None | str | Unset = UNSET
    num_indexed_rows: int | None | Unset = UNSET
    num_unindexed_rows: int | None | Unset = UNSET
    num_indices: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        context: dict[str, Any] | None | Unset
        if isinstance(self.context, Unset):
            context = UNSET
        elif isinstance(self.context, Context):
            context = self.context.to_dict()
        else:
            context = self.context

        distance_type: None | str | Unset
        if isinstance(self.distance_type, Unset):
            distance_type = UNSET
        else:
            distance_type = self.distance_type

        index_type: None | str | Unset
        if isinstance(self.index_type, Unset):
            index_type = UNSET
        else:
            index_type = self.index_type

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

        num_indices: int | None | Unset
        if isinstance(self.num_indices, Unset):
            num_indices = UNSET
        else:
            num_indices = self.num_indices

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if context is not UNSET:
            field_dict["context"] = context
        if distance_type is not UNSET:
            field_dict["distance_type"] = distance_type
        if index_type is not UNSET:
            field_dict["index_type"] = index_type
        if num_indexed_rows is not UNSET:
            field_dict["num_indexed_rows"] = num_indexed_rows
        if num_unindexed_rows is not UNSET:
            field_dict["num_unindexed_rows"] = num_unindexed_rows
        if num_indices is not UNSET:
            field_dict["num_indices"] = num_indices

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

        distance_type = cast(None | str | Unset, d.pop("distance_type", UNSET))

        index_type = cast(None | str | Unset, d.pop("index_type", UNSET))

        num_indexed_rows = cast(int | None | Unset, d.pop("num_indexed_rows", UNSET))

        num_unindexed_rows = cast(int | None | Unset, d.pop("num_unindexed_rows", UNSET))

        num_indices = cast(int | None | Unset, d.pop("num_indices", UNSET))

        describe_table_index_stats_response = cls(
            context=context,
            distance_type=distance_type,
            index_type=index_type,
            num_indexed_rows=num_indexed_rows,
            num_unindexed_rows=num_unindexed_rows,
            num_indices=num_indices,
        )

        describe_table_index_stats_response.additional_properties = d
        return describe_table_index_stats_response

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
