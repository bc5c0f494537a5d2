"""Lance tables in an Apache Iceberg REST Catalog: ``impl="iceberg"`` (seeds 000 and 003).

A package: iceberg.py moved as is to ``_namespace`` (and _iceberg_managed.py to
``_managed``), to be split by responsibility.
"""

from ._namespace import DUMMY_SCHEMA as DUMMY_SCHEMA
from ._namespace import IcebergConfig, IcebergNamespace, arrow_to_iceberg_schema

__all__ = ["IcebergConfig", "IcebergNamespace", "arrow_to_iceberg_schema"]
