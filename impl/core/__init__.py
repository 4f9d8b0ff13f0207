"""The sans-IO cores and what they share: the controller and broker state machines
(:mod:`.controller`, :mod:`.broker`), the messages and effects between them and their drivers, the
configuration, the store's interface and vocabulary, the znode layout, the tables, selectors and
epoch cache, and the assembled observation.

Why a room of its own: the same cores run under the simulator (``impl/rigs``) and in the real
processes (``impl/process``), so they import nothing of impl's other rooms, only ``isrcheck.specs``
and the package root (``tests/test_layering.py``). The store's interface lives here, not in
``impl/store``, because the cores speak its ops and errors; the backends implement it.
"""
