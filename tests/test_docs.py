"""Every code block of README.md and docs/ runs as pasted.

Blocks are fenced with a language. ``python`` blocks run as a script of their own
(``python block.py``) and ``bash`` blocks with ``bash -eo pipefail``, each in a fresh
interpreter, in page order (docs/ sorted, then README.md), from a working directory shared
by the whole run; they must exit 0. The exception is Spark: the blocks that use pyspark
run as scripts in one interpreter where Spark is already up (tests/docs_spark_runner.py,
started with the module, so Spark starts while the other pages run), as in a notebook:
each block's ``getOrCreate()`` gets that session. A block that cannot run here (it
installs packages, or starts a server that runs until stopped) says why in its first
line, visibly to the reader::

    # not run by the docs test: <reason>

``text`` blocks are command synopses and ``yaml``, ``toml`` and ``json`` blocks must parse
(a config file, an access-log line); any other
language, an unlabelled fence or a fence this parser cannot see (indented) fails, so no
block goes unchecked.

The docs name the places a reader has; the test maps each to its own before running a
block (:data:`PLACES`): ``/data/...`` to a temporary directory shared by all pages,
``http://127.0.0.1:2333`` to a real ``lance-ns serve`` over ``/data/lance``
(tests/serve_process.py), ``:8181`` to the Iceberg REST look-alike
(tests/iceberg_rest_server.py), ``:8080`` to the Unity look-alike (tests/unity_server.py),
``:5000`` to moto's Glue (tests/glue_fixtures.py) and ``thrift://127.0.0.1:9083`` to the
session's Hive Metastore 2.3 (conftest). Servers start on first use and live for the module.

Also checked here: the operations table of docs/operations.md is what the backends'
``list_operations()`` say (scripts/operations_table.py regenerates it), and the
conformance kit's scenario count in docs/conformance.md is ``len(SCENARIOS)``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import select
import subprocess
import sys
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from glue_fixtures import FAKE_AWS_ENV, moto_glue, reset_moto
from hive_metastore import Metastore
from iceberg_rest_server import iceberg_catalog
from serve_process import lance_ns_serve
from unity_server import unity_catalog

from jvm import JvmUnavailable, java_executable, need

REPO = Path(__file__).resolve().parent.parent
#: README.md last: its Spark block then finds Spark warmed up by the time the docs ran
PAGES = [*sorted((REPO / "docs").rglob("*.md")), REPO / "README.md"]

RUN = {"python", "bash"}
DATA = {"text", "yaml", "toml", "json"}
NOT_RUN = re.compile(r"^# not run by the docs test: (?P<reason>\S.*)$")
FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>```+|~~~+)(?P<lang>[\w-]*)")
BLOCK_TIMEOUT = 240  # seconds; a Spark block starts a JVM

#: placeholder in the docs -> the server the test starts for it
PLACES = {
    "/data/": "data",
    "http://127.0.0.1:2333": "serve",
    "http://127.0.0.1:8181": "iceberg",
    "http://127.0.0.1:8080": "unity",
    "http://127.0.0.1:5000": "glue",
    "thrift://127.0.0.1:9083": "hive",
}


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    lang: str
    code: str

    @property
    def not_run_reason(self) -> str | None:
        first = self.code.split("\n", 1)[0]
        found = NOT_RUN.match(first)
        return found["reason"] if found else None

    def __str__(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line} ({self.lang})"


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of ``page``; an indented fence is an error (see the docstring)."""
    found: list[Block] = []
    lines = page.read_text().split("\n")
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        where = f"{page.relative_to(REPO)}:{index + 1}"
        assert not opening["indent"], f"{where}: indented fence; the docs test cannot see it"
        assert opening["lang"], f"{where}: a fence without a language"
        end = index + 1
        while end < len(lines) and not lines[end].startswith(opening["fence"]):
            end += 1
        assert end < len(lines), f"{where}: unclosed fence"
        code = "\n".join(lines[index + 1 : end]) + "\n"
        found.append(Block(page, index + 1, opening["lang"], code))
        index = end + 1
    return found


