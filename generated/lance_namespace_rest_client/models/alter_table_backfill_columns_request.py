from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.context import Context
    from ..models.identity import Identity


T = TypeVar("T", bound="AlterTableBackfillColumnsRequest")


@_attrs_define
class AlterTableBackfillColumnsRequest:
    """Request of AlterTableBackfillColumns.

    Attributes:
        column (str):
        identity (Identity | Unset): Caller credentials. Over REST, `api_key` is sent as the `x-api-key` header and
            `auth_token` as `Authorization: Bearer <token>`.
        context (Context | Unset): Free-form string key/value pairs passed between caller and implementation. Over REST,
            request entries whose key starts with `header.` are sent as HTTP headers (prefix removed), and every response
            header comes back as an entry `header.<name>`.
        id (list[str] | Unset):
        branch (str | Unset):
        where (None | str | Unset):
        concurrency (int | None | Unset):
        intra_applier_concurrency (int | None | Unset):
        min_checkpoint_size (int | None | Unset):
        max_checkpoint_size (int | None | Unset):
        batch_checkpoint_flush_interval_seconds (float | None | Unset):
        read_version (int | None | Unset):
        task_size (int | None | Unset):
        num_frags (int | None | Unset):
        checkpoint_size (int | None | Unset):
        commit_granularity (int | None | Unset):
        cluster (None | str | Unset):
        manifest (None | str | Unset):
    """

    column: str
    identity: Identity | Unset = UNSET
    context: Context | Unset = UNSET
    id: list[str] | Unset = UNSET
    branch: str | Unset = UNSET
    where: None | str | Unset = UNSET
    concurrency: int | None | Unset = UNSET
    intra_applier_concurrency: int | None | Unset = UNSET
    min_checkpoint_size: int | None | Unset = UNSET
    max_checkpoint_size: int | None | Unset = UNSET
    batch_checkpoint_flush_interval_seconds: float | None | Unset = UNSET
    read_version: int | None | Unset = UNSET
    task_size: int | None | Unset = UNSET
    num_frags: int | None | Unset = UNSET
    checkpoint_size: int | None | Unset = UNSET
    commit_granularity: int | None | Unset = UNSET
    cluster: None | str | Unset = UNSET
    manifest: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        column = self.column

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

        where: None | str | Unset
        if isinstance(self.where, Unset):
            where = UNSET
        else:
            where = self.where

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

        min_checkpoint_size: int | None | Unset
        if isinstance(self.min_checkpoint_size, Unset):
            min_checkpoint_size = UNSET
        else:
            min_checkpoint_size = self.min_checkpoint_size

        max_checkpoint_size: int | None | Unset
        if isinstance(self.max_checkpoint_size, Unset):
            max_checkpoint_size = UNSET
        else:
            max_checkpoint_size = self.max_checkpoint_size

        batch_checkpoint_flush_interval_seconds: float | None | Unset
        if isinstance(self.batch_checkpoint_flush_interval_seconds, Unset):
            batch_checkpoint_flush_interval_seconds = UNSET
        else:
            batch_checkpoint_flush_interval_seconds = self.batch_checkpoint_flush_interval_seconds

        read_version: int | None | Unset
        if isinstance(self.read_version, Unset):
            read_version = UNSET
        else:
            read_version = self.read_version

        task_size: int | None | Unset
        if isinstance(self.task_size, Unset):
            task_size = UNSET
        else:
            task_size = self.task_size

        num_frags: int | None | Unset
        if isinstance(self.num_frags, Unset):
            num_frags = UNSET
        else:
            num_frags = self.num_frags

        checkpoint_size: int | None | Unset
        if isinstance(self.checkpoint_size, Unset):
            checkpoint_size = UNSET
        else:
            checkpoint_size = self.checkpoint_size

        commit_granularity: int | None | Unset
        if isinstance(self.commit_granularity, Unset):
            commit_granularity = UNSET
        else:
            commit_granularity = self.commit_granularity

        cluster: None | str | Unset
        if isinstance(self.cluster, Unset):
            cluster = UNSET
        else:
            cluster = self.cluster

        manifest: None | str | Unset
        if isinstance(self.manifest, Unset):
            manifest = UNSET
        else:
            manifest = self.manifest

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "column": column,
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
        if where is not UNSET:
            field_dict["where"] = where
        if concurrency is not UNSET:
            field_dict["concurrency"] = concurrency
        if intra_applier_concurrency is not UNSET:
            field_dict["intra_applier_concurrency"] = intra_applier_concurrency
        if min_checkpoint_size is not UNSET:
            field_dict["min_checkpoint_size"] = min_checkpoint_size
        if max_checkpoint_size is not UNSET:
            field_dict["max_checkpoint_size"] = max_checkpoint_size
        if batch_checkpoint_flush_interval_seconds is not UNSET:
            field_dict["batch_checkpoint_flush_interval_seconds"] = batch_checkpoint_flush_interval_seconds
        if read_version is not UNSET:
            field_dict["read_version"] = read_version
        if task_size is not UNSET:
            field_dict["task_size"] = task_size
        if num_frags is not UNSET:
            field_dict["num_frags"] = num_frags
        if checkpoint_size is not UNSET:
            field_dict["checkpoint_size"] = checkpoint_size
        if commit_granularity is not UNSET:
            field_dict["commit_granularity"] = commit_granularity
        if cluster is not UNSET:
            field_dict["cluster"] = cluster
        if manifest is not UNSET:
            field_dict["manifest"] = manifest

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        column = d.pop("column")

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

        where = cast(None | str | Unset, d.pop("where", UNSET))

        concurrency = cast(int | None | Unset, d.pop("concurrency", UNSET))

        intra_applier_concurrency = cast(int | None | Unset, d.pop("intra_applier_concurrency", UNSET))

        min_checkpoint_size = cast(int | None | Unset, d.pop("min_checkpoint_size", UNSET))

        max_checkpoint_size = cast(int | None | Unset, d.pop("max_checkpoint_size", UNSET))

        batch_checkpoint_flush_interval_seconds = cast(
            float | None | Unset, d.pop("batch_checkpoint_flush_interval_seconds", UNSET)
        )

        read_version = cast(int | None | Unset, d.pop("read_version", UNSET))

        task_size = cast(int | None | Unset, d.pop("task_size", UNSET))

        num_frags = cast(int | None | Unset, d.pop("num_frags", UNSET))

        checkpoint_size = cast(int | None | Unset, d.pop("checkpoint_size", UNSET))

        commit_granularity = cast(int | None | Unset, d.pop("commit_granularity", UNSET))

        cluster = cast(None | str | Unset, d.pop("cluster", UNSET))

        manifest = cast(None | str | Unset, d.pop("manifest", UNSET))

        alter_table_backfill_columns_request = cls(
            column=column,
            identity=identity,
            context=context,
            id=id,
            branch=branch,
            where=where,
            concurrency=concurrency,
            intra_applier_concurrency=intra_applier_concurrency,
            min_checkpoint_size=min_checkpoint_size,
            max_checkpoint_size=max_checkpoint_size,
            batch_checkpoint_flush_interval_seconds=batch_checkpoint_flush_interval_seconds,
            read_version=read_version,
            task_size=task_size,
            num_frags=num_frags,
            checkpoint_size=checkpoint_size,
            commit_granularity=commit_granularity,
            cluster=cluster,
            manifest=manifest,
        )

        alter_table_backfill_columns_request.additional_properties = d
        return alter_table_backfill_columns_request

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
