"""Job bodies registered by tests/test_pipeline_jobs.py: real Spark work, slow on purpose.

``count_partitions`` reads a table through our Spark data source and counts its rows one
slice at a time (``request["slices"]``), reporting progress and sleeping
``request["pause"]`` seconds after each so a test can watch it run and cancel it; a
resumed run skips the slices its checkpoints say were counted. It returns the table's
version (it commits nothing). ``fail`` raises a typed error.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import lance

from lance_namespace_async import errors, models
from lance_namespace_async import spark as lna_spark
from lance_namespace_async.pipeline import JobControl


def count_partitions(control: JobControl, request: Mapping[str, Any]) -> int:
    lna_spark.register(control.spark)
    table = ".".join(request["table"])
    slices = int(request["slices"])
    frame = lna_spark.read(
        control.spark, table, impl=control.impl, properties=dict(control.properties)
    )
    start = int(control.checkpoints.get("slices_done", "0"))
    total = int(control.checkpoints.get("rows", "0"))
    for index in range(start, slices):
        control.raise_if_cancelled()
        total += frame.filter(frame["x"] % slices == index).count()
        control.checkpoint({"slices_done": str(index + 1), "rows": str(total)})
        control.progress(index + 1, slices)
        time.sleep(float(request.get("pause", 0)))
    control.raise_if_cancelled()
    described = control.namespace().describe_table(
        models.DescribeTableRequest(id=list(request["table"]))
    )
    control.checkpoint({"counted": str(total)})
    options = described.storage_options
    given = options.to_dict() if options else None
    return int(lance.dataset(described.location, storage_options=given).version)


def fail(control: JobControl, request: Mapping[str, Any]) -> int:
    raise errors.TableColumnNotFoundError(f"no column {request['column']!r}")
