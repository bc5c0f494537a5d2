"""Where a benchmark writes its markdown: the committed file for the documented full run only.

benchmarks/results/*.md are the numbers the README and the report cite. A smoke run
(``--quick``, fewer clients, a shorter duration, a smaller catalog) writes under
``/tmp/lna-bench/smoke/`` instead, so trying a benchmark never replaces them;
``--output`` still writes wherever it is told.
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Sequence
from pathlib import Path

SMOKE_ROOT = Path(tempfile.gettempdir()) / "lna-bench" / "smoke"


def output_path(
    parser: argparse.ArgumentParser,
    args: argparse.Namespace,
    committed: Path,
    sizes: Sequence[str],
    *,
    quick: bool = False,
) -> Path:
    """``--output`` if given; else ``committed`` when every size option has its default."""
    if args.output is not None:
        return Path(args.output)
    full = not quick and all(getattr(args, name) == parser.get_default(name) for name in sizes)
    return committed if full else SMOKE_ROOT / committed.name
