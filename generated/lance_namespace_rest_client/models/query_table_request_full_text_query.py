from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.string_fts_query import StringFtsQuery
    from ..models.structured_fts_query import StructuredFtsQuery


T = TypeVar("T", bound="QueryTableRequestFullTextQuery")


@_attrs_define
class QueryTableRequestFullTextQuery:
    """
    Attributes:
        string_query (StringFtsQuery | Unset):
        structured_query (StructuredFtsQuery | Unset):
    """

    string_query: StringFtsQuery | Unset = UNSET
    structured_query: StructuredFtsQuery | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        string_query: dict[str, Any] | Unset = UNSET
        if not isinstance(self.string_query, Unset):
            string_query = self.string_query.to_dict()

        structured_query: dict[str, Any] | Unset = UNSET
        if not isinstance(self.structured_query, Unset):
            structured_query = self.structured_query.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if string_query is not UNSET:
            field_dict["string_query"] = string_query
        if structured_query is not UNSET:
            field_dict["structured_query"] = structured_query

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        _string_query = d.pop("string_query", UNSET)
        string_query: StringFtsQuery | Unset
        if isinstance(_string_query, Unset):
            string_query = UNSET
        else:
            string_query = StringFtsQuery.from_dict(_string_query)

        _structured_query = d.pop("structured_query", UNSET)
        structured_query: StructuredFtsQuery | Unset
        if isinstance(_structured_query, Unset):
            structured_query = UNSET
        else:
            structured_query = StructuredFtsQuery.from_dict(_structured_query)

        query_table_request_full_text_query = cls(
            string_query=string_query,
            structured_query=structured_query,
        )

        query_table_request_full_text_query.additional_properties = d
        return query_table_request_full_text_query

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


from ..models.string_fts_query import StringFtsQuery
from ..models.structured_fts_query import StructuredFtsQuery
