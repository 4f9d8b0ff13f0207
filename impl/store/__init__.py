"""The metadata store's backends: :mod:`.embedded` (in-process, deterministic, no threads),
:mod:`.zookeeper` (a real ZooKeeper through kazoo) and :mod:`.remote` (the embedded store served over
TCP to a cluster's processes, and ``open_store`` that picks a backend from a spec), with
:mod:`.requests`, the store server's check of every request it is sent.

The interface they implement (sessions, znodes, ops, errors) is :mod:`isrcheck.impl.core.store`: the
cores speak its ops and errors, so it lives with them. The backends import the cores and the frames
(``impl/wire``), nothing else of impl (``tests/test_layering.py``).
"""
