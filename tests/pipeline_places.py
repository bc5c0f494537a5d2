"""A backend and a table the pipeline's backfill tests work on (``test_pipeline_backfill``,
``test_pipeline_udfs``): its properties, a table of ``x`` written by pylance ten rows a
fragment, the namespace's calls, the backfill's plan and a job control for its body."""

from __future__ import annotations

from typing import Any

import anyio
import lance
import pyarrow as pa
from iceberg_real_server import ReferenceIcebergServer
from pyspark.sql import SparkSession

import lance_namespace_async as lna
from lance_namespace_async.models import AlterTableBackfillColumnsRequest
from lance_namespace_async.pipeline import JobControl
from lance_namespace_async.pipeline import _backfill as backfill

ROWS = 50  # five fragments of ten rows


class Place:
    """A backend, its properties and the id of a table to work on."""

    def __init__(self, impl: str, properties: dict[str, str], table: list[str]) -> None:
        self.impl, self.properties, self.table = impl, properties, table
        self.iceberg: tuple[ReferenceIcebergServer, str] | None = None

    def facade(self) -> lna.SyncLanceNamespace:
        return lna.connect_sync(self.impl, self.properties)

    def create(self, rows: int = ROWS) -> None:
        """The table, ``rows`` rows of ``x`` (0..rows-1), ten a fragment."""
        data = pa.table({"x": pa.array(range(rows), pa.int64())})
        with self.facade() as facade:
            lance.write_dataset(
                data, namespace_client=facade, table_id=self.table, max_rows_per_file=10
            )

    def dataset(self, version: int | None = None) -> Any:
        with self.facade() as facade:
            return lance.dataset(namespace_client=facade, table_id=self.table, version=version)

    def call(self, method: str, request: Any, **extra: str) -> Any:
        """``method`` of the async backend (``extra``: properties for this call only)."""

        async def run() -> Any:
            async with lna.connect(self.impl, {**self.properties, **extra}) as ns:
                return await getattr(ns, method)(request)

        return anyio.run(run)

    def plan(self, **fields: Any) -> dict[str, Any]:
        """The backfill job's request for column ``y`` (what the runner hands its body)."""
        request = AlterTableBackfillColumnsRequest.from_dict(
            {"id": self.table, "column": "y", **fields}
        )

        async def run() -> dict[str, Any]:
            async with lna.connect(self.impl, self.properties) as ns:
                return await backfill.plan_backfill(ns, request)

        return anyio.run(run)

    def control(self, spark: SparkSession, **callbacks: Any) -> JobControl:
        return JobControl(
            job_id="lna-job-test",
            spark=spark,
            impl=self.impl,
            properties=self.properties,
            **callbacks,
        )


def values(dataset: Any) -> dict[int, Any]:
    """``x`` -> ``y`` of every row."""
    table = dataset.to_table(columns=["x", "y"])
    return dict(zip(table.column("x").to_pylist(), table.column("y").to_pylist(), strict=True))
