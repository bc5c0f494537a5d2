"""Storage: what the backends that store tables do with the Lance tables themselves.

Owns where a table is and the one containment rule (:mod:`.places`), opening,
inspecting and deleting tables off the event loop with the drop and placement
rules (:mod:`.tables`), confinement to the storage root (:mod:`.containment`),
pylance's failures as typed errors (:mod:`.failures`), requests translated to
pylance's arguments (:mod:`.requests`, :mod:`.ref_names`), every data, index, tag,
version and schema operation of the catalog backends written once
(:mod:`.operations` over :mod:`.table_base`, :mod:`.data_ops`,
:mod:`.metadata_ops`), credentials a catalog vends (:mod:`.vended_credentials`),
and what a storage worker process of the server runs (:mod:`.worker_process`).

May import: the core (``_core``), ``errors``, ``models``, pylance. Never the HTTP
transport (its sibling layer), a backend, the facade, the server or anything above.
"""
