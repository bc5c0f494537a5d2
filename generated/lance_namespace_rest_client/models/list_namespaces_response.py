from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.context import Context


T = TypeVar("T", bound="ListNamespacesResponse")


@_attrs_define
class ListNamespacesResponse:
    """
    Attributes:
        namespaces (list[str]): Child namespace names, relative to the parent `id`.
        context (Context | None | Unset):
        page_token (None | str | Unset): Opaque continuation token of a paginated listing. A response carries one when
            more items remain; pass it back unchanged to get the next page. A null, missing or empty token in a response
            means the listing is complete.
    """

    namespaces: list[str]
    context: Context | None | Unset = UNSET
    page_token: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        namespaces = self.namespaces

        context: dict[str, Any] | None | Unset
        if isinstance(self.context, Unset):
            context = UNSET
        elif isinstance(self.context, Context):
            context = self.context.to_dict()
        else:
            context = self.context

        page_token: None | str | Unset
        if isinstance(self.page_token, Unset):
            page_token = UNSET
        else:
            page_token = self.page_token

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "namespaces": namespaces,
            }
        )
        if context is not UNSET:
            field_dict["context"] = context
        if page_token is not UNSET:
            field_dict["page_token"] = page_token

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        namespaces = cast(list[str], d.pop("namespaces"))

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

        page_token = cast(None | str | Unset, d.pop("page_token", UNSET))

        list_namespaces_response = cls(
            namespaces=namespaces,
            context=context,
            page_token=page_token,
        )

        list_namespaces_response.additional_properties = d
        return list_namespaces_response

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
