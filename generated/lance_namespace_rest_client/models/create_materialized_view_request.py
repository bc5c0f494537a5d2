from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.create_materialized_view_request_kind import CreateMaterializedViewRequestKind
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.context import Context
    from ..models.identity import Identity
    from ..models.materialized_view_udtf_entry import MaterializedViewUdtfEntry


T = TypeVar("T", bound="CreateMaterializedViewRequest")


@_attrs_define
class CreateMaterializedViewRequest:
    """Request of CreateMaterializedView.

    Attributes:
        kind (CreateMaterializedViewRequestKind):
        source_query (str):
        output_schema (str):
        identity (Identity | Unset): Caller credentials. Over REST, `api_key` is sent as the `x-api-key` header and
            `auth_token` as `Authorization: Bearer <token>`.
        context (Context | Unset): Free-form string key/value pairs passed between caller and implementation. Over REST,
            request entries whose key starts with `header.` are sent as HTTP headers (prefix removed), and every response
            header comes back as an entry `header.<name>`.
        id (list[str] | Unset):
        udtf_spec (MaterializedViewUdtfEntry | None | Unset):
        with_no_data (bool | Unset):
        auto_refresh (bool | None | Unset):
    """

    kind: CreateMaterializedViewRequestKind
    source_query: str
    output_schema: str
    identity: Identity | Unset = UNSET
    context: Context | Unset = UNSET
    id: list[str] | Unset = UNSET
    udtf_spec: MaterializedViewUdtfEntry | None | Unset = UNSET
    with_no_data: bool | Unset = UNSET
    auto_refresh: bool | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        kind = self.kind.value

        source_query = self.source_query

        output_schema = self.output_schema

        identity: dict[str, Any] | Unset = UNSET
        if not isinstance(self.identity, Unset):
            identity = self.identity.to_dict()

        context: dict[str, Any] | Unset = UNSET
        if not isinstance(self.context, Unset):
            context = self.context.to_dict()

        id: list[str] | Unset = UNSET
        if not isinstance(self.id, Unset):
            id = self.id

        udtf_spec: dict[str, Any] | None | Unset
        if isinstance(self.udtf_spec, Unset):
            udtf_spec = UNSET
        elif isinstance(self.udtf_spec, MaterializedViewUdtfEntry):
            udtf_spec = self.udtf_spec.to_dict()
        else:
            udtf_spec = self.udtf_spec

        with_no_data = self.with_no_data

        auto_refresh: bool | None | Unset
        if isinstance(self.auto_refresh, Unset):
            auto_refresh = UNSET
        else:
            auto_refresh = self.auto_refresh

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "kind": kind,
                "source_query": source_query,
                "output_schema": output_schema,
            }
        )
        if identity is not UNSET:
            field_dict["identity"] = identity
        if context is not UNSET:
            field_dict["context"] = context
        if id is not UNSET:
            field_dict["id"] = id
        if udtf_spec is not UNSET:
            field_dict["udtf_spec"] = udtf_spec
        if with_no_data is not UNSET:
            field_dict["with_no_data"] = with_no_data
        if auto_refresh is not UNSET:
            field_dict["auto_refresh"] = auto_refresh

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        kind = CreateMaterializedViewRequestKind(d.pop("kind"))

        source_query = d.pop("source_query")

        output_schema = d.pop("output_schema")

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

        def _parse_udtf_spec(data: object) -> MaterializedViewUdtfEntry | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                udtf_spec_type_1 = MaterializedViewUdtfEntry.from_dict(data)

                return udtf_spec_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(MaterializedViewUdtfEntry | None | Unset, data)

        udtf_spec = _parse_udtf_spec(d.pop("udtf_spec", UNSET))

        with_no_data = d.pop("with_no_data", UNSET)

        auto_refresh = cast(bool | None | Unset, d.pop("auto_refresh", UNSET))

        create_materialized_view_request = cls(
            kind=kind,
            source_query=source_query,
            output_schema=output_schema,
            identity=identity,
            context=context,
            id=id,
            udtf_spec=udtf_spec,
            with_no_data=with_no_data,
            auto_refresh=auto_refresh,
        )

        create_materialized_view_request.additional_properties = d
        return create_materialized_view_request

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
from ..models.materialized_view_udtf_entry import MaterializedViewUdtfEntry
