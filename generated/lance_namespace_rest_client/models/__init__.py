"""Contains all the data models used in inputs/outputs"""

from .context import Context
from .create_namespace_request import CreateNamespaceRequest
from .create_namespace_request_properties import CreateNamespaceRequestProperties
from .create_namespace_response import CreateNamespaceResponse
from .create_namespace_response_properties import CreateNamespaceResponseProperties
from .declare_table_request import DeclareTableRequest
from .declare_table_request_properties import DeclareTableRequestProperties
from .declare_table_response import DeclareTableResponse
from .declare_table_response_properties import DeclareTableResponseProperties
from .declare_table_response_storage_options import DeclareTableResponseStorageOptions
from .deregister_table_request import DeregisterTableRequest
from .deregister_table_response import DeregisterTableResponse
from .deregister_table_response_properties import DeregisterTableResponseProperties
from .describe_namespace_request import DescribeNamespaceRequest
from .describe_namespace_response import DescribeNamespaceResponse
from .describe_namespace_response_properties import DescribeNamespaceResponseProperties
from .describe_table_request import DescribeTableRequest
from .describe_table_response import DescribeTableResponse
from .describe_table_response_metadata import DescribeTableResponseMetadata
from .describe_table_response_properties import DescribeTableResponseProperties
from .describe_table_response_storage_options import DescribeTableResponseStorageOptions
from .drop_namespace_request import DropNamespaceRequest
from .drop_namespace_response import DropNamespaceResponse
from .drop_namespace_response_properties import DropNamespaceResponseProperties
from .drop_table_request import DropTableRequest
from .drop_table_response import DropTableResponse
from .drop_table_response_properties import DropTableResponseProperties
from .error_response import ErrorResponse
from .identity import Identity
from .json_arrow_data_type import JsonArrowDataType
from .json_arrow_field import JsonArrowField
from .json_arrow_field_metadata import JsonArrowFieldMetadata
from .json_arrow_schema import JsonArrowSchema
from .json_arrow_schema_metadata import JsonArrowSchemaMetadata
from .list_all_tables_request import ListAllTablesRequest
from .list_namespaces_request import ListNamespacesRequest
from .list_namespaces_response import ListNamespacesResponse
from .list_table_versions_request import ListTableVersionsRequest
from .list_table_versions_response import ListTableVersionsResponse
from .list_tables_request import ListTablesRequest
from .list_tables_response import ListTablesResponse
from .namespace_exists_request import NamespaceExistsRequest
from .namespace_exists_response import NamespaceExistsResponse
from .register_table_request import RegisterTableRequest
from .register_table_request_properties import RegisterTableRequestProperties
from .register_table_response import RegisterTableResponse
from .register_table_response_properties import RegisterTableResponseProperties
from .rename_table_request import RenameTableRequest
from .rename_table_response import RenameTableResponse
from .restore_table_request import RestoreTableRequest
from .restore_table_response import RestoreTableResponse
from .table_basic_stats import TableBasicStats
from .table_exists_request import TableExistsRequest
from .table_exists_response import TableExistsResponse
from .table_version import TableVersion
from .table_version_metadata import TableVersionMetadata

__all__ = (
    "Context",
    "CreateNamespaceRequest",
    "CreateNamespaceRequestProperties",
    "CreateNamespaceResponse",
    "CreateNamespaceResponseProperties",
    "DeclareTableRequest",
    "DeclareTableRequestProperties",
    "DeclareTableResponse",
    "DeclareTableResponseProperties",
    "DeclareTableResponseStorageOptions",
    "DeregisterTableRequest",
    "DeregisterTableResponse",
    "DeregisterTableResponseProperties",
    "DescribeNamespaceRequest",
    "DescribeNamespaceResponse",
    "DescribeNamespaceResponseProperties",
    "DescribeTableRequest",
    "DescribeTableResponse",
    "DescribeTableResponseMetadata",
    "DescribeTableResponseProperties",
    "DescribeTableResponseStorageOptions",
    "DropNamespaceRequest",
    "DropNamespaceResponse",
    "DropNamespaceResponseProperties",
    "DropTableRequest",
    "DropTableResponse",
    "DropTableResponseProperties",
    "ErrorResponse",
    "Identity",
    "JsonArrowDataType",
    "JsonArrowField",
    "JsonArrowFieldMetadata",
    "JsonArrowSchema",
    "JsonArrowSchemaMetadata",
    "ListAllTablesRequest",
    "ListNamespacesRequest",
    "ListNamespacesResponse",
    "ListTableVersionsRequest",
    "ListTableVersionsResponse",
    "ListTablesRequest",
    "ListTablesResponse",
    "NamespaceExistsRequest",
    "NamespaceExistsResponse",
    "RegisterTableRequest",
    "RegisterTableRequestProperties",
    "RegisterTableResponse",
    "RegisterTableResponseProperties",
    "RenameTableRequest",
    "RenameTableResponse",
    "RestoreTableRequest",
    "RestoreTableResponse",
    "TableBasicStats",
    "TableExistsRequest",
    "TableExistsResponse",
    "TableVersion",
    "TableVersionMetadata",
)
