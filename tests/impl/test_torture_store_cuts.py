"""A store-expiry fault that strikes a process still cut by an earlier one ends no second session:
torture logs the model's step (``ControllerFailover()``, ``ExpireSession(b)``) once (issue 30: torture
seed 11, two ``controller-store`` cuts of the active controller 70 ms apart, one election, and the
merged log's controller epoch one too high for the model)."""
from __future__ import annotations

from isrcheck.impl.rigs import torture
from isrcheck.impl.rigs.torture_schedule import Fault


class FakeNemesis:
    max_fault_seconds = 30.0

    def __init__(self) -> None:
        self.expired: list[str] = []

    def expire(self, node: str, session_timeout: float) -> None:
        self.expired.append(node)


class FakeCluster:
    session_timeout = 2.0

    def __init__(self) -> None:
        self.logged: list[tuple[str, str]] = []

    def alive(self, name: str) -> bool:
        return True

    def _log(self, name, kind, step, facts, note, t=None) -> None:
        self.logged.append((name, step["name"]))


def _run() -> torture._Run:
    run = object.__new__(torture._Run)  # no cluster: only the fault bookkeeping is exercised
    run.nem, run.c = FakeNemesis(), FakeCluster()
    run.store_cut, run.controller_strikes = {}, []
    run.active_controller = lambda k: "controller-1"
    run.sample = lambda k: (1, 1)
    return run


def _fault(kind: str) -> Fault:
    return Fault(0.0, kind, None, 1.0)


def test_a_second_cut_of_the_active_controller_is_no_second_failover(monkeypatch):
    run = _run()
    now = [100.0]
    monkeypatch.setattr(torture.time, "monotonic", lambda: now[0])
    first = run.strike_controller(_fault("controller-store"), None)
    now[0] = 100.07
    second = run.strike_controller(_fault("controller-store"), None)
    assert run.nem.expired == ["controller-1", "controller-1"]  # the cut goes on
    assert run.c.logged == [("controller-1", "ControllerFailover")]  # one failover logged
    assert "again" in second and "again" not in first and len(run.controller_strikes) == 1
    # once the first cut is over (its session ended, 1.5 session timeouts and more), a cut is a failover again
    now[0] = 110.0
    run.strike_controller(_fault("controller-store"), None)
    assert run.c.logged == [("controller-1", "ControllerFailover")] * 2


def test_a_second_expire_of_a_cut_broker_is_no_second_expiry(monkeypatch):
    run = _run()
    now = [100.0]
    monkeypatch.setattr(torture.time, "monotonic", lambda: now[0])
    run.expire_broker(2)
    now[0] = 101.0
    run.expire_broker(2)
    assert run.c.logged == [("broker-2", "ExpireSession")]
    now[0] = 200.0
    run.expire_broker(2)
    assert run.c.logged == [("broker-2", "ExpireSession")] * 2


class _Store:
    """A client whose store lists ``registered`` brokers."""

    def __init__(self, *registered: int) -> None:
        self.registered = set(registered)

    def brokers(self) -> dict[int, tuple[str, int]]:
        return {b: ("127.0.0.1", 9000 + b) for b in self.registered}


def test_an_expire_of_a_broker_not_registered_again_is_no_second_expiry(monkeypatch):
    """Seed 104 of a batch: broker 1's session was cut, and cut again after the first cut's window
    but before it had registered again; the model cannot end a session that is not there."""
    run = _run()
    now = [100.0]
    monkeypatch.setattr(torture.time, "monotonic", lambda: now[0])
    run.expire_broker(1, _Store(1, 2, 3))
    now[0] = 200.0  # well past the first cut's window
    run.expire_broker(1, _Store(2, 3))  # broker 1 not registered again yet
    assert run.c.logged == [("broker-1", "ExpireSession")]
    now[0] = 300.0
    run.expire_broker(1, _Store(1, 2, 3))  # registered again: this cut ends a session
    assert run.c.logged == [("broker-1", "ExpireSession")] * 2
