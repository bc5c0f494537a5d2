"""The facade: the async backends as blocking code and crawlers use them.

Owns the sync facade (:mod:`.sync`, :class:`~.sync.SyncLanceNamespace`, also
pylance's ``namespace_client``), the event loop on a daemon thread it drives
(:mod:`.portal`), and the concurrent walk of a whole catalog (:mod:`.crawl`).
Backends are reached only through ``connect()``'s registry (by name, at run time),
never imported.

May import: the core (``_core``), ``errors``, ``models``. Never the transport,
storage, a backend, the server, the CLI, Spark or the kit.
"""
