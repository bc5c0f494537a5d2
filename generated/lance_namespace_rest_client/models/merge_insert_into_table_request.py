from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.context import Context
    from ..models.identity import Identity


T = TypeVar("T", bound="MergeInsertIntoTableRequest")


@_attrs_define
class MergeInsertIntoTableRequest:
    """Request of MergeInsertIntoTable.

    Attributes:
        identity (Identity | Unset): Caller credentials. Over REST, `api_key` is sent as the `x-api-key` header and
            `auth_token` as `Authorization: Bearer <token>`.
        context (Context | Unset): Free-form string key/value pairs passed between caller and implementation. Over REST,
            request entries whose key starts with `header.` are sent as HTTP headers (prefix removed), and every response
            header comes back as an entry `header.<name>`.
        id (list[str] | Unset):
        branch (str | Unset):
        on (list[str] | Unset): The key columns rows are matched on; several make a composite key (a row matches when
            all of them are equal).
        when_matched_update_all (bool | Unset):
        when_matched_update_all_filt (str | Unset):
        when_not_matched_insert_all (bool | Unset):
        when_not_matched_by_source_delete (bool | Unset):
        when_not_matched_by_source_delete_filt (str | Unset):
        timeout (str | Unset):
        use_index (bool | Unset):
    """

    identity: Identity | Unset = UNSET
    context: Context | Unset = UNSET
    id: list[str] | Unset = UNSET
    branch: str | Unset = UNSET
    on: list[str] | Unset = UNSET
    when_matched_update_all: bool | Unset = UNSET
    when_matched_update_all_filt: str | Unset = UNSET
    when_not_matched_insert_all: bool | Unset = UNSET
    when_not_matched_by_source_delete: bool | Unset = UNSET
    when_not_matched_by_source_delete_filt: str | Unset = UNSET
    timeout: str | Unset = UNSET
    use_index: bool | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        identity: dict[str, Any] | Unset = UNSET
        if not isinstance(self.identity, Unset):
            identity = self.identity.to_dict()

        context: dict[str, Any] | Unset = UNSET
        if not isinstance(self.context, Unset):
            context = self.context.to_dict()

        id: list[str] | Unset = UNSET
        if not isinstance(self.id, Unset):
            id = self.id

        branch = self.branch

        on: list[str] | Unset = UNSET
        if not isinstance(self.on, Unset):
            on = self.on

        when_matched_update_all = self.when_matched_update_all

        when_matched_update_all_filt = self.when_matched_update_all_filt

        when_not_matched_insert_all = self.when_not_matched_insert_all

        when_not_matched_by_source_delete = self.when_not_matched_by_source_delete

        when_not_matched_by_source_delete_filt = self.when_not_matched_by_source_delete_filt

        timeout = self.timeout

        use_index = self.use_index

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if identity is not UNSET:
            field_dict["identity"] = identity
        if context is not UNSET:
            field_dict["context"] = context
        if id is not UNSET:
            field_dict["id"] = id
        if branch is not UNSET:
            field_dict["branch"] = branch
        if on is not UNSET:
            field_dict["on"] = on
        if when_matched_update_all is not UNSET:
            field_dict["when_matched_update_all"] = when_matched_update_all
        if when_matched_update_all_filt is not UNSET:
            field_dict["when_matched_update_all_filt"] = when_matched_update_all_filt
        if when_not_matched_insert_all is not UNSET:
            field_dict["when_not_matched_insert_all"] = when_not_matched_insert_all
        if when_not_matched_by_source_delete is not UNSET:
            field_dict["when_not_matched_by_source_delete"] = when_not_matched_by_source_delete
        if when_not_matched_by_source_delete_filt is not UNSET:
            field_dict["when_not_matched_by_source_delete_filt"] = when_not_matched_by_source_delete_filt
        if timeout is not UNSET:
            field_dict["timeout"] = timeout
        if use_index is not UNSET:
            field_dict["use_index"] = use_index

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

        id = cast(list[str], d.pop("id", UNSET))

        branch = d.pop("branch", UNSET)

        on = cast(list[str], d.pop("on", UNSET))

        when_matched_update_all = d.pop("when_matched_update_all", UNSET)

        when_matched_update_all_filt = d.pop("when_matched_update_all_filt", UNSET)

        when_not_matched_insert_all = d.pop("when_not_matched_insert_all", UNSET)

        when_not_matched_by_source_delete = d.pop("when_not_matched_by_source_delete", UNSET)

        when_not_matched_by_source_delete_filt = d.pop("when_not_matched_by_source_delete_filt", UNSET)

        timeout = d.pop("timeout", UNSET)

        use_index = d.pop("use_index", UNSET)

        merge_insert_into_table_request = cls(
            identity=identity,
            context=context,
            id=id,
            branch=branch,
            on=on,
            when_matched_update_all=when_matched_update_all,
            when_matched_update_all_filt=when_matched_update_all_filt,
            when_not_matched_insert_all=when_not_matched_insert_all,
            when_not_matched_by_source_delete=when_not_matched_by_source_delete,
            when_not_matched_by_source_delete_filt=when_not_matched_by_source_delete_filt,
            timeout=timeout,
            use_index=use_index,
        )

        merge_insert_into_table_request.additional_properties = d
        return merge_insert_into_table_request

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
