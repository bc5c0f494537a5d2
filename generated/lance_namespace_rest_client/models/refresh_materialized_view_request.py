from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.context import Context
    from ..models.identity import Identity


T = TypeVar("T", bound="RefreshMaterializedViewRequest")


@_attrs_define
class RefreshMaterializedViewRequest:
    """Request of RefreshMaterializedView.

    Attributes:
        identity (Identity | Unset): Caller credentials. Over REST, `api_key` is sent as the `x-api-key` header and
            `auth_token` as `Authorization: Bearer <token>`.
        context (Context | Unset): Free-form string key/value pairs passed between caller and implementation. Over REST,
            request entries whose key starts with `header.` are sent as HTTP headers (prefix removed), and every response
            header comes back as an entry `header.<name>`.
        id (list[str] | Unset):
        src_version (int | None | Unset):
        max_rows_per_fragment (int | None | Unset):
        concurrency (int | None | Unset):
        intra_applier_concurrency (int | None | Unset):
        source_task_size (int | None | Unset):
        cluster (None | str | Unset):
        output_limit (int | None | Unset):
        manifest (None | str | Unset):
    """

    identity: Identity | Unset = UNSET
    context: Context | Unset = UNSET
    id: list[str] | Unset = UNSET
    src_version: int | None | Unset = UNSET
    max_rows_per_fragment: int | None | Unset = UNSET
    concurrency: int | None | Unset = UNSET
    intra_applier_concurrency: int | None | Unset = UNSET
    source_task_size: int | None | Unset = UNSET
    cluster: None | str | Unset = UNSET
    output_limit: int | None | Unset = UNSET
    manifest: None | str | Unset = UNSET
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

        src_version: int | None | Unset
        if isinstance(self.src_version, Unset):
            src_version = UNSET
        else:
            src_version = self.src_version

        max_rows_per_fragment: int | None | Unset
        if isinstance(self.max_rows_per_fragment, Unset):
            max_rows_per_fragment = UNSET
        else:
            max_rows_per_fragment = self.max_rows_per_fragment

        concurrency: int | None | Unset
        if isinstance(self.concurrency, Unset):
            concurrency = UNSET
        else:
            concurrency = self.concurrency

        intra_applier_concurrency: int | None | Unset
        if isinstance(self.intra_applier_concurrency, Unset):
            intra_applier_concurrency = UNSET
        else:
            intra_applier_concurrency = self.intra_applier_concurrency

        source_task_size: int | None | Unset
        if isinstance(self.source_task_size, Unset):
            source_task_size = UNSET
        else:
            source_task_size = self.source_task_size

        cluster: None | str | Unset
        if isinstance(self.cluster, Unset):
            cluster = UNSET
        else:
            cluster = self.cluster

        output_limit: int | None | Unset
        if isinstance(self.output_limit, Unset):
            output_limit = UNSET
        else:
            output_limit = self.output_limit

        manifest: None | str | Unset
        if isinstance(self.manifest, Unset):
            manifest = UNSET
        else:
            manifest = self.manifest

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if identity is not UNSET:
            field_dict["identity"] = identity
        if context is not UNSET:
            field_dict["context"] = context
        if id is not UNSET:
            field_dict["id"] = id
        if src_version is not UNSET:
            field_dict["src_version"] = src_version
        if max_rows_per_fragment is not UNSET:
            field_dict["max_rows_per_fragment"] = max_rows_per_fragment
        if concurrency is not UNSET:
            field_dict["concurrency"] = concurrency
        if intra_applier_concurrency is not UNSET:
            field_dict["intra_applier_concurrency"] = intra_applier_concurrency
        if source_task_size is not UNSET:
            field_dict["source_task_size"] = source_task_size
        if cluster is not UNSET:
            field_dict["cluster"] = cluster
        if output_limit is not UNSET:
            field_dict["output_limit"] = output_limit
        if manifest is not UNSET:
            field_dict["manifest"] = manifest

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

        src_version = cast(int | None | Unset, d.pop("src_version", UNSET))

        max_rows_per_fragment = cast(int | None | Unset, d.pop("max_rows_per_fragment", UNSET))

        concurrency = cast(int | None | Unset, d.pop("concurrency", UNSET))

        intra_applier_concurrency = cast(int | None | Unset, d.pop("intra_applier_concurrency", UNSET))

        source_task_size = cast(int | None | Unset, d.pop("source_task_size", UNSET))

        cluster = cast(None | str | Unset, d.pop("cluster", UNSET))

        output_limit = cast(int | None | Unset, d.pop("output_limit", UNSET))

        manifest = cast(None | str | Unset, d.pop("manifest", UNSET))

        refresh_materialized_view_request = cls(
            identity=identity,
            context=context,
            id=id,
            src_version=src_version,
            max_rows_per_fragment=max_rows_per_fragment,
            concurrency=concurrency,
            intra_applier_concurrency=intra_applier_concurrency,
            source_task_size=source_task_size,
            cluster=cluster,
            output_limit=output_limit,
            manifest=manifest,
        )

        refresh_materialized_view_request.additional_properties = d
        return refresh_materialized_view_request

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
