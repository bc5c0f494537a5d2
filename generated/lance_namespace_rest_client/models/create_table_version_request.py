from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.context import Context
    from ..models.create_table_version_request_metadata import CreateTableVersionRequestMetadata
    from ..models.identity import Identity


T = TypeVar("T", bound="CreateTableVersionRequest")


@_attrs_define
class CreateTableVersionRequest:
    """Request of CreateTableVersion.

    Attributes:
        version (int):
        manifest_path (str):
        identity (Identity | Unset): Caller credentials. Over REST, `api_key` is sent as the `x-api-key` header and
            `auth_token` as `Authorization: Bearer <token>`.
        context (Context | Unset): Free-form string key/value pairs passed between caller and implementation. Over REST,
            request entries whose key starts with `header.` are sent as HTTP headers (prefix removed), and every response
            header comes back as an entry `header.<name>`.
        id (list[str] | Unset):
        branch (str | Unset):
        manifest_size (int | Unset):
        e_tag (str | Unset):
        metadata (CreateTableVersionRequestMetadata | Unset):
        naming_scheme (str | Unset):
    """

    version: int
    manifest_path: str
    identity: Identity | Unset = UNSET
    context: Context | Unset = UNSET
    id: list[str] | Unset = UNSET
    branch: str | Unset = UNSET
    manifest_size: int | Unset = UNSET
    e_tag: str | Unset = UNSET
    metadata: CreateTableVersionRequestMetadata | Unset = UNSET
    naming_scheme: str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        version = self.version

        manifest_path = self.manifest_path

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

        manifest_size = self.manifest_size

        e_tag = self.e_tag

        metadata: dict[str, Any] | Unset = UNSET
        if not isinstance(self.metadata, Unset):
            metadata = self.metadata.to_dict()

        naming_scheme = self.naming_scheme

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "version": version,
                "manifest_path": manifest_path,
            }
        )
        if identity is not UNSET:
            field_dict["identity"] = identity
        if context is not UNSET:
            field_dict["context"] = context
        if id is not UNSET:
            field_dict["id"] = id
        if branch is not UNSET:
            field_dict["branch"] = branch
        if manifest_size is not UNSET:
            field_dict["manifest_size"] = manifest_size
        if e_tag is not UNSET:
            field_dict["e_tag"] = e_tag
        if metadata is not UNSET:
            field_dict["metadata"] = metadata
        if naming_scheme is not UNSET:
            field_dict["naming_scheme"] = naming_scheme

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        version = d.pop("version")

        manifest_path = d.pop("manifest_path")

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

        manifest_size = d.pop("manifest_size", UNSET)

        e_tag = d.pop("e_tag", UNSET)

        _metadata = d.pop("metadata", UNSET)
        metadata: CreateTableVersionRequestMetadata | Unset
        if isinstance(_metadata, Unset):
            metadata = UNSET
        else:
            metadata = CreateTableVersionRequestMetadata.from_dict(_metadata)

        naming_scheme = d.pop("naming_scheme", UNSET)

        create_table_version_request = cls(
            version=version,
            manifest_path=manifest_path,
            identity=identity,
            context=context,
            id=id,
            branch=branch,
            manifest_size=manifest_size,
            e_tag=e_tag,
            metadata=metadata,
            naming_scheme=naming_scheme,
        )

        create_table_version_request.additional_properties = d
        return create_table_version_request

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
from ..models.create_table_version_request_metadata import CreateTableVersionRequestMetadata
from ..models.identity import Identity
