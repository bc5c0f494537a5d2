"""Lance's native thread pools sized to the cores Spark gave a task.

Spark's model is ``spark.task.cpus`` cores per task (1 by default), as many tasks at once
as an executor has cores. pylance's compute pool sizes itself to the machine when its
runtime first starts in a process, so every concurrent task of an executor would run a
pool as wide as the machine: N tasks oversubscribe N cores N times over (on a 32-core
executor, 32 tasks x 32 threads), and even ``local[1]`` spreads over every core of the
machine whatever Spark was told it may use.

:func:`size_lance_pools` runs first in every task of ours that uses Lance (the backfill's,
the Spark data source's reads and writes, an aggregate view's partials): before Lance's
runtime starts in that Python worker, it sets ``LANCE_CPU_THREADS`` to the task's cores.
An operator's own value wins (``spark.executorEnv.LANCE_CPU_THREADS`` on a cluster, or
the worker's environment), and so does a runtime an earlier task in the worker already
started (pylance reads the variable once per process). ``LANCE_IO_THREADS`` (I/O
parallelism, not CPU) is left as pylance sets it.
"""

from __future__ import annotations

import os
from typing import Final

__all__ = ["CPU_THREADS", "size_lance_pools"]

#: pylance's variable for its compute pool's size, read when its runtime first starts
CPU_THREADS: Final = "LANCE_CPU_THREADS"


def size_lance_pools() -> None:
    """Give Lance's compute pool the cores Spark gave this task (``spark.task.cpus``).

    A no-op outside a Spark task and where the variable is already set."""
    if CPU_THREADS in os.environ:
        return
    from pyspark import TaskContext

    context = TaskContext.get()
    if context is None:  # not in a task (a driver, a test calling task code directly)
        return
    os.environ[CPU_THREADS] = str(max(1, int(context.cpus())))