def test_every_block_is_run_checked_or_says_why_not() -> None:
    for page in PAGES:
        for block in blocks(page):
            assert block.lang in RUN | DATA, (
                f"{block}: language {block.lang!r} is neither run nor data"
            )
            if block.lang in DATA:
                assert block.not_run_reason is None, f"{block}: data blocks are never run"


# -- the places the docs name ------------------------------------------------------------------


class SparkRunner:
    """tests/docs_spark_runner.py: one interpreter that runs every Spark block."""

    def __init__(self, workdir: Path) -> None:
        self._workdir = workdir
        read_end, write_end = os.pipe()
        self._log = open(workdir / "spark-runner.log", "w")  # noqa: SIM115 - closed in stop()
        self._process = subprocess.Popen(
            [
                sys.executable,
                str(Path(__file__).with_name("docs_spark_runner.py")),
                str(write_end),
                str(workdir / "spark-warmup"),
            ],
            cwd=workdir,
            env=_environment(),
            stdin=subprocess.PIPE,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            text=True,
            pass_fds=(write_end,),
        )
        os.close(write_end)
        self._results = os.fdopen(read_end)
        self._ran = 0

    def run(self, script: Path) -> tuple[int, str, str]:
        """Run ``script`` there: its exit code, stdout and stderr."""
        self._ran += 1
        out = self._workdir / f"spark-block-{self._ran}.out"
        err = self._workdir / f"spark-block-{self._ran}.err"
        assert self._process.stdin is not None
        request = {"script": str(script), "stdout": str(out), "stderr": str(err)}
        self._process.stdin.write(json.dumps(request) + "\n")
        self._process.stdin.flush()
        # the first block also waits for Spark's start and warm-up
        ready, _, _ = select.select([self._results], [], [], BLOCK_TIMEOUT * 2)
        line = self._results.readline() if ready else ""
        if not line:
            return 1, "", f"no answer from the Spark runner; its log:\n{self.log_tail()}"
        answer = json.loads(line)
        if "warmup_failed" in answer:
            return 1, "", f"Spark did not start:\n{answer['warmup_failed']}\n{self.log_tail()}"
        return int(answer["code"]), out.read_text(), err.read_text()

    def log_tail(self) -> str:
        return (self._workdir / "spark-runner.log").read_text()[-3000:]

    def stop(self) -> None:
        assert self._process.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            self._process.stdin.close()
        try:
            self._process.wait(60)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._results.close()
        self._log.close()


class Places:
    """The servers behind the docs' placeholders, started on first use; Spark at once."""

    def __init__(self, workdir: Path, stack: contextlib.ExitStack, hive: Callable[[], str]):
        self.workdir = workdir
        self.root = workdir / "data" / "lance"
        self.root.mkdir(parents=True)
        self._stack = stack
        self._hive = hive
        self._started: dict[str, str] = {"data": f"{self.root.parent}/"}
        self.spark: SparkRunner | None = None
        try:
            java_executable()
        except JvmUnavailable:
            return  # the Spark blocks skip (fail with CI=true) when they come
        self.spark = SparkRunner(workdir)
        stack.callback(self.spark.stop)

    def address(self, server: str) -> str:
        if server not in self._started:
            self._started[server] = self._start(server)
        return self._started[server]

    def _start(self, server: str) -> str:
        enter = self._stack.enter_context
        if server == "serve":
            return enter(lance_ns_serve({"root": str(self.root)})).uri
        if server == "iceberg":
            return enter(iceberg_catalog(self.workdir / "iceberg")).uri
        if server == "unity":
            return enter(unity_catalog()).uri
        if server == "glue":
            endpoint = enter(moto_glue())
            # moto's resources live in this process, beyond this server: leave none behind
            self._stack.callback(reset_moto, endpoint)
            return endpoint
        assert server == "hive", server
        return self._hive()

    def substitute(self, code: str) -> str:
        for placeholder, server in PLACES.items():
            if placeholder in code:
                code = code.replace(placeholder, self.address(server))
        return code


