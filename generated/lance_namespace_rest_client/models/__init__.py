"""Contains all the data models used in inputs/outputs"""

from .add_columns_entry import AddColumnsEntry
from .add_virtual_column_entry import AddVirtualColumnEntry
from .add_virtual_column_entry_field_metadata import AddVirtualColumnEntryFieldMetadata
from .add_virtual_column_output_entry import AddVirtualColumnOutputEntry
from .add_virtual_column_output_entry_data_type import AddVirtualColumnOutputEntryDataType
from .add_virtual_column_output_entry_metadata import AddVirtualColumnOutputEntryMetadata
from .alter_columns_entry import AlterColumnsEntry
from .alter_columns_entry_data_type import AlterColumnsEntryDataType
from .alter_table_add_columns_request import AlterTableAddColumnsRequest
from .alter_table_add_columns_response import AlterTableAddColumnsResponse
from .alter_table_alter_columns_request import AlterTableAlterColumnsRequest
from .alter_table_alter_columns_response import AlterTableAlterColumnsResponse
from .alter_table_backfill_columns_request import AlterTableBackfillColumnsRequest
from .alter_table_backfill_columns_response import AlterTableBackfillColumnsResponse
from .alter_table_drop_columns_request import AlterTableDropColumnsRequest
from .alter_table_drop_columns_response import AlterTableDropColumnsResponse
from .alter_transaction_action import AlterTransactionAction
from .alter_transaction_request import AlterTransactionRequest
from .alter_transaction_response import AlterTransactionResponse
from .alter_transaction_response_properties import AlterTransactionResponseProperties
from .alter_transaction_set_property import AlterTransactionSetProperty
from .alter_transaction_set_status import AlterTransactionSetStatus
from .alter_transaction_unset_property import AlterTransactionUnsetProperty
from .alter_virtual_column_entry import AlterVirtualColumnEntry
from .alter_virtual_column_entry_field_metadata import AlterVirtualColumnEntryFieldMetadata
from .analyze_table_query_plan_request import AnalyzeTableQueryPlanRequest
from .analyze_table_query_plan_request_columns import AnalyzeTableQueryPlanRequestColumns
from .analyze_table_query_plan_request_columns_column_aliases import AnalyzeTableQueryPlanRequestColumnsColumnAliases
from .analyze_table_query_plan_request_full_text_query import AnalyzeTableQueryPlanRequestFullTextQuery
from .analyze_table_query_plan_request_vector import AnalyzeTableQueryPlanRequestVector
from .analyze_table_query_plan_response import AnalyzeTableQueryPlanResponse
from .batch_commit_tables_request import BatchCommitTablesRequest
from .batch_commit_tables_response import BatchCommitTablesResponse
from .batch_create_table_versions_request import BatchCreateTableVersionsRequest
from .batch_create_table_versions_response import BatchCreateTableVersionsResponse
from .batch_delete_table_versions_request import BatchDeleteTableVersionsRequest
from .batch_delete_table_versions_response import BatchDeleteTableVersionsResponse
from .boolean_query import BooleanQuery
from .boost_query import BoostQuery
from .branch_contents import BranchContents
from .branch_contents_metadata import BranchContentsMetadata
from .commit_table_operation import CommitTableOperation
from .commit_table_result import CommitTableResult
from .context import Context
from .count_table_rows_request import CountTableRowsRequest
from .count_table_rows_response import CountTableRowsResponse
from .create_materialized_view_request import CreateMaterializedViewRequest
from .create_materialized_view_request_kind import CreateMaterializedViewRequestKind
from .create_materialized_view_response import CreateMaterializedViewResponse
from .create_namespace_request import CreateNamespaceRequest
from .create_namespace_request_properties import CreateNamespaceRequestProperties
from .create_namespace_response import CreateNamespaceResponse
from .create_namespace_response_properties import CreateNamespaceResponseProperties
from .create_table_branch_request import CreateTableBranchRequest
from .create_table_branch_response import CreateTableBranchResponse
from .create_table_index_request import CreateTableIndexRequest
from .create_table_index_response import CreateTableIndexResponse
from .create_table_request import CreateTableRequest
from .create_table_request_properties import CreateTableRequestProperties
from .create_table_request_storage_options import CreateTableRequestStorageOptions
from .create_table_response import CreateTableResponse
from .create_table_response_properties import CreateTableResponseProperties
from .create_table_response_storage_options import CreateTableResponseStorageOptions
from .create_table_scalar_index_response import CreateTableScalarIndexResponse
from .create_table_tag_request import CreateTableTagRequest
from .create_table_tag_response import CreateTableTagResponse
from .create_table_version_entry import CreateTableVersionEntry
from .create_table_version_entry_metadata import CreateTableVersionEntryMetadata
from .create_table_version_request import CreateTableVersionRequest
from .create_table_version_request_metadata import CreateTableVersionRequestMetadata
from .create_table_version_response import CreateTableVersionResponse
from .declare_table_request import DeclareTableRequest
from .declare_table_request_properties import DeclareTableRequestProperties
from .declare_table_response import DeclareTableResponse
from .declare_table_response_properties import DeclareTableResponseProperties
from .declare_table_response_storage_options import DeclareTableResponseStorageOptions
from .delete_from_table_request import DeleteFromTableRequest
from .delete_from_table_response import DeleteFromTableResponse
from .delete_table_branch_request import DeleteTableBranchRequest
from .delete_table_branch_response import DeleteTableBranchResponse
from .delete_table_tag_request import DeleteTableTagRequest
from .delete_table_tag_response import DeleteTableTagResponse
from .deregister_table_request import DeregisterTableRequest
from .deregister_table_response import DeregisterTableResponse
from .deregister_table_response_properties import DeregisterTableResponseProperties
from .describe_namespace_request import DescribeNamespaceRequest
from .describe_namespace_response import DescribeNamespaceResponse
from .describe_namespace_response_properties import DescribeNamespaceResponseProperties
from .describe_table_index_stats_request import DescribeTableIndexStatsRequest
from .describe_table_index_stats_response import DescribeTableIndexStatsResponse
from .describe_table_request import DescribeTableRequest
from .describe_table_response import DescribeTableResponse
from .describe_table_response_metadata import DescribeTableResponseMetadata
from .describe_table_response_properties import DescribeTableResponseProperties
from .describe_table_response_storage_options import DescribeTableResponseStorageOptions
from .describe_table_version_request import DescribeTableVersionRequest
from .describe_table_version_response import DescribeTableVersionResponse
from .describe_transaction_request import DescribeTransactionRequest
from .describe_transaction_response import DescribeTransactionResponse
from .describe_transaction_response_properties import DescribeTransactionResponseProperties
from .drop_namespace_request import DropNamespaceRequest
from .drop_namespace_response import DropNamespaceResponse
from .drop_namespace_response_properties import DropNamespaceResponseProperties
from .drop_table_index_request import DropTableIndexRequest
from .drop_table_index_response import DropTableIndexResponse
from .drop_table_request import DropTableRequest
from .drop_table_response import DropTableResponse
from .drop_table_response_properties import DropTableResponseProperties
from .error_response import ErrorResponse
from .explain_table_query_plan_request import ExplainTableQueryPlanRequest
from .explain_table_query_plan_response import ExplainTableQueryPlanResponse
from .fragment_stats import FragmentStats
from .fragment_summary import FragmentSummary
from .fts_query import FtsQuery
from .get_table_stats_request import GetTableStatsRequest
from .get_table_stats_response import GetTableStatsResponse
from .get_table_tag_version_request import GetTableTagVersionRequest
from .get_table_tag_version_response import GetTableTagVersionResponse
from .identity import Identity
from .index_content import IndexContent
from .insert_into_table_request import InsertIntoTableRequest
from .insert_into_table_response import InsertIntoTableResponse
from .json_arrow_data_type import JsonArrowDataType
from .json_arrow_field import JsonArrowField
from .json_arrow_field_metadata import JsonArrowFieldMetadata
from .json_arrow_schema import JsonArrowSchema
from .json_arrow_schema_metadata import JsonArrowSchemaMetadata
from .list_all_tables_request import ListAllTablesRequest
from .list_namespaces_request import ListNamespacesRequest
from .list_namespaces_response import ListNamespacesResponse
from .list_table_branches_request import ListTableBranchesRequest
from .list_table_branches_response import ListTableBranchesResponse
from .list_table_branches_response_branches import ListTableBranchesResponseBranches
from .list_table_indices_request import ListTableIndicesRequest
from .list_table_indices_response import ListTableIndicesResponse
from .list_table_tags_request import ListTableTagsRequest
from .list_table_tags_response import ListTableTagsResponse
from .list_table_tags_response_tags import ListTableTagsResponseTags
from .list_table_versions_request import ListTableVersionsRequest
from .list_table_versions_response import ListTableVersionsResponse
from .list_tables_request import ListTablesRequest
from .list_tables_response import ListTablesResponse
from .match_query import MatchQuery
from .materialized_view_udtf_entry import MaterializedViewUdtfEntry
from .materialized_view_udtf_entry_error_handling_type_0 import MaterializedViewUdtfEntryErrorHandlingType0
from .materialized_view_udtf_entry_kind import MaterializedViewUdtfEntryKind
from .merge_insert_into_table_request import MergeInsertIntoTableRequest
from .merge_insert_into_table_response import MergeInsertIntoTableResponse
from .multi_match_query import MultiMatchQuery
from .namespace_exists_request import NamespaceExistsRequest
from .namespace_exists_response import NamespaceExistsResponse
from .partition_field import PartitionField
from .partition_spec import PartitionSpec
from .partition_transform import PartitionTransform
from .phrase_query import PhraseQuery
from .query_table_request import QueryTableRequest
from .query_table_request_columns import QueryTableRequestColumns
from .query_table_request_columns_column_aliases import QueryTableRequestColumnsColumnAliases
from .query_table_request_full_text_query import QueryTableRequestFullTextQuery
from .query_table_request_vector import QueryTableRequestVector
from .query_table_response import QueryTableResponse
from .refresh_materialized_view_request import RefreshMaterializedViewRequest
from .refresh_materialized_view_response import RefreshMaterializedViewResponse
from .register_table_request import RegisterTableRequest
from .register_table_request_properties import RegisterTableRequestProperties
from .register_table_response import RegisterTableResponse
from .register_table_response_properties import RegisterTableResponseProperties
from .rename_table_request import RenameTableRequest
from .rename_table_response import RenameTableResponse
from .restore_table_request import RestoreTableRequest
from .restore_table_response import RestoreTableResponse
from .string_fts_query import StringFtsQuery
from .structured_fts_query import StructuredFtsQuery
from .table_basic_stats import TableBasicStats
from .table_exists_request import TableExistsRequest
from .table_exists_response import TableExistsResponse
from .table_version import TableVersion
from .table_version_metadata import TableVersionMetadata
from .tag_contents import TagContents
from .update_field_metadata_entry import UpdateFieldMetadataEntry
from .update_field_metadata_entry_metadata import UpdateFieldMetadataEntryMetadata
from .update_field_metadata_request import UpdateFieldMetadataRequest
from .update_field_metadata_response import UpdateFieldMetadataResponse
from .update_field_metadata_response_fields import UpdateFieldMetadataResponseFields
from .update_field_metadata_response_fields_additional_property import (
    UpdateFieldMetadataResponseFieldsAdditionalProperty,
)
from .update_table_request import UpdateTableRequest
from .update_table_request_properties import UpdateTableRequestProperties
from .update_table_response import UpdateTableResponse
from .update_table_response_properties import UpdateTableResponseProperties
from .update_table_schema_metadata_body import UpdateTableSchemaMetadataBody
from .update_table_schema_metadata_map import UpdateTableSchemaMetadataMap
from .update_table_schema_metadata_request import UpdateTableSchemaMetadataRequest
from .update_table_schema_metadata_request_metadata import UpdateTableSchemaMetadataRequestMetadata
from .update_table_schema_metadata_response import UpdateTableSchemaMetadataResponse
from .update_table_schema_metadata_response_metadata import UpdateTableSchemaMetadataResponseMetadata
from .update_table_tag_request import UpdateTableTagRequest
from .update_table_tag_response import UpdateTableTagResponse
from .version_range import VersionRange

