"""CreateTableBranch, ListTableBranches and DeleteTableBranch on storage for the catalog
backends (Iceberg, Unity, Glue, Hive).

A branch is a Lance branch of the table's dataset, as on the directory backend: pylance
keeps it at ``<table>/tree/<name>`` with its own versions, and the catalog, which only
knows where the table lives, is not asked. Every other operation that takes ``branch``
acts on it through :class:`~.table_base.StorageTableBase` (the dataset checked out on
the branch), so one implementation serves every catalog.

An Iceberg ``managed_by=impl`` table refuses all three (UnsupportedOperation, code 0):
its catalog records main's version, and a branch it does not record would be a second
source of truth.
"""

from __future__ import annotations

from typing import Any

from .. import errors
from .._core.base import json_data
from .._core.paging import page_of
from .ref_names import check_ref_names
from .table_base import StorageTable, StorageTableBase

__all__ = ["StorageBranchOperations"]


def _branch_name(body: dict[str, Any], what: str) -> str:
    check_ref_names(what, body)
    name = body.get("name")
    if not isinstance(name, str) or not name:
        raise errors.InvalidInputError(f"{what} needs a branch name")
    if name == "main":
        raise errors.InvalidInputError(f"{what}: 'main' is the table's main line, not a branch")
    return name


def _branch_contents(branch: dict[str, Any]) -> dict[str, Any]:
    """pylance's description of a branch as a BranchContents body (the spec's
    camelCase names)."""
    contents: dict[str, Any] = {
        "parentVersion": int(branch.get("parent_version") or 0),
        "createAt": int(branch.get("create_at") or 0),
        "manifestSize": int(branch.get("manifest_size") or 0),
    }
    if branch.get("parent_branch"):
        contents["parentBranch"] = str(branch["parent_branch"])
    if branch.get("metadata"):
        contents["metadata"] = {str(k): str(v) for k, v in branch["metadata"].items()}
    return contents


class StorageBranchOperations(StorageTableBase):
    """The branches of a table's dataset, created, listed and deleted with pylance."""

    async def _branch_table(self, body: dict[str, Any], what: str, **extra: Any) -> StorageTable:
        table = await self._storage_table({"id": body.get("id"), **extra}, what, writes=True)
        if table.access.namespace_client is not None:
            raise errors.UnsupportedOperationError(
                f"{what}: table {'.'.join(table.id)!r} is managed by the catalog "
                "(managed_by=impl), which records the version of main only; its branches "
                "are not supported"
            )
        return table

    async def _create_table_branch(self, request: Any) -> Any:
        from ..models import CreateTableBranchResponse

        body: dict[str, Any] = json_data(request)
        name = _branch_name(body, "CreateTableBranch")
        source = await self._branch_table(body, "CreateTableBranch", branch=body.get("from_branch"))
        dataset = await self._open(source, body.get("from_version"))
        parent = (source.branch, int(dataset.version))
        what = f"CreateTableBranch {name!r} of table {'.'.join(source.id)}"

        def create() -> None:
            if name in dataset.branches.list():
                raise errors.TableBranchAlreadyExistsError(f"{what}: the branch exists")
            try:
                dataset.create_branch(name, parent)
            except (OSError, ValueError):
                if name in dataset.branches.list():  # created meanwhile by another call
                    raise errors.TableBranchAlreadyExistsError(
                        f"{what}: the branch exists"
                    ) from None
                raise

        await self.tables.run(create)
        return CreateTableBranchResponse.from_dict({})

    async def _list_table_branches(self, request: Any) -> Any:
        from ..models import ListTableBranchesResponse

        body: dict[str, Any] = json_data(request)
        table = await self._branch_table(body, "ListTableBranches")
        dataset = await self._open(table)
        branches: dict[str, Any] = await self.tables.run(dataset.branches.list)
        page, token = page_of(branches, body.get("page_token"), body.get("limit"))
        contents = {name: _branch_contents(branches[name]) for name in page}
        return ListTableBranchesResponse.from_dict({"branches": contents, "page_token": token})

    async def _delete_table_branch(self, request: Any) -> Any:
        from ..models import DeleteTableBranchResponse

        body: dict[str, Any] = json_data(request)
        name = _branch_name(body, "DeleteTableBranch")
        table = await self._branch_table(body, "DeleteTableBranch")
        dataset = await self._open(table)
        what = f"DeleteTableBranch {name!r} of table {'.'.join(table.id)}"

        def delete() -> None:
            if name not in dataset.branches.list():
                raise errors.TableBranchNotFoundError(f"{what}: no such branch")
            dataset.branches.delete(name)

        await self.tables.run(delete)
        return DeleteTableBranchResponse.from_dict({})
