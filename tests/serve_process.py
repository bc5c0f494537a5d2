"""``lance-ns serve`` as a real process on a free 127.0.0.1 port, for the tests that
need exactly what an operator runs (the CLI, ``serve()`` and its connection bounds)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass
class ServeProcess:
    port: int
    process: subprocess.Popen[str]
    #: the process's stderr, once it has exited (at the end of ``lance_ns_serve``)
    stderr: str = ""

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise AssertionError("no VmRSS")


@contextlib.contextmanager
def lance_ns_serve(
    properties: dict[str, str],
    *options: str,
    env: dict[str, str] | None = None,
    impl: str | None = "dir",
    prefix: Sequence[str] = (),
) -> Iterator[ServeProcess]:
    """Start ``lance-ns serve --impl <impl>`` (no ``--impl`` when None: ``--mount`` in
    ``options``) with ``properties`` and ``options``; stop it
    (SIGTERM) on exit and require a clean exit (code 0). ``prefix`` runs the command
    through another (``prlimit --as=N --``: an address-space limit for attacks)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    script = Path(sys.executable).parent / "lance-ns"
    command = (
        [str(script)] if script.exists() else [sys.executable, "-m", "lance_namespace_async._cli"]
    )
    props = [arg for key, value in properties.items() for arg in ("--prop", f"{key}={value}")]
    process = subprocess.Popen(
        [
            *prefix,
            *command,
            "serve",
            *(["--impl", impl] if impl is not None else []),
            *props,
            "--port",
            str(port),
            *options,
        ],
        env={**os.environ, **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    served: ServeProcess | None = None
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                assert process.poll() is None, process.communicate()[1]
                assert time.monotonic() < deadline, "lance-ns serve did not start"
                time.sleep(0.05)
        served = ServeProcess(port, process)
        yield served
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=20)
        if served is not None:
            served.stderr = stderr
    assert process.returncode == 0, stderr
