"""A broker's session ended by a fault other than torture's ``expire`` (a ``partition`` cuts the store
link too, and with the embedded store a closed connection ends the session at once): the launcher
logs no ``ExpireSession(b)``, the broker logs its ``Reregister(b)``, and the merge
(conformance/selflog.py, ``_expiries_unlogged``) infers the expiry, placed before the controller's
first line dropping ``b`` from an ISR since its last registration (or before the ``Reregister``).
And torture's ``controller-store`` fault, the active controller's session ended, is a logged
``ControllerFailover()`` (impl/rigs/torture.py)."""
from __future__ import annotations

import tarfile
from pathlib import Path

from isrcheck.conformance import selflog
from isrcheck.conformance.selflog import (
    SelfLine,
    _expiries_unlogged,
    _model_config,
    validate_selflogs,
)

SAVED = Path(__file__).parent / "selflogs"


def _sl(process: str, seq: int, t: int, kind: str, action, facts=None, role: str = "broker") -> SelfLine:
    return SelfLine(process, role, f"{process}.1.events.jsonl", seq + 1, seq, t, kind, action, facts or {}, "")


def _isr(*isr: int) -> dict:
    return {"partitions[0].isr": list(isr)}


def _steps(lines: list[SelfLine]) -> list[tuple[str, object, int]]:
    return [(x.process, x.action if x.kind == "action" else None, x.t) for x in lines]


def test_an_unlogged_expiry_goes_before_the_controllers_first_line_dropping_the_broker():
    lines = [
        _sl("broker-1", 1, 1, "action", ("Restart", (1,))),
        _sl("controller-1", 1, 2, "observation", None, _isr(1, 2, 3), role="controller"),
        _sl("broker-1", 2, 3, "action", ("Produce", (1, 0))),
        _sl("broker-2", 1, 4, "action", ("ShrinkIsr", (2, 0, 1)), _isr(2, 3)),  # a leader's shrink: no sign
        _sl("controller-1", 2, 5, "observation", None, _isr(1, 2, 3), role="controller"),
        _sl("controller-1", 3, 6, "observation", None, _isr(2, 3), role="controller"),  # drops broker 1
        _sl("controller-1", 4, 7, "observation", None, _isr(3), role="controller"),
        _sl("broker-1", 3, 8, "action", ("Reregister", (1,))),
    ]
    out, added = _expiries_unlogged(lines)
    assert added == 1
    assert _steps(out)[5:7] == [("broker-1", ("ExpireSession", (1,)), 6), ("controller-1", None, 6)]
    assert out[5].role == "launcher" and out[5].facts == {} and "inferred from the Reregister" in out[5].note
    assert [x for x in out if x is not out[5]] == lines
    # counted in the fitted budget (default 0), so the validator may take it
    assert _model_config({"brokers": 3, "replication_factor": 3}, out).faults.session_expiries == 1

    # no controller line drops it: just before the Reregister
    quiet = lines[:5] + lines[7:]
    out, added = _expiries_unlogged(quiet)
    assert added == 1 and _steps(out)[5:7] == [("broker-1", ("ExpireSession", (1,)), 8),
                                               ("broker-1", ("Reregister", (1,)), 8)]
    # a controller line dropping it before its last registration (a restart) is no sign of this session's end
    again = lines[:6] + [_sl("broker-1", 3, 7, "action", ("Restart", (1,))),
                         _sl("broker-1", 4, 8, "action", ("Reregister", (1,)))]
    out, added = _expiries_unlogged(again)
    assert added == 1 and _steps(out)[7] == ("broker-1", ("ExpireSession", (1,)), 8)
    # nor is the controller's controlled shutdown of it
    shutdown = lines[:5] + [_sl("controller-1", 3, 6, "action", ("ControlledShutdown", (1, 1)), _isr(2, 3),
                                role="controller")] + lines[7:]
    out, added = _expiries_unlogged(shutdown)
    assert added == 1 and _steps(out)[6][1] == ("ExpireSession", (1,)) and _steps(out)[6][2] == 8
    # the launcher logged the expiry (its expire fault): nothing is added
    logged = lines[:3] + [_sl("launcher", 1, 3, "action", ("ExpireSession", (1,)), role="launcher")] + lines[3:]
    assert _expiries_unlogged(logged) == (logged, 0)
    # a second Reregister needs a second expiry: the logged one was used by the first
    twice = logged + [_sl("broker-1", 4, 9, "action", ("Produce", (1, 0))),
                      _sl("broker-1", 5, 10, "action", ("Reregister", (1,)))]
    out, added = _expiries_unlogged(twice)
    assert added == 1 and _steps(out)[-2:] == [("broker-1", ("ExpireSession", (1,)), 10),
                                               ("broker-1", ("Reregister", (1,)), 10)]


def test_a_torture_run_whose_partition_fault_ended_sessions_validates(tmp_path, monkeypatch):
    """The logs of ``isrcheck cluster torture --seed 1 --duration 8 --faults kill,partition``, cut after
    broker 3's Reregister: the partition faults isolated broker 1 and then broker 3, each lost its
    session, controller 1 dropped it from the ISR, and it registered again; the launcher logged no
    expiry. Without the rule it fails at the controller's write dropping broker 1 (controller-1 seq 3)."""
    run = tmp_path / "run"
    with tarfile.open(SAVED / "session-expired-by-a-partition.tar.gz") as tar:
        tar.extractall(run, filter="data")
    merged, r = validate_selflogs([run])
    assert r.ok, f"{r.reason} {r.details}"
    assert any("2 ExpireSession step(s) not logged" in n for n in merged.notes), merged.notes
    assert merged.log.config.faults.session_expiries == 2
    # each just before the controller's write that dropped its broker (the next event)
    inferred = [(e.action, merged.origin[e.seq + 1].process, merged.origin[e.seq + 1].seq)
                for e in merged.log.events if e.action is not None and e.action[0] == "ExpireSession"]
    assert inferred == [(("ExpireSession", (1,)), "controller-1", 3), (("ExpireSession", (3,)), "controller-1", 5)]
    monkeypatch.setattr(selflog, "_expiries_unlogged", lambda lines: (lines, 0))
    _, r = validate_selflogs([run])
    assert not r.ok and r.reason.startswith("controller-1 seq 3 ") and "partitions[0].leader" in r.reason, r.reason


