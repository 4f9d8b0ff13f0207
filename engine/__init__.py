"""The generic explicit-state checker: it knows nothing of Kafka.

A model is anything with ``init_states``, ``actions``, ``next_state``, ``properties`` and
``fingerprint`` (:class:`~isrcheck.engine.core.Model`, Stateright's ``Model``); the engine explores
it breadth-first in one process (:mod:`.checker`) or over forked workers (:mod:`.parallel`), walks it
at random (:mod:`.simulate`, :mod:`.swarm`), checks leads-to properties under fairness
(:mod:`.liveness`), moves its states as bytes (:mod:`.codec`) and writes snapshots of a
search that a killed run resumes from (:mod:`.checkpoint`). Every way of moving through a
model is built from :mod:`.explore`. The Kafka model (``isrcheck.model``) and the peer
transcriptions (``isrcheck.peers``) are plugged into it; neither is imported here.
"""
