"""Metastore connections: a bounded pool of Thrift sockets, each call held to a budget.

Thrift is blocking and its socket only knows one timeout per wait, so a metastore
trickling a byte per ``read_timeout`` would hold a call for ever, and a length prefix
of 2 GiB makes the buffered transport ask the socket for 2 GiB at once. Every call
therefore carries a :class:`CallBudget` into its worker thread: the call's deadline
(``call_timeout``, or the caller's ``timeout=``), which every wait for the metastore
is cut to, and ``max_response_bytes``, counted over all the call reads, which also
caps each read. A connection that broke, timed out or was stopped mid-answer is
closed, never pooled again.
"""

from __future__ import annotations

import contextlib
import queue
import time
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import urlparse

import attrs
from pymetastore.hive_metastore import ThriftHiveMetastore
from thrift.protocol import TBinaryProtocol
from thrift.protocol.TProtocol import TProtocolException
from thrift.Thrift import TException
from thrift.transport import TSocket, TTransport

from .. import errors
from .._core.timeout import chosen_step, chosen_total
from ._properties import HiveConfig

__all__ = ["AnswerTooLarge", "CallBudget", "DeadlinePassed", "NotSent", "Pool"]

T = TypeVar("T")
#: the most one socket read asks for (the buffered transport asks for whole strings)
_READ_CHUNK = 1024 * 1024
#: what the protocol raises for a length prefix it refuses: an answer, not a broken link
_MALFORMED = (
    TTransport.TTransportException.SIZE_LIMIT,
    TTransport.TTransportException.NEGATIVE_SIZE,
)


@attrs.frozen
class CallBudget:
    """What one metastore call may spend: made where the caller's ``timeout=`` is known."""

    deadline: float | None  # time.monotonic() seconds; None: no deadline
    total: float | None
    connect: float | None
    read: float | None
    max_bytes: int

    @classmethod
    def for_call(cls, config: HiveConfig) -> CallBudget:
        total = chosen_total(config.call_timeout / 1000)
        return cls(
            deadline=None if total is None else time.monotonic() + total,
            total=total,
            connect=chosen_step("connect", config.connect_timeout / 1000),
            read=chosen_step("read", config.read_timeout / 1000),
            max_bytes=config.max_response_bytes,
        )


class DeadlinePassed(Exception):
    """The call's deadline passed while it waited for the metastore."""


class AnswerTooLarge(Exception):
    """The metastore's answer went past ``max_response_bytes``."""


class NotSent(Exception):
    """Opening a connection failed: the request never reached the metastore."""


def _refused_length(exc: TTransport.TTransportException) -> Exception:
    """What a length prefix the protocol refused means: too large, or malformed."""
    if exc.type == TTransport.TTransportException.SIZE_LIMIT:
        return AnswerTooLarge()
    malformed: Exception = TProtocolException(TProtocolException.INVALID_DATA, str(exc))
    return malformed


class _BudgetedSocket(TSocket.TSocket):  # type: ignore[misc]
    """A Thrift socket whose every wait and read is held to the current call's budget."""

    def __init__(self, host: str, port: int, budget: CallBudget) -> None:
        super().__init__(host, port)
        self.budget = budget
        self.answered = 0  # bytes read for the current call

    def begin(self, budget: CallBudget) -> None:
        self.budget = budget
        self.answered = 0

    def _wait(self, step: float | None) -> float | None:
        deadline = self.budget.deadline
        if deadline is None:
            return step
        left = deadline - time.monotonic()
        if left <= 0:
            raise DeadlinePassed
        return left if step is None else min(step, left)

    def _timed_out(self) -> bool:
        deadline = self.budget.deadline
        return deadline is not None and time.monotonic() >= deadline

    def open(self) -> None:
        self._timeout = self._wait(self.budget.connect)
        try:
            super().open()
        except TTransport.TTransportException:
            if self._timed_out():
                raise DeadlinePassed from None
            raise

    def read(self, sz: int) -> bytes:
        if self.handle is not None:
            self.handle.settimeout(self._wait(self.budget.read))
        left = self.budget.max_bytes - self.answered
        try:
            data: bytes = super().read(max(1, min(sz, left + 1, _READ_CHUNK)))
        except TTransport.TTransportException as exc:
            if exc.type == TTransport.TTransportException.TIMED_OUT and self._timed_out():
                raise DeadlinePassed from None
            raise
        self.answered += len(data)
        if self.answered > self.budget.max_bytes:
            raise AnswerTooLarge
        return data

    def write(self, buff: bytes) -> None:
        if self.handle is not None:
            self.handle.settimeout(self._wait(self.budget.read))
        try:
            super().write(buff)
        except TTransport.TTransportException:
            if self._timed_out():
                raise DeadlinePassed from None
            raise


class _Connection:
    def __init__(self, config: HiveConfig, budget: CallBudget) -> None:
        parsed = urlparse(config.uri)  # HiveConfig checked it names a host and a port
        self.socket = _BudgetedSocket(str(parsed.hostname), int(parsed.port or 0), budget)
        self.transport = TTransport.TBufferedTransport(self.socket)
        protocol = TBinaryProtocol.TBinaryProtocol(
            self.transport,
            string_length_limit=config.max_response_bytes,
            container_length_limit=config.max_response_bytes,
        )
        self.client = ThriftHiveMetastore.Client(protocol)
        self.transport.open()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.transport.close()


class Pool:
    """Open metastore connections reused across calls and threads (at most one per
    worker thread is in use at a time)."""

    def __init__(self, config: HiveConfig) -> None:
        self.config = config
        self.idle: queue.LifoQueue[_Connection] = queue.LifoQueue()
        self.closed = False

    def run(self, call: Callable[[Any], T], budget: CallBudget, *, idempotent: bool) -> T:
        """``call`` on a connection; a broken connection is dropped, and the call made
        again on another while it is idempotent (or was never sent) and retries are left.
        A passed deadline, an oversized or malformed answer end the call at once."""
        attempts = self.config.max_retries + 1
        for attempt in range(attempts):
            try:
                connection = self._take(budget)
            except TException as exc:
                if attempt + 1 >= attempts:
                    raise NotSent(str(exc)) from exc
                continue
            try:
                result = call(connection.client)
            except (TTransport.TTransportException, OSError, EOFError) as exc:
                connection.close()  # never back to the pool
                if isinstance(exc, TTransport.TTransportException) and exc.type in _MALFORMED:
                    raise _refused_length(exc) from None  # an answer, not a broken link
                self._drain()  # the idle ones likely broke with it (a metastore restart)
                if not idempotent or attempt + 1 >= attempts:
                    raise
                continue
            except (DeadlinePassed, AnswerTooLarge, TProtocolException):
                connection.close()  # stopped mid-answer: the next bytes are not an answer
                raise
            except TException:
                self.idle.put(connection)  # a whole answer (a Hive exception): reusable
                raise
            except BaseException:
                connection.close()  # anything else may have stopped mid-answer
                raise
            self.idle.put(connection)
            return result
        raise AssertionError("unreachable")  # pragma: no cover

    def _take(self, budget: CallBudget) -> _Connection:
        if self.closed:
            raise errors.InvalidInputError("this namespace is closed")
        try:
            connection = self.idle.get_nowait()
        except queue.Empty:
            return _Connection(self.config, budget)
        connection.socket.begin(budget)
        return connection

    def _drain(self) -> None:
        while True:
            try:
                self.idle.get_nowait().close()
            except queue.Empty:
                return

    def close(self) -> None:
        self.closed = True
        self._drain()