def test_the_active_controller_cut_from_the_store_is_a_logged_controller_failover(tmp_path):
    """Torture's ``controller-store`` fault ends the active controller's session: the model's
    ``ControllerFailover()``, which the launcher logs (impl/rigs/torture.py), or the new controller's higher
    epoch has no cause in the model (``--seed 4 --duration 5`` failed so, at controller-2's election)."""
    from isrcheck.impl.rigs.torture import TortureSetting, run_torture

    setting = TortureSetting(generation="kip-320", min_isr=2, duration=2.0, kinds=("controller-store",),
                             pace=0.05, settle=20.0)
    r = run_torture(1, setting, tmp_path / "c")
    assert any(what.startswith("cut controller-") for _f, what in r.faults if what), r.faults
    launcher = "".join(p.read_text() for p in Path(r.event_log).glob("launcher.*.events.jsonl"))
    assert '"name":"ControllerFailover"' in launcher.replace(" ", ""), launcher
    merged, v = validate_selflogs([r.event_log])
    assert v.ok, f"{v.reason} {v.details}"
    assert merged.log.config.faults.controller_failovers >= 1


def test_a_broker_killed_after_a_controller_dropped_it_had_its_session_end_unlogged():
    """Broker 1, isolated with its store link, lost its session; the controller dropped it from the ISR;
    the launcher SIGKILLed it before it registered again (torture seed 29 of the fresh batches in specs/11). The
    controller's line is the evidence: an ExpireSession goes before it. Without such a line the crash
    itself ends the session, and nothing is added."""
    lines = [
        _sl("broker-1", 1, 1, "action", ("Restart", (1,))),
        _sl("controller-1", 1, 2, "observation", None, _isr(1, 2, 3), role="controller"),
        _sl("controller-1", 2, 5, "observation", None, _isr(2, 3), role="controller"),  # drops broker 1
        _sl("launcher", 1, 8, "action", ("Crash", (1,)), {"brokers[1].alive": False}, role="launcher"),
    ]
    out, added = _expiries_unlogged(lines)
    assert added == 1
    assert _steps(out)[2:4] == [("broker-1", ("ExpireSession", (1,)), 5), ("controller-1", None, 5)]
    assert out[2].role == "launcher" and "before its crash" in out[2].note
    plain = lines[:2] + lines[3:]  # the crash first, the controller's reaction after it
    plain = plain + [_sl("controller-1", 2, 9, "observation", None, _isr(2, 3), role="controller")]
    assert _expiries_unlogged(plain) == (plain, 0)


def _led(leader: int, *isr: int) -> dict:
    return {"partitions[0].leader": leader, "partitions[0].isr": list(isr)}


def test_a_partition_left_leaderless_by_its_last_isr_member_shows_the_members_session_ended():
    """The last ISR member stays in the ISR when it fails and the partition is left without a
    leader: that controller line proves broker 1's session ended as an ISR drop does (seed 152 of
    the batch 131-170: broker 1, isolated by a partition fault, shrank the ISR to itself; the
    controller then wrote leader none, ISR [1]). The expiry goes before that line."""
    lines = [
        _sl("broker-1", 1, 1, "action", ("Restart", (1,))),
        _sl("controller-1", 1, 2, "observation", None, _led(1, 1, 2, 3), role="controller"),
        _sl("broker-1", 2, 3, "action", ("ShrinkIsr", (1, 0, 2)), _led(1, 1)),
        _sl("controller-1", 2, 4, "observation", None, _led(0, 1), role="controller"),  # leaderless
        _sl("broker-1", 3, 5, "action", ("Reregister", (1,))),
    ]
    out, added = _expiries_unlogged(lines)
    assert added == 1 and _steps(out)[3:5] == [("broker-1", ("ExpireSession", (1,)), 4), ("controller-1", None, 4)]
    # a new leader elected out of the ISR (a preferred election, a reassignment) is no such sign
    moved = lines[:3] + [_sl("controller-1", 2, 4, "observation", None, _led(2, 1, 2), role="controller")] + lines[4:]
    out, added = _expiries_unlogged(moved)
    assert added == 1 and _steps(out)[4] == ("broker-1", ("ExpireSession", (1,)), 5)


def test_the_saved_run_of_a_last_isr_member_left_leaderless_validates(tmp_path):
    out = tmp_path / "run"
    with tarfile.open(SAVED / "last-isr-member-left-leaderless.tar.gz") as tar:
        tar.extractall(out, filter="data")
    merged, r = validate_selflogs([out])
    assert r.ok, f"{r.reason} {r.details}"
    events = merged.log.events
    leaderless = next(i for i, ev in enumerate(events) if ev.actor.startswith("controller")
                      and ev.facts.get("partitions[0].leader") == 0)
    assert events[leaderless - 1].action == ("ExpireSession", (1,))  # the inferred expiry, just before it
