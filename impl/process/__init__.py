"""The real cluster's processes and what runs them: the asyncio driver of one core
(:mod:`.runtime`), the broker process (:mod:`.node`), the store-server / controller-candidate
process (:mod:`.coordinator`), the client library (:mod:`.client`), the local cluster launcher behind
``isrcheck cluster`` (:mod:`.cluster`, with :mod:`.cluster_state`, ``cluster.json`` read as untrusted
input), a process's routes through the nemesis proxies (:mod:`.routes`), its own event log
(:mod:`.event_log`), the warning at start about settings the model shows unsafe
(:mod:`.unsafe_settings`) and a stopped process's last error line (:mod:`.exit_reason`).

Why a room of its own: this is where impl does I/O (sockets, signals, files, subprocesses) around the
sans-IO cores. It imports the cores, the frames, the store and the disks, never the test rigs
(``tests/test_layering.py``).
"""
