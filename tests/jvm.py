"""Real JVM servers for the suite: classpaths resolved by Maven into a cache, and a launcher.

Each server the suite runs (Unity Catalog OSS, the Iceberg project's REST catalog
server, Hive Metastore 4, the lance-spark connector) has a small Maven project under
``jvm/<name>/pom.xml`` that names its artifacts. :func:`classpath` asks Maven for the
resolved classpath once; the jars land in Maven's own cache (``~/.m2``) and the
classpath string in ``~/.cache/lance-namespace-async/jvm/<name>-<pom hash>.classpath``
(``LANCE_NS_JVM_CACHE`` overrides the folder), so a changed pom resolves again and
nothing downloaded ever enters the repository.

``.ci/run`` resolves every project before pytest (``python tests/jvm.py resolve``) so
that a slow download never eats a test's timeout.

Missing tools: outside CI a test that needs Java or Maven is skipped with a line saying
how to get them; with ``CI=true`` it fails, because a CI run that silently skipped the
real servers would prove nothing.

:func:`java_server` starts a JVM without a shell, in a session of its own, with
``PR_SET_PDEATHSIG`` so it dies with the test process, waits for a readiness probe,
and on exit sends SIGTERM, then SIGKILL after a grace period, and reaps it.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from uvicorn_thread import free_port

__all__ = [
    "JVM_PROJECTS",
    "SPARK_JAVA17_OPTIONS",
    "JavaServer",
    "JvmUnavailable",
    "classpath",
    "free_port",
    "in_ci",
    "java_executable",
    "java_server",
    "need",
]

T = TypeVar("T")

JVM_PROJECTS = Path(__file__).resolve().parents[1] / "jvm"
_PR_SET_PDEATHSIG = 1
#: Spark 3.5 on Java 17 needs these (what Spark's own launcher adds: JavaModuleOptions)
SPARK_JAVA17_OPTIONS = (
    "-XX:+IgnoreUnrecognizedVMOptions",
    *(
        f"--add-opens=java.base/{package}=ALL-UNNAMED"
        for package in (
            "java.lang",
            "java.lang.invoke",
            "java.lang.reflect",
            "java.io",
            "java.net",
            "java.nio",
            "java.util",
            "java.util.concurrent",
            "java.util.concurrent.atomic",
            "jdk.internal.ref",
            "sun.nio.ch",
            "sun.nio.cs",
            "sun.security.action",
            "sun.util.calendar",
        )
    ),
    "-Djdk.reflect.useDirectMethodHandle=false",
)
STOP_GRACE = 15.0
#: Maven's first resolution of a server downloads ~100-300 MB from Maven Central
RESOLVE_TIMEOUT = 1500.0
INSTALL_HINT = (
    "install a JDK 17+ and Maven (e.g. `apt-get install openjdk-17-jdk-headless maven`), "
    "then run `python tests/jvm.py resolve` once"
)


class JvmUnavailable(RuntimeError):
    """Java, Maven or a server's classpath cannot be had on this machine."""


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def need(get: Callable[[], T]) -> T:
    """``get()``, or skip the test (fail it under CI) with the reason and the install hint."""
    import pytest

    try:
        return get()
    except JvmUnavailable as exc:
        if in_ci():
            pytest.fail(f"{exc} (CI=true: a missing server is a failure, not a skip)")
        pytest.skip(f"{exc}; to run these tests, {INSTALL_HINT}")


def _java_major(java: str) -> int | None:
    try:
        done = subprocess.run(
            [java, "-version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.search(r'version "(\d+)(?:\.(\d+))?', done.stderr + done.stdout)
    if found is None:
        return None
    major = int(found.group(1))
    return int(found.group(2) or 0) if major == 1 else major


def java_executable(minimum: int = 17, maximum: int | None = None) -> str:
    """A ``java`` whose major version is within [minimum, maximum].

    Looked for in ``JAVA_HOME``, on ``PATH``, then under ``/usr/lib/jvm`` (where Debian
    and Temurin packages put their JDKs), first match wins.
    """
    candidates: list[str] = []
    if home := os.environ.get("JAVA_HOME"):
        candidates.append(str(Path(home) / "bin" / "java"))
    if on_path := shutil.which("java"):
        candidates.append(on_path)
    jvm_root = Path("/usr/lib/jvm")
    if jvm_root.is_dir():
        candidates.extend(str(p / "bin" / "java") for p in sorted(jvm_root.iterdir()))
    seen: set[str] = set()
    for candidate in candidates:
        real = os.path.realpath(candidate)
        if real in seen or not os.access(real, os.X_OK):
            continue
        seen.add(real)
        major = _java_major(real)
        if major is not None and major >= minimum and (maximum is None or major <= maximum):
            return real
    wanted = f"{minimum}+" if maximum is None else f"{minimum}..{maximum}"
    raise JvmUnavailable(f"no Java {wanted} found (JAVA_HOME, PATH, /usr/lib/jvm)")


def _cache_dir() -> Path:
    base = os.environ.get("LANCE_NS_JVM_CACHE")
    path = Path(base) if base else Path.home() / ".cache" / "lance-namespace-async" / "jvm"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _classpath_file(name: str) -> Path:
    pom = JVM_PROJECTS / name / "pom.xml"
    if not pom.is_file():
        raise JvmUnavailable(f"no Maven project {pom}")
    digest = hashlib.sha256(pom.read_bytes()).hexdigest()[:16]
    return _cache_dir() / f"{name}-{digest}.classpath"


def _cached(path: Path) -> str | None:
    try:
        text = path.read_text().strip()
    except FileNotFoundError:
        return None
    jars = text.split(os.pathsep)
    return text if jars and all(os.path.exists(jar) for jar in jars) else None


def classpath(name: str) -> str:
    """The resolved classpath of ``jvm/<name>/pom.xml`` (Maven runs once per pom version)."""
    target = _classpath_file(name)
    if (known := _cached(target)) is not None:
        return known
    mvn = shutil.which("mvn")
    if mvn is None:
        raise JvmUnavailable("no Maven (mvn) on PATH")
    partial = target.with_suffix(f".{os.getpid()}.tmp")
    command = [
        mvn,
        "-B",
        "-q",
        "-f",
        str(JVM_PROJECTS / name / "pom.xml"),
        "dependency:build-classpath",
        f"-Dmdep.outputFile={partial}",
    ]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=RESOLVE_TIMEOUT, check=False
        )
    except subprocess.TimeoutExpired as exc:
        waited = f"{RESOLVE_TIMEOUT:.0f} s"
        raise JvmUnavailable(f"Maven did not resolve {name} within {waited}") from exc
    if done.returncode != 0 or not partial.is_file():
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-25:])
        raise JvmUnavailable(f"Maven could not resolve {name} (exit {done.returncode}):\n{tail}")
    partial.replace(target)
    resolved = _cached(target)
    if resolved is None:
        raise JvmUnavailable(f"Maven resolved {name} but its classpath names missing jars")
    return resolved


