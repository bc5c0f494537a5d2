from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.context import Context
    from ..models.describe_table_response_metadata import DescribeTableResponseMetadata
    from ..models.describe_table_response_properties import DescribeTableResponseProperties
    from ..models.describe_table_response_storage_options import DescribeTableResponseStorageOptions
    from ..models.json_arrow_schema import JsonArrowSchema
    from ..models.table_basic_stats import TableBasicStats


T = TypeVar("T", bound="DescribeTableResponse")


@_attrs_define
class DescribeTableResponse:
    """
    Attributes:
        context (Context | None | Unset):
        table (None | str | Unset): Table name (with detailed metadata only).
        namespace (list[str] | None | Unset): Namespace identifier parts (with detailed metadata only).
        version (int | None | Unset): Table version (with detailed metadata only).
        location (None | str | Unset): Storage location of the table, e.g. an S3 or GCS path.
        table_uri (None | str | Unset): Full, valid URI of the table (only with `with_table_uri`).
        schema (JsonArrowSchema | None | Unset): Arrow schema of the table (with detailed metadata only).
        storage_options (DescribeTableResponseStorageOptions | None | Unset): Options handed to Lance for storage
            access, possibly with vended credentials; temporary credentials come with `expires_at_millis`.
        stats (None | TableBasicStats | Unset): Basic table statistics (with detailed metadata only).
        metadata (DescribeTableResponseMetadata | None | Unset): Table metadata read from the dataset (with detailed
            metadata only).
        properties (DescribeTableResponseProperties | None | Unset): Properties kept by the namespace: an empty object
            when none are set, null when the server does not support table properties.
        managed_versioning (bool | None | Unset): When true, table versions must be managed through the namespace's
            table-version operations instead of Lance's own.
        is_only_declared (bool | None | Unset): True when the table is declared but has no data in storage yet, false
            when it has; null when the server did not check.
    """

    context: Context | None | Unset = UNSET
    table: None | str | Unset = UNSET
    namespace: list[str] | None | Unset = UNSET
    version: int | None | Unset = UNSET
    location: None | str | Unset = UNSET
    table_uri: None | str | Unset = UNSET
    schema: JsonArrowSchema | None | Unset = UNSET
    storage_options: DescribeTableResponseStorageOptions | None | Unset = UNSET
    stats: None | TableBasicStats | Unset = UNSET
    metadata: DescribeTableResponseMetadata | None | Unset = UNSET
    properties: DescribeTableResponseProperties | None | Unset = UNSET
    managed_versioning: bool | None | Unset = UNSET
    is_only_declared: bool | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        context: dict[str, Any] | None | Unset
        if isinstance(self.context, Unset):
            context = UNSET
        elif isinstance(self.context, Context):
            context = self.context.to_dict()
        else:
            context = self.context

        table: None | str | Unset
        if isinstance(self.table, Unset):
            table = UNSET
        else:
            table = self.table

        namespace: list[str] | None | Unset
        if isinstance(self.namespace, Unset):
            namespace = UNSET
        elif isinstance(self.namespace, list):
            namespace = self.namespace

        else:
            namespace = self.namespace

        version: int | None | Unset
        if isinstance(self.version, Unset):
            version = UNSET
        else:
            version = self.version

        location: None | str | Unset
        if isinstance(self.location, Unset):
            location = UNSET
        else:
            location = self.location

        table_uri: None | str | Unset
        if isinstance(self.table_uri, Unset):
            table_uri = UNSET
        else:
            table_uri = self.table_uri

        schema: dict[str, Any] | None | Unset
        if isinstance(self.schema, Unset):
            schema = UNSET
        elif isinstance(self.schema, JsonArrowSchema):
            schema = self.schema.to_dict()
        else:
            schema = self.schema

        storage_options: dict[str, Any] | None | Unset
        if isinstance(self.storage_options, Unset):
            storage_options = UNSET
        elif isinstance(self.storage_options, DescribeTableResponseStorageOptions):
            storage_options = self.storage_options.to_dict()
        else:
            storage_options = self.storage_options

        stats: dict[str, Any] | None | Unset
        if isinstance(self.stats, Unset):
            stats = UNSET
        elif isinstance(self.stats, TableBasicStats):
            stats = self.stats.to_dict()
        else:
            stats = self.stats

        metadata: dict[str, Any] | None | Unset
        if isinstance(self.metadata, Unset):
            metadata = UNSET
        elif isinstance(self.metadata, DescribeTableResponseMetadata):
            metadata = self.metadata.to_dict()
        else:
            metadata = self.metadata

        properties: dict[str, Any] | None | Unset
        if isinstance(self.properties, Unset):
            properties = UNSET
        elif isinstance(self.properties, DescribeTableResponseProperties):
            properties = self.properties.to_dict()
        else:
            properties = self.properties

        managed_versioning: bool | None | Unset
        if isinstance(self.managed_versioning, Unset):
            managed_versioning = UNSET
        else:
            managed_versioning = self.managed_versioning

        is_only_declared: bool | None | Unset
        if isinstance(self.is_only_declared, Unset):
            is_only_declared = UNSET
        else:
            is_only_declared = self.is_only_declared

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if context is not UNSET:
            field_dict["context"] = context
        if table is not UNSET:
            field_dict["table"] = table
        if namespace is not UNSET:
            field_dict["namespace"] = namespace
        if version is not UNSET:
            field_dict["version"] = version
        if location is not UNSET:
            field_dict["location"] = location
        if table_uri is not UNSET:
            field_dict["table_uri"] = table_uri
        if schema is not UNSET:
            field_dict["schema"] = schema
        if storage_options is not UNSET:
            field_dict["storage_options"] = storage_options
        if stats is not UNSET:
            field_dict["stats"] = stats
        if metadata is not UNSET:
            field_dict["metadata"] = metadata
        if properties is not UNSET:
            field_dict["properties"] = properties
        if managed_versioning is not UNSET:
            field_dict["managed_versioning"] = managed_versioning
        if is_only_declared is not UNSET:
            field_dict["is_only_declared"] = is_only_declared

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)

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

        table = cast(None | str | Unset, d.pop("table", UNSET))

        def _parse_namespace(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                namespace_type_0 = cast(list[str], data)

                return namespace_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        namespace = _parse_namespace(d.pop("namespace", UNSET))

        version = cast(int | None | Unset, d.pop("version", UNSET))

        location = cast(None | str | Unset, d.pop("location", UNSET))

        table_uri = cast(None | str | Unset, d.pop("table_uri", UNSET))

        def _parse_schema(data: object) -> JsonArrowSchema | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                schema_type_0 = JsonArrowSchema.from_dict(data)

                return schema_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(JsonArrowSchema | None | Unset, data)

        schema = _parse_schema(d.pop("schema", UNSET))

        def _parse_storage_options(data: object) -> DescribeTableResponseStorageOptions | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                storage_options_type_0 = DescribeTableResponseStorageOptions.from_dict(data)

                return storage_options_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(DescribeTableResponseStorageOptions | None | Unset, data)

        storage_options = _parse_storage_options(d.pop("storage_options", UNSET))

        def _parse_stats(data: object) -> None | TableBasicStats | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                stats_type_0 = TableBasicStats.from_dict(data)

                return stats_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | TableBasicStats | Unset, data)

        stats = _parse_stats(d.pop("stats", UNSET))

        def _parse_metadata(data: object) -> DescribeTableResponseMetadata | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                metadata_type_0 = DescribeTableResponseMetadata.from_dict(data)

                return metadata_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(DescribeTableResponseMetadata | None | Unset, data)

        metadata = _parse_metadata(d.pop("metadata", UNSET))

        def _parse_properties(data: object) -> DescribeTableResponseProperties | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                properties_type_0 = DescribeTableResponseProperties.from_dict(data)

                return properties_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(DescribeTableResponseProperties | None | Unset, data)

        properties = _parse_properties(d.pop("properties", UNSET))

        managed_versioning = cast(bool | None | Unset, d.pop("managed_versioning", UNSET))

        is_only_declared = cast(bool | None | Unset, d.pop("is_only_declared", UNSET))

        describe_table_response = cls(
            context=context,
            table=table,
            namespace=namespace,
            version=version,
            location=location,
            table_uri=table_uri,
            schema=schema,
            storage_options=storage_options,
            stats=stats,
            metadata=metadata,
            properties=properties,
            managed_versioning=managed_versioning,
            is_only_declared=is_only_declared,
        )

        describe_table_response.additional_properties = d
        return describe_table_response

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
from ..models.describe_table_response_metadata import DescribeTableResponseMetadata
from ..models.describe_table_response_properties import DescribeTableResponseProperties
from ..models.describe_table_response_storage_options import DescribeTableResponseStorageOptions
from ..models.json_arrow_schema import JsonArrowSchema
from ..models.table_basic_stats import TableBasicStats
