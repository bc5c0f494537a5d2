"""Developer sessions: tests, lint, typecheck, codegen check, demo.

`nox` runs the default set (everything CI runs) in the interpreter that runs nox
itself: the `.venv` that `scripts/check` (the README's test command) sets up with
`.[dev]`, which holds every tool of every session. One environment instead of one
per session saves the two extra installs of `.[dev]` (~1 GB and a minute or more
each on a fresh machine).

`nox -db venv` (or `-db uv`) gives each session its own virtualenv instead, built
from just what that session needs: slower, but it checks that the declared
dependencies suffice. `nox -s demo` runs the quickstart.
"""

from __future__ import annotations

import os
import sys

import nox

nox.options.sessions = ["lint", "layers", "typecheck", "codegen", "docs", "tests"]
nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_missing_interpreters = True
# the shared environment: sessions run in nox's own interpreter (see the docstring)
nox.options.default_venv_backend = "none"

PYTHON = "3.11"


def _shared(session: nox.Session) -> bool:
    return session.venv_backend == "none"


def _install(session: nox.Session, *requirements: str) -> None:
    """Install into the session's own virtualenv; the shared one has everything already."""
    if not _shared(session):
        session.install(*requirements)


def _python(session: nox.Session) -> str:
    # without a virtualenv of its own, "python" would be whatever PATH finds first
    return sys.executable if _shared(session) else "python"


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """The whole suite against real pylance on real temporary folders."""
    _install(session, "-e", ".[dev]")
    # the real JVM servers' jars (jvm/*/pom.xml) before pytest, so a slow first download
    # never eats a test's timeout; without Java/Maven those tests skip (fail with CI=true)
    in_ci = os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}
    session.run(_python(session), "tests/jvm.py", "resolve", success_codes=[0] if in_ci else [0, 1])
    # the slowest tests in the log: where the suite's 30 minutes go
    session.run(_python(session), "-m", "pytest", "--durations=25", *session.posargs)


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    _install(session, "ruff==0.17.6")
    session.run(_python(session), "-m", "ruff", "check", ".")
    session.run(_python(session), "-m", "ruff", "format", "--check", ".")


@nox.session(python=PYTHON)
def layers(session: nox.Session) -> None:
    """The package's layers and no import cycles ([tool.importlinter], ARCHITECTURE.md)."""
    _install(session, "-e", ".", "import-linter>=2.17,<3")
    # lint-imports' own entry point, run by this interpreter (no PATH lookup)
    lint_imports = "import sys, importlinter.cli as c; sys.exit(c.lint_imports_command())"
    session.run(_python(session), "-c", lint_imports, "--no-cache")


@nox.session(python=PYTHON)
def typecheck(session: nox.Session) -> None:
    _install(session, "-e", ".[dev]")
    session.run(_python(session), "-m", "mypy", "--strict", "lance_namespace_async")


@nox.session(python=PYTHON)
def codegen(session: nox.Session) -> None:
    """generated/ must be exactly what spec/rest.yaml produces."""
    _install(session, "openapi-python-client==0.29.1", "ruff==0.17.6", "openapi-spec-validator")
    session.run(_python(session), "-m", "openapi_spec_validator", "spec/rest.yaml")
    session.run(_python(session), "scripts/codegen.py", "--check")


@nox.session(python=PYTHON)
def docs(session: nox.Session) -> None:
    """The documentation site: a broken link, page or docstring fails (mkdocs --strict).

    tests/test_docs.py runs the pages' code blocks; this only builds them.
    """
    _install(session, "-e", ".[docs]")
    # the site goes to a scratch folder: the build is the check, not the output
    site = session.create_tmp()
    session.run(
        _python(session),
        "-m",
        "mkdocs",
        "build",
        "--strict",
        "--site-dir",
        site,
        env={"NO_MKDOCS_2_WARNING": "1"},
    )


@nox.session(python=PYTHON)
def demo(session: nox.Session) -> None:
    """The README's first command: a directory catalog, pylance tables, a crawl."""
    _install(session, "-e", ".")
    session.run(_python(session), "examples/quickstart.py", *(session.posargs or ["demo-lance"]))


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """The performance report vs pylance (~15 min, --quick < 2 min; not part of CI)."""
    _install(session, "-e", ".[dev]")
    session.run(_python(session), "benchmarks/report.py", *session.posargs)
