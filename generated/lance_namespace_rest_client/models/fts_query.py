from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.boolean_query import BooleanQuery
    from ..models.boost_query import BoostQuery
    from ..models.match_query import MatchQuery
    from ..models.multi_match_query import MultiMatchQuery
    from ..models.phrase_query import PhraseQuery


T = TypeVar("T", bound="FtsQuery")


@_attrs_define
class FtsQuery:
    """
    Attributes:
        match (MatchQuery | Unset):
        phrase (PhraseQuery | Unset):
        boost (BoostQuery | Unset):
        multi_match (MultiMatchQuery | Unset):
        boolean (BooleanQuery | Unset):
    """

    match: MatchQuery | Unset = UNSET
    phrase: PhraseQuery | Unset = UNSET
    boost: BoostQuery | Unset = UNSET
    multi_match: MultiMatchQuery | Unset = UNSET
    boolean: BooleanQuery | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        match: dict[str, Any] | Unset = UNSET
        if not isinstance(self.match, Unset):
            match = self.match.to_dict()

        phrase: dict[str, Any] | Unset = UNSET
        if not isinstance(self.phrase, Unset):
            phrase = self.phrase.to_dict()

        boost: dict[str, Any] | Unset = UNSET
        if not isinstance(self.boost, Unset):
            boost = self.boost.to_dict()

        multi_match: dict[str, Any] | Unset = UNSET
        if not isinstance(self.multi_match, Unset):
            multi_match = self.multi_match.to_dict()

        boolean: dict[str, Any] | Unset = UNSET
        if not isinstance(self.boolean, Unset):
            boolean = self.boolean.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if match is not UNSET:
            field_dict["match"] = match
        if phrase is not UNSET:
            field_dict["phrase"] = phrase
        if boost is not UNSET:
            field_dict["boost"] = boost
        if multi_match is not UNSET:
            field_dict["multi_match"] = multi_match
        if boolean is not UNSET:
            field_dict["boolean"] = boolean

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        _match = d.pop("match", UNSET)
        match: MatchQuery | Unset
        if isinstance(_match, Unset):
            match = UNSET
        else:
            match = MatchQuery.from_dict(_match)

        _phrase = d.pop("phrase", UNSET)
        phrase: PhraseQuery | Unset
        if isinstance(_phrase, Unset):
            phrase = UNSET
        else:
            phrase = PhraseQuery.from_dict(_phrase)

        _boost = d.pop("boost", UNSET)
        boost: BoostQuery | Unset
        if isinstance(_boost, Unset):
            boost = UNSET
        else:
            boost = BoostQuery.from_dict(_boost)

        _multi_match = d.pop("multi_match", UNSET)
        multi_match: MultiMatchQuery | Unset
        if isinstance(_multi_match, Unset):
            multi_match = UNSET
        else:
            multi_match = MultiMatchQuery.from_dict(_multi_match)

        _boolean = d.pop("boolean", UNSET)
        boolean: BooleanQuery | Unset
        if isinstance(_boolean, Unset):
            boolean = UNSET
        else:
            boolean = BooleanQuery.from_dict(_boolean)

        fts_query = cls(
            match=match,
            phrase=phrase,
            boost=boost,
            multi_match=multi_match,
            boolean=boolean,
        )

        fts_query.additional_properties = d
        return fts_query

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


from ..models.boolean_query import BooleanQuery
from ..models.boost_query import BoostQuery
from ..models.match_query import MatchQuery
from ..models.multi_match_query import MultiMatchQuery
from ..models.phrase_query import PhraseQuery
