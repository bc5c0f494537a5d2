"""Scenarios of the pipeline's jobs (issue 32): DescribeTransaction and AlterTransaction
of a job id (``lna-job-`` then 32 hex digits).

Registered with the catalog scenarios (imported at the end of the package ``scenarios``).
They start no job: a Spark driver costs seconds per backend, and the runner's own tests
(tests/test_pipeline_jobs.py) run real jobs. What every backend must do with a job id is
checked here: one nobody started is TransactionNotFound (10) to describe and to cancel,
and a malformed one is InvalidInput (13), before anything is read or written.
"""

from __future__ import annotations

import uuid

from .. import errors
from ._kit import Kit
from ._scenario import scenario


@scenario()
async def a_job_nobody_started_is_not_found(kit: Kit) -> None:
    """DescribeTransaction of a well-formed job id nobody started (alone, or after a
    table's id as pylance addresses a table's transactions) answers TransactionNotFound
    (10); so does AlterTransaction cancelling it. A job id that is not ``lna-job-`` and
    32 hex digits is InvalidInput (13)."""
    unknown = f"lna-job-{uuid.uuid4().hex}"
    await kit.refuses(
        errors.TransactionNotFoundError, kit.ns.describe_transaction, {"id": [unknown]}
    )
    await kit.refuses(
        errors.TransactionNotFoundError,
        kit.ns.describe_transaction,
        {"id": [*kit.table("t"), unknown]},
    )
    await kit.refuses(
        errors.TransactionNotFoundError,
        kit.ns.alter_transaction,
        {"id": [unknown], "actions": [{"setStatusAction": {"status": "CANCELLED"}}]},
    )
    await kit.refuses(
        errors.InvalidInputError, kit.ns.describe_transaction, {"id": ["lna-job-../x"]}
    )