__all__ = (
    "AddColumnsEntry",
    "AddVirtualColumnEntry",
    "AddVirtualColumnEntryFieldMetadata",
    "AddVirtualColumnOutputEntry",
    "AddVirtualColumnOutputEntryDataType",
    "AddVirtualColumnOutputEntryMetadata",
    "AlterColumnsEntry",
    "AlterColumnsEntryDataType",
    "AlterTableAddColumnsRequest",
    "AlterTableAddColumnsResponse",
    "AlterTableAlterColumnsRequest",
    "AlterTableAlterColumnsResponse",
    "AlterTableBackfillColumnsRequest",
    "AlterTableBackfillColumnsResponse",
    "AlterTableDropColumnsRequest",
    "AlterTableDropColumnsResponse",
    "AlterTransactionAction",
    "AlterTransactionRequest",
    "AlterTransactionResponse",
    "AlterTransactionResponseProperties",
    "AlterTransactionSetProperty",
    "AlterTransactionSetStatus",
    "AlterTransactionUnsetProperty",
    "AlterVirtualColumnEntry",
    "AlterVirtualColumnEntryFieldMetadata",
    "AnalyzeTableQueryPlanRequest",
    "AnalyzeTableQueryPlanRequestColumns",
    "AnalyzeTableQueryPlanRequestColumnsColumnAliases",
    "AnalyzeTableQueryPlanRequestFullTextQuery",
    "AnalyzeTableQueryPlanRequestVector",
    "AnalyzeTableQueryPlanResponse",
    "BatchCommitTablesRequest",
    "BatchCommitTablesResponse",
    "BatchCreateTableVersionsRequest",
    "BatchCreateTableVersionsResponse",
    "BatchDeleteTableVersionsRequest",
    "BatchDeleteTableVersionsResponse",
    "BooleanQuery",
    "BoostQuery",
    "BranchContents",
    "BranchContentsMetadata",
    "CommitTableOperation",
    "CommitTableResult",
    "Context",
    "CountTableRowsRequest",
    "CountTableRowsResponse",
    "CreateMaterializedViewRequest",
    "CreateMaterializedViewRequestKind",
    "CreateMaterializedViewResponse",
    "CreateNamespaceRequest",
    "CreateNamespaceRequestProperties",
    "CreateNamespaceResponse",
    "CreateNamespaceResponseProperties",
    "CreateTableBranchRequest",
    "CreateTableBranchResponse",
    "CreateTableIndexRequest",
    "CreateTableIndexResponse",
    "CreateTableRequest",
    "CreateTableRequestProperties",
    "CreateTableRequestStorageOptions",
    "CreateTableResponse",
    "CreateTableResponseProperties",
    "CreateTableResponseStorageOptions",
    "CreateTableScalarIndexResponse",
    "CreateTableTagRequest",
    "CreateTableTagResponse",
    "CreateTableVersionEntry",
    "CreateTableVersionEntryMetadata",
    "CreateTableVersionRequest",
    "CreateTableVersionRequestMetadata",
    "CreateTableVersionResponse",
    "DeclareTableRequest",
    "DeclareTableRequestProperties",
    "DeclareTableResponse",
    "DeclareTableResponseProperties",
    "DeclareTableResponseStorageOptions",
    "DeleteFromTableRequest",
    "DeleteFromTableResponse",
    "DeleteTableBranchRequest",
    "DeleteTableBranchResponse",
    "DeleteTableTagRequest",
    "DeleteTableTagResponse",
    "DeregisterTableRequest",
    "DeregisterTableResponse",
    "DeregisterTableResponseProperties",
    "DescribeNamespaceRequest",
    "DescribeNamespaceResponse",
    "DescribeNamespaceResponseProperties",
    "DescribeTableIndexStatsRequest",
    "DescribeTableIndexStatsResponse",
    "DescribeTableRequest",
    "DescribeTableResponse",
    "DescribeTableResponseMetadata",
    "DescribeTableResponseProperties",
    "DescribeTableResponseStorageOptions",
    "DescribeTableVersionRequest",
    "DescribeTableVersionResponse",
    "DescribeTransactionRequest",
    "DescribeTransactionResponse",
    "DescribeTransactionResponseProperties",
    "DropNamespaceRequest",
    "DropNamespaceResponse",
    "DropNamespaceResponseProperties",
    "DropTableIndexRequest",
    "DropTableIndexResponse",
    "DropTableRequest",
    "DropTableResponse",
    "DropTableResponseProperties",
    "ErrorResponse",
    "ExplainTableQueryPlanRequest",
    "ExplainTableQueryPlanResponse",
    "FragmentStats",
    "FragmentSummary",
    "FtsQuery",
    "GetTableStatsRequest",
    "GetTableStatsResponse",
    "GetTableTagVersionRequest",
    "GetTableTagVersionResponse",
    "Identity",
    "IndexContent",
    "InsertIntoTableRequest",
    "InsertIntoTableResponse",
    "JsonArrowDataType",
    "JsonArrowField",
    "JsonArrowFieldMetadata",
    "JsonArrowSchema",
    "JsonArrowSchemaMetadata",
    "ListAllTablesRequest",
    "ListNamespacesRequest",
    "ListNamespacesResponse",
    "ListTableBranchesRequest",
    "ListTableBranchesResponse",
    "ListTableBranchesResponseBranches",
    "ListTableIndicesRequest",
    "ListTableIndicesResponse",
    "ListTableTagsRequest",
    "ListTableTagsResponse",
    "ListTableTagsResponseTags",
    "ListTableVersionsRequest",
    "ListTableVersionsResponse",
    "ListTablesRequest",
    "ListTablesResponse",
    "MatchQuery",
    "MaterializedViewUdtfEntry",
    "MaterializedViewUdtfEntryErrorHandlingType0",
    "MaterializedViewUdtfEntryKind",
    "MergeInsertIntoTableRequest",
    "MergeInsertIntoTableResponse",
    "MultiMatchQuery",
    "NamespaceExistsRequest",
    "NamespaceExistsResponse",
    "PartitionField",
    "PartitionSpec",
    "PartitionTransform",
    "PhraseQuery",
    "QueryTableRequest",
    "QueryTableRequestColumns",
    "QueryTableRequestColumnsColumnAliases",
    "QueryTableRequestFullTextQuery",
    "QueryTableRequestVector",
    "QueryTableResponse",
    "RefreshMaterializedViewRequest",
    "RefreshMaterializedViewResponse",
    "RegisterTableRequest",
    "RegisterTableRequestProperties",
    "RegisterTableResponse",
    "RegisterTableResponseProperties",
    "RenameTableRequest",
    "RenameTableResponse",
    "RestoreTableRequest",
    "RestoreTableResponse",
    "StringFtsQuery",
    "StructuredFtsQuery",
    "TableBasicStats",
    "TableExistsRequest",
    "TableExistsResponse",
    "TableVersion",
    "TableVersionMetadata",
    "TagContents",
    "UpdateFieldMetadataEntry",
    "UpdateFieldMetadataEntryMetadata",
    "UpdateFieldMetadataRequest",
    "UpdateFieldMetadataResponse",
    "UpdateFieldMetadataResponseFields",
    "UpdateFieldMetadataResponseFieldsAdditionalProperty",
    "UpdateTableRequest",
    "UpdateTableRequestProperties",
    "UpdateTableResponse",
    "UpdateTableResponseProperties",
    "UpdateTableSchemaMetadataBody",
    "UpdateTableSchemaMetadataMap",
    "UpdateTableSchemaMetadataRequest",
    "UpdateTableSchemaMetadataRequestMetadata",
    "UpdateTableSchemaMetadataResponse",
    "UpdateTableSchemaMetadataResponseMetadata",
    "UpdateTableTagRequest",
    "UpdateTableTagResponse",
    "VersionRange",
)
