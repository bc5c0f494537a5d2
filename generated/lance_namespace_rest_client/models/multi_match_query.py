from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.match_query import MatchQuery


T = TypeVar("T", bound="MultiMatchQuery")


@_attrs_define
class MultiMatchQuery:
    """
    Attributes:
        match_queries (list[MatchQuery]):
    """

    match_queries: list[MatchQuery]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        match_queries = []
        for match_queries_item_data in self.match_queries:
            match_queries_item = match_queries_item_data.to_dict()
            match_queries.append(match_queries_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "match_queries": match_queries,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        match_queries = []
        _match_queries = d.pop("match_queries")
        for match_queries_item_data in _match_queries:
            match_queries_item = MatchQuery.from_dict(match_queries_item_data)

            match_queries.append(match_queries_item)

        multi_match_query = cls(
            match_queries=match_queries,
        )

        multi_match_query.additional_properties = d
        return multi_match_query

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


from ..models.match_query import MatchQuery
