from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.analyze_table_query_plan_request_columns import AnalyzeTableQueryPlanRequestColumns
    from ..models.analyze_table_query_plan_request_full_text_query import AnalyzeTableQueryPlanRequestFullTextQuery
    from ..models.analyze_table_query_plan_request_vector import AnalyzeTableQueryPlanRequestVector
    from ..models.context import Context
    from ..models.identity import Identity


T = TypeVar("T", bound="AnalyzeTableQueryPlanRequest")


@_attrs_define
class AnalyzeTableQueryPlanRequest:
    """Request of AnalyzeTableQueryPlan.

    Attributes:
        k (int):
        vector (AnalyzeTableQueryPlanRequestVector | None):
        identity (Identity | Unset): Caller credentials. Over REST, `api_key` is sent as the `x-api-key` header and
            `auth_token` as `Authorization: Bearer <token>`.
        context (Context | Unset): Free-form string key/value pairs passed between caller and implementation. Over REST,
            request entries whose key starts with `header.` are sent as HTTP headers (prefix removed), and every response
            header comes back as an entry `header.<name>`.
        id (list[str] | Unset):
        branch (str | Unset):
        bypass_vector_index (bool | Unset):
        columns (AnalyzeTableQueryPlanRequestColumns | None | Unset):
        distance_type (str | Unset):
        ef (int | Unset):
        fast_search (bool | Unset):
        filter_ (str | Unset):
        full_text_query (AnalyzeTableQueryPlanRequestFullTextQuery | None | Unset):
        lower_bound (float | Unset):
        maximum_nprobes (int | Unset): Most IVF partitions the search may probe while it looks for `k` rows (no bound
            when absent).
        minimum_nprobes (int | Unset): IVF partitions the search probes at least, before it widens to more when fewer
            than `k` rows qualify.
        nprobes (int | Unset): The older, exact count of IVF partitions to probe; unused when `minimum_nprobes` or
            `maximum_nprobes` is set.
        offset (int | Unset):
        prefilter (bool | Unset):
        refine_factor (int | Unset):
        upper_bound (float | Unset):
        vector_column (str | Unset):
        version (int | Unset):
        with_row_id (bool | Unset):
    """

    k: int
    vector: AnalyzeTableQueryPlanRequestVector | None
    identity: Identity | Unset = UNSET
    context: Context | Unset = UNSET
    id: list[str] | Unset = UNSET
    branch: str | Unset = UNSET
    bypass_vector_index: bool | Unset = UNSET
    columns: AnalyzeTableQueryPlanRequestColumns | None | Unset = UNSET
    distance_type: str | Unset = UNSET
    ef: int | Unset = UNSET
    fast_search: bool | Unset = UNSET
    filter_: str | Unset = UNSET
    full_text_query: AnalyzeTableQueryPlanRequestFullTextQuery | None | Unset = UNSET
    lower_bound: float | Unset = UNSET
    maximum_nprobes: int | Unset = UNSET
    minimum_nprobes: int | Unset = UNSET
    nprobes: int | Unset = UNSET
    offset: int | Unset = UNSET
    prefilter: bool | Unset = UNSET
    refine_factor: int | Unset = UNSET
    upper_bound: float | Unset = UNSET
    vector_column: str | Unset = UNSET
    version: int | Unset = UNSET
    with_row_id: bool | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        k = self.k

        vector: dict[str, Any] | None
        if isinstance(self.vector, AnalyzeTableQueryPlanRequestVector):
            vector = self.vector.to_dict()
        else:
            vector = self.vector

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

        bypass_vector_index = self.bypass_vector_index

        columns: dict[str, Any] | None | Unset
        if isinstance(self.columns, Unset):
            columns = UNSET
        elif isinstance(self.columns, AnalyzeTableQueryPlanRequestColumns):
            columns = self.columns.to_dict()
        else:
            columns = self.columns

        distance_type = self.distance_type

        ef = self.ef

        fast_search = self.fast_search

        filter_ = self.filter_

        full_text_query: dict[str, Any] | None | Unset
        if isinstance(self.full_text_query, Unset):
            full_text_query = UNSET
        elif isinstance(self.full_text_query, AnalyzeTableQueryPlanRequestFullTextQuery):
            full_text_query = self.full_text_query.to_dict()
        else:
            full_text_query = self.full_text_query

        lower_bound = self.lower_bound

        maximum_nprobes = self.maximum_nprobes

        minimum_nprobes = self.minimum_nprobes

        nprobes = self.nprobes

        offset = self.offset

        prefilter = self.prefilter

        refine_factor = self.refine_factor

        upper_bound = self.upper_bound

        vector_column = self.vector_column

        version = self.version

        with_row_id = self.with_row_id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "k": k,
                "vector": vector,
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
        if bypass_vector_index is not UNSET:
            field_dict["bypass_vector_index"] = bypass_vector_index
        if columns is not UNSET:
            field_dict["columns"] = columns
        if distance_type is not UNSET:
            field_dict["distance_type"] = distance_type
        if ef is not UNSET:
            field_dict["ef"] = ef
        if fast_search is not UNSET:
            field_dict["fast_search"] = fast_search
        if filter_ is not UNSET:
            field_dict["filter"] = filter_
        if full_text_query is not UNSET:
            field_dict["full_text_query"] = full_text_query
        if lower_bound is not UNSET:
            field_dict["lower_bound"] = lower_bound
        if maximum_nprobes is not UNSET:
            field_dict["maximum_nprobes"] = maximum_nprobes
        if minimum_nprobes is not UNSET:
            field_dict["minimum_nprobes"] = minimum_nprobes
        if nprobes is not UNSET:
            field_dict["nprobes"] = nprobes
        if offset is not UNSET:
            field_dict["offset"] = offset
        if prefilter is not UNSET:
            field_dict["prefilter"] = prefilter
        if refine_factor is not UNSET:
            field_dict["refine_factor"] = refine_factor
        if upper_bound is not UNSET:
            field_dict["upper_bound"] = upper_bound
        if vector_column is not UNSET:
            field_dict["vector_column"] = vector_column
        if version is not UNSET:
            field_dict["version"] = version
        if with_row_id is not UNSET:
            field_dict["with_row_id"] = with_row_id

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        k = d.pop("k")

        def _parse_vector(data: object) -> AnalyzeTableQueryPlanRequestVector | None:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                vector_type_0 = AnalyzeTableQueryPlanRequestVector.from_dict(data)

                return vector_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(AnalyzeTableQueryPlanRequestVector | None, data)

        vector = _parse_vector(d.pop("vector"))

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

        bypass_vector_index = d.pop("bypass_vector_index", UNSET)

        def _parse_columns(data: object) -> AnalyzeTableQueryPlanRequestColumns | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                columns_type_0 = AnalyzeTableQueryPlanRequestColumns.from_dict(data)

                return columns_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(AnalyzeTableQueryPlanRequestColumns | None | Unset, data)

        columns = _parse_columns(d.pop("columns", UNSET))

        distance_type = d.pop("distance_type", UNSET)

        ef = d.pop("ef", UNSET)

        fast_search = d.pop("fast_search", UNSET)

        filter_ = d.pop("filter", UNSET)

        def _parse_full_text_query(data: object) -> AnalyzeTableQueryPlanRequestFullTextQuery | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                full_text_query_type_0 = AnalyzeTableQueryPlanRequestFullTextQuery.from_dict(data)

                return full_text_query_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(AnalyzeTableQueryPlanRequestFullTextQuery | None | Unset, data)

        full_text_query = _parse_full_text_query(d.pop("full_text_query", UNSET))

        lower_bound = d.pop("lower_bound", UNSET)

        maximum_nprobes = d.pop("maximum_nprobes", UNSET)

        minimum_nprobes = d.pop("minimum_nprobes", UNSET)

        nprobes = d.pop("nprobes", UNSET)

        offset = d.pop("offset", UNSET)

        prefilter = d.pop("prefilter", UNSET)

        refine_factor = d.pop("refine_factor", UNSET)

        upper_bound = d.pop("upper_bound", UNSET)

        vector_column = d.pop("vector_column", UNSET)

        version = d.pop("version", UNSET)

        with_row_id = d.pop("with_row_id", UNSET)

        analyze_table_query_plan_request = cls(
            k=k,
            vector=vector,
            identity=identity,
            context=context,
            id=id,
            branch=branch,
            bypass_vector_index=bypass_vector_index,
            columns=columns,
            distance_type=distance_type,
            ef=ef,
            fast_search=fast_search,
            filter_=filter_,
            full_text_query=full_text_query,
            lower_bound=lower_bound,
            maximum_nprobes=maximum_nprobes,
            minimum_nprobes=minimum_nprobes,
            nprobes=nprobes,
            offset=offset,
            prefilter=prefilter,
            refine_factor=refine_factor,
            upper_bound=upper_bound,
            vector_column=vector_column,
            version=version,
            with_row_id=with_row_id,
        )

        analyze_table_query_plan_request.additional_properties = d
        return analyze_table_query_plan_request

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


from ..models.analyze_table_query_plan_request_columns import AnalyzeTableQueryPlanRequestColumns
from ..models.analyze_table_query_plan_request_full_text_query import AnalyzeTableQueryPlanRequestFullTextQuery
from ..models.analyze_table_query_plan_request_vector import AnalyzeTableQueryPlanRequestVector
from ..models.context import Context
from ..models.identity import Identity
