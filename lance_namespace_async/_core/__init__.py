"""The core: what every backend is and speaks, with no I/O of its own.

Owns the operation table (:mod:`.operations`, and the methods generated from it in
:mod:`.operation_methods`), the interface every backend implements
(:class:`~.base.AsyncLanceNamespace`), ``connect()``'s registry of backends
(:mod:`.registry`, which names them as strings and imports them only when asked),
identifiers, create/drop modes, paging, per-call timeouts, the configuration
properties of every backend (:mod:`.config`), unique names, the namespace guard,
pylance's interface (:mod:`.peer`), and Arrow data as users hold it and as the
protocol carries it (:mod:`.arrow_data`, :mod:`.arrow_json`, :mod:`.arrow_guard`).

May import: ``errors``, ``models``, and the standard library and third-party
packages. Never the transport, storage, a backend, the facade, the server or
anything above them (import-linter's layers contract in pyproject.toml).
"""
