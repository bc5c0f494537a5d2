"""The README's first command ends with its inventory in a stable order and one sentence
saying what happened (examples/quickstart.py, run as a user runs it: a subprocess, twice
on the same root). Servers: none."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "examples" / "quickstart.py"


def run(root: Path) -> list[str]:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(root)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.rstrip("\n").splitlines()


def test_the_quickstart_ends_with_a_sentence_and_a_stable_inventory(tmp_path: Path) -> None:
    root = tmp_path / "demo-lance"
    first, again = run(root), run(root)
    tables = [line.split()[0] for line in first[1:4]]
    assert tables == ["marketing.campaigns", "sales.eu.invoices", "sales.orders"]
    assert [line.split()[0] for line in again[1:4]] == tables
    assert [line.split()[1] for line in again[1:4]] == ["2", "2", "2"]  # overwritten once
    assert first[-1] == (
        "Done: pylance wrote 3 tables (1,290 rows; 3 created, 0 overwritten) through the "
        f"catalog at {root}, and the crawl found 3 tables in 3 namespaces."
    )
    assert again[-1].startswith(
        "Done: pylance wrote 3 tables (1,290 rows; 0 created, 3 overwritten)"
    )
