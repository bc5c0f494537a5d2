#!/usr/bin/env python3
"""Regenerate ``generated/lance_namespace_rest_client`` from ``spec/rest.yaml``.

Why this script exists: the low-level REST client (attrs models plus sync/async
httpx endpoint functions) is produced by openapi-python-client, and a generated
tree is only trustworthy if anyone can reproduce it byte for byte. So this script

* refuses to run unless the pinned generator and formatter are installed
  (openapi-python-client 0.29.1, ruff 0.17.6), since other versions emit
  different code;
* runs the generator from this interpreter's environment with
  ``scripts/codegen-config.yaml`` (ruff post-hooks in isolated, cache-less mode,
  so no project or user configuration leaks in);
* generates into a temporary directory and only then swaps the result into
  ``generated/lance_namespace_rest_client``, so stale files disappear and a failed
  run leaves the old tree untouched (``generated/README.md`` lives outside the
  package directory and is never touched); the only addition to the generator's
  output is a ``py.typed`` marker, since the package ships in our wheel;
* with ``--check``, regenerates into a temporary directory and compares the whole
  tree (file set and bytes) with the checked-in one, exiting 1 and listing the
  differing files when they differ - suitable for CI.

Usage::

    .venv/bin/python scripts/codegen.py          # regenerate
    .venv/bin/python scripts/codegen.py --check  # verify, do not write
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "spec" / "rest.yaml"
CONFIG = ROOT / "scripts" / "codegen-config.yaml"
GENERATED = ROOT / "generated"
PACKAGE = "lance_namespace_rest_client"
TARGET = GENERATED / PACKAGE

PINS: dict[str, str] = {"openapi-python-client": "0.29.1", "ruff": "0.17.6"}
# Byproducts of importing or type-checking the package; never part of the output.
IGNORED_DIRS = frozenset({"__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache"})
PY_TYPED = "# Marker file for PEP 561\n"


class CodegenError(Exception):
    """A failure that should end the script with a message and exit status 2."""


def bin_dir() -> Path:
    """Directory holding this interpreter's console scripts (the venv's ``bin``).

    ``sys.executable`` is deliberately not resolved: in a venv it is a symlink to
    the base interpreter, and the scripts live next to the link.
    """
    return Path(sys.executable).parent


def check_pins() -> None:
    """Fail unless the installed generator and ruff match the pinned versions."""
    problems: list[str] = []
    for dist, wanted in PINS.items():
        try:
            found = metadata.version(dist)
        except metadata.PackageNotFoundError:
            found = "not installed"
        if found != wanted:
            problems.append(f"{dist}=={wanted} is required, found {found}")
    ruff = bin_dir() / "ruff"
    if not ruff.is_file():
        problems.append(f"ruff executable not found at {ruff}")
    else:
        out = subprocess.run([str(ruff), "--version"], capture_output=True, text=True, check=False)
        reported = out.stdout.strip()
        if reported != f"ruff {PINS['ruff']}":
            found = reported or out.stderr.strip()
            problems.append(f"{ruff} reports {found!r}, expected 'ruff {PINS['ruff']}'")
    if problems:
        pins = " ".join(f"{dist}=={version}" for dist, version in PINS.items())
        raise CodegenError(
            "codegen needs pinned tool versions:\n  "
            + "\n  ".join(problems)
            + f"\nInstall them for the interpreter running this script ({sys.executable}):"
            + f"\n  {sys.executable} -m pip install {pins}"
        )


def tool_env() -> dict[str, str]:
    """Environment for the generator: pinned ruff first on PATH, no ambient knobs."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("RUFF_")}
    env["PATH"] = os.pathsep.join([str(bin_dir()), env.get("PATH", os.defpath)])
    # The generator collects imports in sets; fix hashing so nothing depends on it.
    env["PYTHONHASHSEED"] = "0"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def generate(workdir: Path) -> Path:
    """Generate the package into ``workdir / PACKAGE`` and return that path."""
    out = workdir / PACKAGE
    cmd = [
        sys.executable,
        "-m",
        "openapi_python_client",
        "generate",
        "--path",
        str(SPEC),
        "--config",
        str(CONFIG),
        "--meta",
        "none",
        "--output-path",
        str(out),
        "--fail-on-warning",
    ]
    result = subprocess.run(
        cmd, cwd=workdir, env=tool_env(), capture_output=True, text=True, check=False
    )
    if result.returncode != 0 or not out.is_dir():
        output = (result.stdout + result.stderr).rstrip()
        raise CodegenError(f"openapi-python-client failed (exit {result.returncode}):\n{output}")
    # PEP 561 marker: the package ships in the wheel and is fully annotated. The
    # generator only writes it for --meta other than none.
    (out / "py.typed").write_text(PY_TYPED, encoding="utf-8")
    # Paths of this run must not leak into the output, or it would not be reproducible.
    marker = str(workdir).encode()
    leaks = sorted(name for name, data in read_tree(out).items() if marker in data)
    if leaks:
        raise CodegenError(f"generated files mention the temporary directory: {', '.join(leaks)}")
    return out


def read_tree(root: Path) -> dict[str, bytes]:
    """Map each file under ``root`` (POSIX relative path) to its bytes, skipping caches."""
    files: dict[str, bytes] = {}
    if not root.is_dir():
        return files
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if any(part in IGNORED_DIRS for part in rel.parts) or not path.is_file():
            continue
        files[rel.as_posix()] = path.read_bytes()
    return files


def diff_trees(expected: dict[str, bytes], actual: dict[str, bytes]) -> list[str]:
    """Describe every file that differs between two trees, sorted by path."""
    lines: list[str] = []
    for name in sorted(expected.keys() | actual.keys()):
        if name not in actual:
            lines.append(f"missing:  {name}")
        elif name not in expected:
            lines.append(f"extra:    {name}")
        elif expected[name] != actual[name]:
            lines.append(f"modified: {name}")
    return lines


def check() -> int:
    """Regenerate into a temporary directory and compare with the checked-in tree."""
    with tempfile.TemporaryDirectory(prefix="lance-codegen-") as tmp:
        expected = read_tree(generate(Path(tmp)))
    differences = diff_trees(expected, read_tree(TARGET))
    rel_target = TARGET.relative_to(ROOT)
    if differences:
        print(f"{rel_target} is out of date with {SPEC.relative_to(ROOT)}; run scripts/codegen.py:")
        for line in differences:
            print(f"  {line}")
        return 1
    print(f"{rel_target} is up to date ({len(expected)} files)")
    return 0


def write() -> int:
    """Regenerate and replace the checked-in package directory."""
    GENERATED.mkdir(exist_ok=True)
    # A sibling temporary directory keeps the final renames on one file system.
    with tempfile.TemporaryDirectory(prefix=".codegen-", dir=GENERATED) as tmp:
        fresh = generate(Path(tmp))
        rel_target = TARGET.relative_to(ROOT)
        if read_tree(fresh) == read_tree(TARGET):
            print(f"{rel_target} already up to date")
            return 0
        if TARGET.exists():
            TARGET.replace(Path(tmp) / "previous")  # deleted with the temporary directory
        fresh.replace(TARGET)
    print(f"regenerated {rel_target} from {SPEC.relative_to(ROOT)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--check",
        action="store_true",
        help="do not write; exit 1 and list differing files if the generated tree is stale",
    )
    args = parser.parse_args(argv)
    try:
        check_pins()
        return check() if args.check else write()
    except CodegenError as err:
        print(f"codegen: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