@dataclass
class JavaServer:
    """A running JVM server: its port, working directory and console log."""

    name: str
    port: int
    workdir: Path
    console: Path
    startup_seconds: float
    process: subprocess.Popen[bytes] = field(repr=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log_tail(self, lines: int = 80) -> str:
        try:
            text = self.console.read_text(errors="replace")
        except FileNotFoundError:
            return f"({self.console} does not exist)"
        return f"--- {self.console} (last {lines} lines) ---\n" + "\n".join(
            text.splitlines()[-lines:]
        )


def _die_with_parent() -> tuple[list[str], Callable[[], None] | None]:
    """``PR_SET_PDEATHSIG``: util-linux's ``setpriv`` execs java (same PID), else prctl."""
    setpriv = shutil.which("setpriv")
    if setpriv is not None:
        return [setpriv, "--pdeathsig", "KILL"], None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return [], None

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)

    return [], preexec


def stop(process: subprocess.Popen[bytes], grace: float = STOP_GRACE) -> None:
    """SIGTERM, then SIGKILL after a grace period; always reaped."""
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        process.terminate()
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        process.wait(grace)


def port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


@contextlib.contextmanager
def java_server(
    name: str,
    *,
    main_class: str,
    classpath_entries: Sequence[str],
    workdir: Path,
    port: int,
    ready: Callable[[], bool],
    args: Sequence[str] = (),
    jvm_options: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    drop_env: Sequence[str] = (),
    java: str | None = None,
    startup_timeout: float = 180.0,
) -> Iterator[JavaServer]:
    """Run ``main_class`` until the ``with`` block ends; ``ready()`` says it is serving.

    The JVM's stdout/stderr go to ``workdir/jvm.out``; ``java.io.tmpdir`` is
    ``workdir/tmp`` so the server leaves nothing elsewhere. Inherited environment
    variables starting with a prefix in ``drop_env`` are left out (``HIVE_CONF_DIR``
    and the like would point the server at the machine's own configuration).
    """
    workdir.mkdir(parents=True, exist_ok=True)
    tmp = workdir / "tmp"
    tmp.mkdir(exist_ok=True)
    console = workdir / "jvm.out"
    wrapper, preexec = _die_with_parent()
    command = [
        *wrapper,
        java or java_executable(),
        "-Xmx768m",
        "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1",  # C1 only: a faster start for a short-lived server
        "-XX:-UsePerfData",  # else the JVM writes /tmp/hsperfdata_$USER/<pid>
        f"-Djava.io.tmpdir={tmp}",
        "-Djava.net.preferIPv4Stack=true",
        *jvm_options,
        "-cp",
        os.pathsep.join(classpath_entries),
        main_class,
        *args,
    ]
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(tuple(drop_env))}
    full_env.update(env or {})
    started = time.monotonic()
    with console.open("ab") as out:
        process = subprocess.Popen(
            command,
            cwd=workdir,
            env=full_env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=preexec,
        )
    server = JavaServer(name, port, workdir, console, 0.0, process)
    try:
        deadline = started + startup_timeout
        while True:
            if process.poll() is not None:
                raise JvmUnavailable(
                    f"{name} exited with status {process.returncode} while starting\n"
                    + server.log_tail()
                )
            with contextlib.suppress(Exception):
                if ready():
                    break
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"{name} did not get ready within {startup_timeout:.0f} s\n" + server.log_tail()
                )
            time.sleep(0.25)
        server.startup_seconds = time.monotonic() - started
        yield server
    finally:
        stop(process)


def _main(argv: Sequence[str]) -> int:
    if not argv or argv[0] != "resolve":
        print("usage: python tests/jvm.py resolve [NAME ...]", file=sys.stderr)
        return 2
    names = list(argv[1:]) or sorted(
        p.name for p in JVM_PROJECTS.iterdir() if (p / "pom.xml").is_file()
    )
    status = 0
    for name in names:
        started = time.monotonic()
        try:
            jars = classpath(name).split(os.pathsep)
        except JvmUnavailable as exc:
            print(f"jvm: {name}: {exc}", file=sys.stderr)
            status = 1
            continue
        print(f"jvm: {name}: {len(jars)} jars ({time.monotonic() - started:.1f} s)")
    return status


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
