"""Planted bugs: each context manager breaks one function of the implementation (by monkeypatching the
class attribute, restored on exit). The conformance tests assert that each break is reported, at the
first step where the implementation's observation departs from the model's.

The wrappers change behaviour around the implementation's own functions instead of copying them, so
they keep working while ``impl/`` evolves.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from isrcheck.impl.core import selectors
from isrcheck.impl.core.broker import BrokerCore


@contextlib.contextmanager
def _patch(obj: object, name: str, value: object) -> Iterator[None]:
    mp = pytest.MonkeyPatch()
    try:
        mp.setattr(obj, name, value)
        yield
    finally:
        mp.undo()


@contextlib.contextmanager
def no_truncation_on_become_follower() -> Iterator[None]:
    """A follower that learns of a new leader keeps its whole log (skips the truncation to its HW)."""
    original_follow, original_truncate = BrokerCore._become_follower, BrokerCore._truncate

    def follow(self, p, r, m):  # type: ignore[no-untyped-def]
        self._mutant_skip_truncate = True
        try:
            return original_follow(self, p, r, m)
        finally:
            self._mutant_skip_truncate = False

    def truncate(self, p, r, length):  # type: ignore[no-untyped-def]
        if getattr(self, "_mutant_skip_truncate", False):
            return None
        return original_truncate(self, p, r, length)

    with _patch(BrokerCore, "_become_follower", follow), _patch(BrokerCore, "_truncate", truncate):
        yield


@contextlib.contextmanager
def no_leader_epoch_fencing() -> Iterator[None]:
    """A broker applies a LeaderAndIsr whose leader epoch is not newer than the one it has."""
    original = BrokerCore._leader_and_isr

    def leader_and_isr(self, m):  # type: ignore[no-untyped-def]
        r = self.replicas.get(m.partition)
        saved = r.leader_epoch if r is not None else None
        if r is not None:
            r.leader_epoch = -1  # every request now looks newer
        original(self, m)
        if r is not None and r.leader_epoch == -1:
            r.leader_epoch = saved  # not applied after all (for another reason)

    with _patch(BrokerCore, "_leader_and_isr", leader_and_isr):
        yield


@contextlib.contextmanager
def no_controller_epoch_fencing() -> Iterator[None]:
    """A broker accepts requests from a controller older than the newest it has heard from."""
    original = BrokerCore._receive

    def receive(self, frm, msg):  # type: ignore[no-untyped-def]
        epoch = getattr(msg, "controller_epoch", None)
        if epoch is not None and epoch < self.controller_epoch:
            saved = self.controller_epoch
            self.controller_epoch = epoch
            try:
                return original(self, frm, msg)
            finally:
                self.controller_epoch = max(saved, self.controller_epoch)
        return original(self, frm, msg)

    with _patch(BrokerCore, "_receive", receive):
        yield


@contextlib.contextmanager
def elect_outside_isr() -> Iterator[None]:
    """The clean OfflinePartition selector takes the first live assigned replica, in the ISR or not."""
    original = selectors.OfflinePartitionLeaderSelector.select

    def select(self, v):  # type: ignore[no-untyped-def]
        alive = tuple(b for b in v.assignment if b in v.live)
        if alive and alive[0] not in v.isr and not v.unclean:
            return selectors.Decision(alive[0], frozenset(b for b in alive if b in v.isr) | {alive[0]}, alive)
        return original(self, v)

    with _patch(selectors.OfflinePartitionLeaderSelector, "select", select):
        yield


@contextlib.contextmanager
def fetch_answers_new_hw() -> Iterator[None]:
    """Wrong HW lag: a fetch response carries the HW computed after counting that fetch, not before."""
    original = BrokerCore._answer_fetch

    def answer(self, p, r, reply):  # type: ignore[no-untyped-def]
        frm, m, _answered, served = reply
        self._advance_hw(p, r)
        return original(self, p, r, (frm, m, r.hw, served))

    with _patch(BrokerCore, "_answer_fetch", answer):
        yield


@contextlib.contextmanager
def hw_ignores_isr() -> Iterator[None]:
    """Wrong HW: the leader advances its HW to its own LEO without waiting for the ISR."""
    original = BrokerCore._advance_hw

    def advance(self, p, r):  # type: ignore[no-untyped-def]
        saved = dict(r.remote_leo)
        for m in r.isr:
            r.remote_leo[m] = max(r.remote_leo.get(m, 0), r.leo)
        try:
            return original(self, p, r)
        finally:
            r.remote_leo.clear()
            r.remote_leo.update(saved)

    with _patch(BrokerCore, "_advance_hw", advance):
        yield


MUTANTS = {
    "no-truncation-on-become-follower": no_truncation_on_become_follower,
    "no-leader-epoch-fencing": no_leader_epoch_fencing,
    "no-controller-epoch-fencing": no_controller_epoch_fencing,
    "elect-outside-isr": elect_outside_isr,
    "fetch-answers-new-hw": fetch_answers_new_hw,
    "hw-ignores-isr": hw_ignores_isr,
}

__all__ = ["MUTANTS", *[f.__name__ for f in MUTANTS.values()]]
