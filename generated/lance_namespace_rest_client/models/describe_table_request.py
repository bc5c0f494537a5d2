from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.context import Context
    from ..models.identity import Identity


T = TypeVar("T", bound="DescribeTableRequest")


@_attrs_define
class DescribeTableRequest:
    """
    Attributes:
        identity (Identity | Unset): Caller credentials. Over REST, `api_key` is sent as the `x-api-key` header and
            `auth_token` as `Authorization: Bearer <token>`.
        context (Context | Unset): Free-form string key/value pairs passed between caller and implementation. Over REST,
            request entries whose key starts with `header.` are sent as HTTP headers (prefix removed), and every response
            header comes back as an entry `header.<name>`.
        id (list[str] | Unset):
        version (int | Unset): Version to describe; the latest when absent.
        tag (str | Unset): Tag whose version to describe; excludes `version` and `branch`.
        branch (str | Unset): Branch to describe; the main branch when absent.
        with_table_uri (bool | Unset): Whether to return `table_uri` (server default false).
        load_detailed_metadata (bool | Unset): When true the response must include `version`, `schema`, `stats` etc.;
            when absent the server decides what to include.
        check_declared (bool | Unset): Whether to fill `is_only_declared` (server default false).
        vend_credentials (bool | Unset): Whether `storage_options` should include vended storage credentials; when
            absent the server decides.
    """

    identity: Identity | Unset = UNSET
    context: Context | Unset = UNSET
    id: list[str] | Unset = UNSET
    version: int | Unset = UNSET
    tag: str | Unset = UNSET
    branch: str | Unset = UNSET
    with_table_uri: bool | Unset = UNSET
    load_detailed_metadata: bool | Unset = UNSET
    check_declared: bool | Unset = UNSET
    vend_credentials: bool | Unset = UNSET
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

        version = self.version

        tag = self.tag

        branch = self.branch

        with_table_uri = self.with_table_uri

        load_detailed_metadata = self.load_detailed_metadata

        check_declared = self.check_declared

        vend_credentials = self.vend_credentials

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if identity is not UNSET:
            field_dict["identity"] = identity
        if context is not UNSET:
            field_dict["context"] = context
        if id is not UNSET:
            field_dict["id"] = id
        if version is not UNSET:
            field_dict["version"] = version
        if tag is not UNSET:
            field_dict["tag"] = tag
        if branch is not UNSET:
            field_dict["branch"] = branch
        if with_table_uri is not UNSET:
            field_dict["with_table_uri"] = with_table_uri
        if load_detailed_metadata is not UNSET:
            field_dict["load_detailed_metadata"] = load_detailed_metadata
        if check_declared is not UNSET:
            field_dict["check_declared"] = check_declared
        if vend_credentials is not UNSET:
            field_dict["vend_credentials"] = vend_credentials

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

        version = d.pop("version", UNSET)

        tag = d.pop("tag", UNSET)

        branch = d.pop("branch", UNSET)

        with_table_uri = d.pop("with_table_uri", UNSET)

        load_detailed_metadata = d.pop("load_detailed_metadata", UNSET)

        check_declared = d.pop("check_declared", UNSET)

        vend_credentials = d.pop("vend_credentials", UNSET)

        describe_table_request = cls(
            identity=identity,
            context=context,
            id=id,
            version=version,
            tag=tag,
            branch=branch,
            with_table_uri=with_table_uri,
            load_detailed_metadata=load_detailed_metadata,
            check_declared=check_declared,
            vend_credentials=vend_credentials,
        )

        describe_table_request.additional_properties = d
        return describe_table_request

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
