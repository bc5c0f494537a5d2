from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.fts_query import FtsQuery


T = TypeVar("T", bound="BooleanQuery")


@_attrs_define
class BooleanQuery:
    """
    Attributes:
        must (list[FtsQuery]):
        must_not (list[FtsQuery]):
        should (list[FtsQuery]):
    """

    must: list[FtsQuery]
    must_not: list[FtsQuery]
    should: list[FtsQuery]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        must = []
        for must_item_data in self.must:
            must_item = must_item_data.to_dict()
            must.append(must_item)

        must_not = []
        for must_not_item_data in self.must_not:
            must_not_item = must_not_item_data.to_dict()
            must_not.append(must_not_item)

        should = []
        for should_item_data in self.should:
            should_item = should_item_data.to_dict()
            should.append(should_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "must": must,
                "must_not": must_not,
                "should": should,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        must = []
        _must = d.pop("must")
        for must_item_data in _must:
            must_item = FtsQuery.from_dict(must_item_data)

            must.append(must_item)

        must_not = []
        _must_not = d.pop("must_not")
        for must_not_item_data in _must_not:
            must_not_item = FtsQuery.from_dict(must_not_item_data)

            must_not.append(must_not_item)

        should = []
        _should = d.pop("should")
        for should_item_data in _should:
            should_item = FtsQuery.from_dict(should_item_data)

            should.append(should_item)

        boolean_query = cls(
            must=must,
            must_not=must_not,
            should=should,
        )

        boolean_query.additional_properties = d
        return boolean_query

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


from ..models.fts_query import FtsQuery
