"""One Lance namespace over several backends: each mounted under a name of the root.

``MountNamespace({"sales": glue, "ml": unity})`` (or ``connect("mounts", {...})`` with
``mount.<name>.impl`` and ``mount.<name>.<key>`` properties) routes every operation
by the first name of its id to that mount's backend, the name stripped, and puts it
back in front of the ids answers carry; ``lance-ns serve --mount`` serves one. A table
id never crosses mounts. See :mod:`._namespace` for what the root itself answers.

Layer: beside the backends. It composes them through ``_core.registry.connect`` (names
as strings), so it imports none of them.
"""

from __future__ import annotations

from ._config import MOUNT_NAME, MountsConfig, flatten_mounts, split_mounts
from ._namespace import MountNamespace

__all__ = [
    "MOUNT_NAME",
    "MountNamespace",
    "MountsConfig",
    "flatten_mounts",
    "split_mounts",
]
