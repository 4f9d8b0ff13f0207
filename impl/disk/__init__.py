"""A broker's disk: the simulated and the real one (:mod:`.log`), the checksummed on-disk formats of
a log segment and of the checkpoint files (:mod:`.segment_format`, :mod:`.checkpoint_format`), and
the errors of a damaged or unreadable file (:mod:`.errors`).

Why a room of its own: a disk performs the broker core's ``Persist`` effects and gives back its
``DiskImage``, so it imports the cores and nothing else of impl; the simulator and the broker
process both run on it (``tests/test_layering.py``).
"""
