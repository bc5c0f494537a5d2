"""Shared fixtures: real directory catalogs on real temporary folders."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pyarrow as pa
import pytest

import lance_namespace_async as lna
from lance_namespace_async.directory import DirectoryNamespace


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "catalog"
    path.mkdir()
    return path


@pytest.fixture
async def ns(root: Path) -> AsyncIterator[DirectoryNamespace]:
    async with lna.connect("dir", {"root": str(root)}) as namespace:
        assert isinstance(namespace, DirectoryNamespace)
        yield namespace


def disk_state(root: Path) -> dict[str, int]:
    """Every file below root with its size: equal states mean nothing changed."""
    state: dict[str, int] = {}
    for directory, _, files in os.walk(root):
        for name in files:
            path = os.path.join(directory, name)
            state[os.path.relpath(path, root)] = os.path.getsize(path)
    return state


def sample_table(rows: int = 3) -> pa.Table:
    return pa.table({"id": list(range(rows)), "name": [f"row-{i}" for i in range(rows)]})
