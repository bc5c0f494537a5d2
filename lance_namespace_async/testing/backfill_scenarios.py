"""Scenarios of computed columns and their backfill (issue 32): AlterTableAddColumns with
``computed``, AlterTableBackfillColumns and the job it answers.

Registered with the catalog scenarios (imported at the end of the package ``scenarios``).
One small backfill per backend (a job costs a Spark driver's start, paid once per
process): the column is added, filled by the job, and read back from storage with
pylance; a backfill of a column that is not computed is refused before any job exists.
"""

from __future__ import annotations

from typing import Any, cast

import anyio.to_thread

from .. import errors
from ._kit import Kit
from ._scenario import scenario

#: how long the kit waits for its one job (a cold Spark driver starts within it)
JOB_TIMEOUT_SECONDS = 300.0


async def _column(kit: Kit, location: str, name: str) -> tuple[Any, list[Any]]:
    """The column's field and values, read from storage with pylance (ordered by id)."""
    import lance

    options = kit.storage_options()

    def read() -> tuple[Any, list[Any]]:
        dataset = lance.dataset(location, storage_options=options or None)
        table = dataset.to_table(columns=["id", name]).sort_by("id")
        return dataset.schema.field(name), table.column(name).to_pylist()

    return await anyio.to_thread.run_sync(read)


@scenario()
async def a_computed_column_is_added_empty_and_a_backfill_job_fills_it(kit: Kit) -> None:
    """AlterTableAddColumns with ``computed`` adds the column all-null in one new
    version, its expression kept in the field's metadata; AlterTableBackfillColumns of a
    column that is not computed is InvalidInput (13) and changes nothing; of the computed
    one it answers a job id at once, and the job (DescribeTransaction) succeeds with the
    column holding the expression's values on storage."""
    import pyarrow as pa

    from ..pipeline._backfill import COMPUTED_KEY
    from ..pipeline._jobs import wait_for_job

    table = kit.table("t")
    created = await kit.ns.create_table({"id": table}, pa.table({"id": pa.array([0, 1, 2])}))
    location = str(created.location)
    added = await kit.ns.alter_table_add_columns(
        {"id": table, "new_columns": [{"name": "y", "computed": "id * 2 + 1"}]}
    )
    assert added.version == 2, added
    field, values = await _column(kit, location, "y")
    assert (field.metadata or {}).get(COMPUTED_KEY.encode()) == b"id * 2 + 1", field
    assert values == [None, None, None]

    await kit.refuses(
        errors.InvalidInputError,
        kit.ns.alter_table_backfill_columns,
        {"id": table, "column": "id"},
    )
    answer = await kit.ns.alter_table_backfill_columns({"id": table, "column": "y"})
    assert str(answer.job_id).startswith("lna-job-"), answer
    # through the kit's recording proxy: DescribeTransaction counts as answered
    final = await wait_for_job(cast(Any, kit.ns), answer.job_id, timeout=JOB_TIMEOUT_SECONDS)
    assert str(final.status).upper() == "SUCCEEDED", final
    assert (await _column(kit, location, "y"))[1] == [1, 3, 5]
