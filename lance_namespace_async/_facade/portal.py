"""An event loop on a daemon thread, for blocking callers of the async backends."""

from __future__ import annotations

import threading
from concurrent.futures import Future

import anyio
from anyio.from_thread import BlockingPortal

__all__ = ["start_portal"]


def start_portal() -> tuple[BlockingPortal, threading.Thread]:
    """An event loop on a daemon thread, owned by nothing that finalizers touch.

    anyio's ``start_blocking_portal`` context manager, if never exited, is closed
    by interpreter finalization, which waits on the (frozen) loop thread forever.
    A daemon thread we own simply ends with the process when a facade is never
    closed; ``close()`` stops it cleanly.
    """
    started: Future[BlockingPortal] = Future()

    async def serve() -> None:
        async with BlockingPortal() as portal:
            started.set_result(portal)
            await portal.sleep_until_stopped()

    def run() -> None:
        try:
            anyio.run(serve)
        except BaseException as exc:  # pragma: no cover - surfaced to the starter
            if not started.done():
                started.set_exception(exc)
            raise

    thread = threading.Thread(target=run, name="lance-namespace-async-portal", daemon=True)
    thread.start()
    return started.result(), thread
