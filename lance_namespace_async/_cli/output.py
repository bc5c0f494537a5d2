"""How ``lance-ns`` prints: rich tables on a terminal, JSON or JSON Lines otherwise,
secrets masked."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from .. import errors
from .._core.identifiers import join_identifier
from .profiles import mask_secrets

if TYPE_CHECKING:
    from rich.console import Console


def _console(file: TextIO) -> Console:
    try:
        from rich.console import Console
    except ImportError as exc:
        raise errors.MissingDependencyError(
            "table output and the progress bar need rich, a dependency of "
            "lance-namespace-async that is missing here: pip install 'rich>=13' "
            "(or use --output json)"
        ) from exc
    return Console(file=file, soft_wrap=False, highlight=False, emoji=False)


def _response_dict(response: Any) -> dict[str, Any]:
    """The response as JSON data, without the transport ``context`` (response headers)."""
    data: dict[str, Any] = response.to_dict() if hasattr(response, "to_dict") else dict(response)
    data.pop("context", None)
    return data


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, separators=(", ", ": "))


class _Output:
    """Prints results in the chosen format, secrets masked."""

    def __init__(self, fmt: str | None, delimiter: str, *, listing: bool) -> None:
        self.stdout = sys.stdout
        if fmt is None:
            fmt = "table" if self.stdout.isatty() else ("jsonl" if listing else "json")
        self.format = fmt
        self.delimiter = delimiter
        self.secret_keys: frozenset[str] = frozenset()

    def show_id(self, identifier: Sequence[str]) -> str:
        return join_identifier(identifier, self.delimiter) if identifier else "(root)"

    def mask(self, data: Any) -> Any:
        return mask_secrets(data, self.secret_keys)

    def _line(self, text: str) -> None:
        self.stdout.write(text + "\n")
        self.stdout.flush()

    def result(self, summary: str, data: Mapping[str, Any]) -> None:
        """One response: a summary line and its fields, or the JSON document."""
        masked = self.mask(dict(data))
        if self.format == "json":
            self._line(json.dumps(masked, indent=2, sort_keys=True))
        elif self.format == "jsonl":
            self._line(json.dumps(masked, sort_keys=True))
        else:
            console = _console(self.stdout)
            if summary:
                console.print(summary, markup=False)
            rows = [(k, _cell(v)) for k, v in masked.items() if v not in (None, {}, [])]
            if rows:
                self.table(["FIELD", "VALUE"], rows, console=console)

    def table(
        self,
        columns: Sequence[str],
        rows: Sequence[Sequence[str]],
        *,
        console: Console | None = None,
    ) -> None:
        from rich import box
        from rich.table import Table
        from rich.text import Text

        console = console or _console(self.stdout)
        table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
        for name in columns:
            table.add_column(name, overflow="fold")
        for row in rows:
            table.add_row(*(Text(cell) for cell in row))  # names are data, never markup
        console.print(table)

    def stream(self, columns: Sequence[str], empty: str) -> _Stream:
        return _Stream(self, columns, empty)


class _Stream:
    """Items of a listing: jsonl lines or a JSON array as they come, a table at the end."""

    def __init__(self, output: _Output, columns: Sequence[str], empty: str) -> None:
        self.output = output
        self.columns = columns
        self.empty = empty
        self.rows: list[Sequence[str]] = []
        self.count = 0

    def add(self, item: Mapping[str, Any], row: Sequence[str]) -> None:
        out = self.output
        if out.format == "table":
            self.rows.append(row)
        elif out.format == "jsonl":
            out._line(json.dumps(out.mask(dict(item)), sort_keys=True))
        else:
            prefix = "[\n  " if self.count == 0 else ",\n  "
            out.stdout.write(prefix + json.dumps(out.mask(dict(item)), sort_keys=True))
            out.stdout.flush()
        self.count += 1

    def close(self) -> None:
        out = self.output
        if out.format == "json":
            out._line("[]" if self.count == 0 else "\n]")
        elif out.format == "table":
            if self.rows:
                out.table(self.columns, self.rows)
            else:
                _console(out.stdout).print(self.empty, markup=False)