@pytest.fixture(scope="module")
def places(
    tmp_path_factory: pytest.TempPathFactory,
    hive_metastores: Callable[[str], Metastore],
) -> Iterator[Places]:
    with contextlib.ExitStack() as stack:
        yield Places(tmp_path_factory.mktemp("docs"), stack, lambda: hive_metastores("2.3").uri)


def _environment() -> dict[str, str]:
    python_path = [str(REPO), str(REPO / "generated"), os.environ.get("PYTHONPATH", "")]
    # moto's credentials; None unsets a variable (a profile of the machine must not leak in)
    unset = {key for key, value in FAKE_AWS_ENV.items() if value is None}
    aws = {key: value for key, value in FAKE_AWS_ENV.items() if value is not None}
    return {
        **{key: value for key, value in os.environ.items() if key not in unset},
        **aws,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": os.pathsep.join(part for part in python_path if part),
        # Spark blocks: the driver binds loopback and runs its workers in this interpreter
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
    }


def _run(block: Block, places: Places) -> None:
    code = places.substitute(block.code)
    if block.lang == "yaml":
        yaml.safe_load(code)
        return
    if block.lang == "toml":
        tomllib.loads(code)
        return
    if block.lang == "json":
        for line in filter(str.strip, code.splitlines()):  # JSON lines: a document a line
            json.loads(line)
        return
    if block.lang == "text":
        return
    script = places.workdir / ("block.py" if block.lang == "python" else "block.sh")
    if _needs_spark(block) and places.spark is not None:
        script = places.workdir / f"spark_block_{block.page.stem}_{block.line}.py"
        script.write_text(code)
        returncode, stdout, stderr = places.spark.run(script)
        assert returncode == 0, (
            f"{block} exited {returncode}\n--- code\n{code}\n--- stdout\n{stdout[-3000:]}"
            f"\n--- stderr\n{stderr[-5000:]}"
        )
        return
    script.write_text(code)
    command = (
        [sys.executable, str(script)]
        if block.lang == "python"
        else ["bash", "-eo", "pipefail", str(script)]
    )
    done = subprocess.run(
        command,
        cwd=places.workdir,
        env=_environment(),
        capture_output=True,
        text=True,
        timeout=BLOCK_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, (
        f"{block} exited {done.returncode}\n--- code\n{code}\n--- stdout\n{done.stdout[-3000:]}"
        f"\n--- stderr\n{done.stderr[-5000:]}"
    )


def _needs_spark(block: Block) -> bool:
    return block.lang == "python" and "pyspark" in block.code


def _needs_java(block: Block) -> bool:
    return _needs_spark(block) or (block.lang == "python" and "thrift://" in block.code)


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(REPO)))
def test_the_blocks_of_a_page_run_as_pasted(page: Path, places: Places) -> None:
    ran = 0
    for block in blocks(page):
        if block.not_run_reason is not None:
            continue
        if _needs_java(block):
            # the Java servers and Spark skip (fail with CI=true) without a JVM
            from jvm import java_executable

            need(java_executable)
        _run(block, places)
        ran += 1
    runnable = [b for b in blocks(page) if b.not_run_reason is None]
    assert ran == len(runnable)


# -- facts the docs state that must not drift -----------------------------------------------------


def test_the_operations_table_is_what_the_backends_implement() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "operations_table.py"), "--check"],
        env=_environment(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_kit_count_in_the_docs_is_the_kits() -> None:
    from lance_namespace_async.testing import SCENARIOS

    text = (REPO / "docs" / "conformance.md").read_text()
    assert f"There are {len(SCENARIOS)} scenarios" in text
