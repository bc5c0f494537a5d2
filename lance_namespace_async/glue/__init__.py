"""Lance tables in the AWS Glue Data Catalog: ``impl="glue"``, extra ``glue``.

A package rather than one module so that each part of the Glue implementation spec
(seed 004) reads on its own; this file only names the public classes.
"""

from ._namespace import GlueConfig, GlueNamespace

__all__ = ["GlueConfig", "GlueNamespace"]
