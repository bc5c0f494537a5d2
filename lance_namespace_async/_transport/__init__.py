"""The HTTP transport every HTTP backend (rest, iceberg, unity) shares.

Owns the configuration of an HTTP backend (:mod:`.config`), one call's scope and
deadline (:mod:`.calls`), the retry policy (:mod:`.policy`), auth (:mod:`.auth`),
httpx's client (:mod:`.client`) and the direct route from request bytes to answer
bytes (:mod:`.direct`), both held to one policy by :class:`~.transport.HttpTransport`;
the wires under it (:mod:`.wire`, :mod:`.lean`), the bounded body read
(:mod:`.body`), the typed errors of failed answers (:mod:`.failures`), and the JSON
call of the hand-written catalog backends (:mod:`.catalog`).

May import: the core (``_core``), ``errors``, ``models``. Never storage (its sibling
layer), a backend, the facade, the server or anything above them.
"""
