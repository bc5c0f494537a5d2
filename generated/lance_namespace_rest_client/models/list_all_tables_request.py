from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.context import Context
    from ..models.identity import Identity


T = TypeVar("T", bound="ListAllTablesRequest")


@_attrs_define
class ListAllTablesRequest:
    """Request of ListAllTables (sent as query parameters).

    Attributes:
        identity (Identity | Unset): Caller credentials. Over REST, `api_key` is sent as the `x-api-key` header and
            `auth_token` as `Authorization: Bearer <token>`.
        context (Context | Unset): Free-form string key/value pairs passed between caller and implementation. Over REST,
            request entries whose key starts with `header.` are sent as HTTP headers (prefix removed), and every response
            header comes back as an entry `header.<name>`.
        page_token (None | str | Unset): Opaque continuation token of a paginated listing. A response carries one when
            more items remain; pass it back unchanged to get the next page. A null, missing or empty token in a response
            means the listing is complete.
        limit (int | None | Unset): Inclusive upper bound on the number of items in one page.
        delimiter (str | Unset): Delimiter for the returned string identifiers (server default `$`).
        include_declared (bool | Unset): Whether declared-only tables are listed as well (server default: true).
    """

    identity: Identity | Unset = UNSET
    context: Context | Unset = UNSET
    page_token: None | str | Unset = UNSET
    limit: int | None | Unset = UNSET
    delimiter: str | Unset = UNSET
    include_declared: bool | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        identity: dict[str, Any] | Unset = UNSET
        if not isinstance(self.identity, Unset):
            identity = self.identity.to_dict()

        context: dict[str, Any] | Unset = UNSET
        if not isinstance(self.context, Unset):
            context = self.context.to_dict()

        page_token: None | str | Unset
        if isinstance(self.page_token, Unset):
            page_token = UNSET
        else:
            page_token = self.page_token

        limit: int | None | Unset
        if isinstance(self.limit, Unset):
            limit = UNSET
        else:
            limit = self.limit

        delimiter = self.delimiter

        include_declared = self.include_declared

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if identity is not UNSET:
            field_dict["identity"] = identity
        if context is not UNSET:
            field_dict["context"] = context
        if page_token is not UNSET:
            field_dict["page_token"] = page_token
        if limit is not UNSET:
            field_dict["limit"] = limit
        if delimiter is not UNSET:
            field_dict["delimiter"] = delimiter
        if include_declared is not UNSET:
            field_dict["include_declared"] = include_declared

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        _identity = d.pop("identity", UNSET)
        identity: Identity | Unset
        if isinstance(_identity, Unset):
            identity = UNSET
        else:
            identity = Identity.from_dict(_identity)

        _context = d.pop("context", UNSET)
        context: Context | Unset
        if isinstance(_context, Unset):
            context = UNSET
        else:
            context = Context.from_dict(_context)

        page_token = cast(None | str | Unset, d.pop("page_token", UNSET))

        limit = cast(int | None | Unset, d.pop("limit", UNSET))

        delimiter = d.pop("delimiter", UNSET)

        include_declared = d.pop("include_declared", UNSET)

        list_all_tables_request = cls(
            identity=identity,
            context=context,
            page_token=page_token,
            limit=limit,
            delimiter=delimiter,
            include_declared=include_declared,
        )

        list_all_tables_request.additional_properties = d
        return list_all_tables_request

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
from ..models.identity import Identity
