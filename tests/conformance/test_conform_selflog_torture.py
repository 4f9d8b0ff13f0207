"""What made every `isrcheck cluster torture` run fail to validate (or take minutes): the merge of the
processes' own logs (conformance/selflog.py) against three races of a real run, each with a saved
torture run's logs (tests/conformance/selflogs/*.tar.gz) that failed before its fix:

- a follower's half of a fetch its leader answered without logging a half, logged after a later step
  of the leader (a produce), goes back to where the leader answered it;
- writes a client sent again (after a later write of the other producer, or twice) are numbered in
  the order the leaders appended them, as the model numbers them;
- a leader's append a SIGKILL left on disk without its line is a Produce before the crash;
- a broker's log end and HW hold until its next line, so a follower cut off for seconds does not
  leave thousands of candidate states (one per number of records it might have fetched unlogged)."""
from __future__ import annotations

import dataclasses
import json
import tarfile
from pathlib import Path

import pytest

from isrcheck.conformance import selflog
from isrcheck.conformance.selflog import (SelfLine, _appends_lost_in_a_crash, _fetches_before_crash,
                                          _renumber_records, _unlogged_answers_in_place, _with_held,
                                          validate_selflogs)

SAVED = Path(__file__).parent / "selflogs"


def _saved(name: str, tmp_path: Path) -> Path:
    out = tmp_path / name
    with tarfile.open(SAVED / f"{name}.tar.gz") as tar:
        tar.extractall(out, filter="data")
    return out


def _sl(process: str, seq: int, t: int, kind: str, action, facts=None, role: str = "broker") -> SelfLine:
    return SelfLine(process, role, f"{process}.1.events.jsonl", seq + 1, seq, t, kind, action, facts or {}, "")


def _rep(b: int, leo: int, hw: int, role: str = "follower", epoch: int = 0) -> dict:
    pre = f"replicas[{b},0]."
    return {pre + "leo": leo, pre + "hw": hw, pre + "role": role, pre + "leader_epoch": epoch}


def test_a_follower_half_of_a_fetch_answered_before_a_produce_goes_back_before_it(tmp_path, monkeypatch):
    """The leader (HW already 2) answered broker 2's fetch without logging a half; then it appended a
    record; broker 2 logged its half (log end 2, HW 2) and a checkpoint before it after that produce,
    where the model's Fetch would give it 3 records. Both go just before the produce."""
    lines = [
        _sl("broker-1", 5, 10, "observation", ("Fetch", (3, 0)), _rep(1, 2, 2, "leader")),  # HW 2
        _sl("broker-2", 4, 11, "observation", ("Fetch", (2, 0)), _rep(2, 2, 1)),
        _sl("broker-1", 6, 20, "action", ("Produce", (1, 0)), _rep(1, 3, 2, "leader")),
        _sl("broker-3", 7, 21, "observation", ("Fetch", (3, 0)), _rep(3, 3, 2)),  # another follower: stays
        _sl("broker-2", 5, 22, "action", ("CheckpointHighWatermark", (2, 0)), _rep(2, 2, 1)),
        _sl("broker-2", 6, 23, "observation", ("Fetch", (2, 0)), _rep(2, 2, 2)),
    ]
    out, moved = _unlogged_answers_in_place(lines)
    assert moved == 2
    assert [(x.process, x.seq) for x in out] == [("broker-1", 5), ("broker-2", 4), ("broker-2", 5), ("broker-2", 6),
                                                 ("broker-1", 6), ("broker-3", 7)]
    assert [x.t for x in out] == [10, 11, 20, 20, 20, 21]  # the clock never goes back
    assert "placed before the later step of the leader" in out[3].note
    # what the leader answers now: it stays
    now = lines[:2] + [dataclasses.replace(lines[5], facts=_rep(2, 3, 2))]
    assert _unlogged_answers_in_place(now) == (now, 0)
    # the leader logged its half of this fetch (another rule's case): it stays
    half = lines[:3] + [_sl("broker-1", 7, 21, "observation", ("Fetch", (2, 0)), _rep(1, 3, 2, "leader"))] + lines[4:]
    assert _unlogged_answers_in_place(half) == (half, 0)
    # another line of the follower in between (a controller request it handled): it stays
    heard = lines[:3] + [_sl("broker-2", 5, 22, "observation", ("DeliverRequest", (2,)), _rep(2, 2, 1)),
                         dataclasses.replace(lines[5], seq=6)]
    assert _unlogged_answers_in_place(heard) == (heard, 0)
    # no state of the leader (at that leader epoch) ever answered so: it stays
    never = lines[:5] + [dataclasses.replace(lines[5], facts=_rep(2, 2, 2, epoch=1))]
    assert _unlogged_answers_in_place(never) == (never, 0)

    # the earliest place the leader answered so: before its ShrinkIsr of the follower (after it, the
    # model's Fetch would take the follower back into the ISR), not just before its next produce
    shrink = _sl("broker-1", 7, 21, "action", ("ShrinkIsr", (1, 0, 2)), _rep(1, 3, 2, "leader"))
    late = lines[:3] + [shrink, _sl("broker-1", 8, 22, "action", ("Produce", (1, 0)), _rep(1, 4, 2, "leader")),
                        dataclasses.replace(lines[5], facts=_rep(2, 3, 2))]
    out, moved = _unlogged_answers_in_place(late)
    assert moved == 1 and [(x.process, x.seq) for x in out][3:5] == [("broker-2", 6), ("broker-1", 7)]
    # the leader logged its half of a fetch whose answer was lost (a cut link); the follower's half
    # shows the answer to the fetch it sent again, after a produce: it goes back there, not before the half
    lost = lines[:2] + [_sl("broker-1", 7, 12, "observation", ("Fetch", (2, 0)), _rep(1, 2, 2, "leader")),
                        dataclasses.replace(lines[2], facts=_rep(1, 3, 2, "leader")),
                        _sl("broker-1", 8, 21, "action", ("CheckpointHighWatermark", (1, 0)), _rep(1, 3, 2, "leader")),
                        _sl("broker-1", 9, 22, "action", ("Produce", (1, 0)), _rep(1, 4, 2, "leader")),
                        dataclasses.replace(lines[5], facts=_rep(2, 3, 2))]
    out, moved = _unlogged_answers_in_place(lost)
    assert moved == 1 and [(x.process, x.seq) for x in out][3:6] == [("broker-1", 6), ("broker-2", 6), ("broker-1", 8)]

    # the saved torture run (--seed 3 --faults kill) that failed so: it validates, and not without the rule
    run = _saved("follower-half-answered-before-a-produce", tmp_path)
    merged, r = validate_selflogs([run])
    assert r.ok, f"{r.reason} {r.details}"
    assert any("placed before that step" in n for n in merged.notes)
    monkeypatch.setattr(selflog, "_unlogged_answers_in_place", lambda lines, *a: (lines, 0))
    # the leader's next half that raised the HW shows the follower's fetch counted (_counted_unlogged):
    # that rule explains this run too, so it goes as well
    monkeypatch.setattr(selflog, "_counted_unlogged", lambda ln, p, followers: [])
    _, r = validate_selflogs([run])
    assert not r.ok and r.reason.startswith("broker-2 seq 23 ") and "replicas[2,0].hw" in r.reason, r.reason


def _log(*ids: tuple[int, int]) -> list[dict]:
    return [{"id": i, "epoch": e} for i, e in ids]


def test_writes_are_numbered_in_the_order_the_leaders_appended_them():
    """The client's write 2 failed and was sent again after write 3, and appended twice (its first
    attempt was appended, the answer lost): the model's writes are 1, 2, 3, 4 in append order."""
    lines = [
        _sl("broker-1", 1, 1, "action", ("Produce", (1, 0)), {"replicas[1,0].log": _log((1, 0))}),
        _sl("broker-1", 2, 2, "action", ("Produce", (1, 0)), {"replicas[1,0].log": _log((1, 0), (2, 0))}),
        _sl("broker-1", 3, 3, "action", ("Produce", (1, 0)), {"replicas[1,0].log": _log((1, 0), (2, 0), (3, 0))}),
        _sl("broker-2", 1, 4, "observation", ("Fetch", (2, 0)), {"replicas[2,0].log": _log((1, 0), (2, 0))}),
        _sl("broker-1", 4, 5, "action", ("Produce", (1, 0)),
            {"replicas[1,0].log": _log((1, 0), (2, 0), (3, 0), (2, 0))}),
        _sl("launcher", 1, 6, "observation", None, {"acked[0]": [1, 2, 3]}, role="launcher"),
    ]
    out, changed = _renumber_records(lines)
    assert changed == 1  # the fourth append had id 2
    assert [r["id"] for r in out[4].facts["replicas[1,0].log"]] == [1, 2, 3, 4]
    assert [r["id"] for r in out[3].facts["replicas[2,0].log"]] == [1, 2]  # the first copy of 2
    assert out[5].facts["acked[0]"] == [1, 3, 4]  # write 2 acknowledged: its last append
    in_order = lines[:3]
    assert _renumber_records(in_order) == (in_order, 0)


def test_a_brokers_log_end_and_hw_hold_until_its_next_line():
    held: dict = {}
    own = _rep(2, 5, 4)
    assert _with_held(_sl("broker-2", 1, 1, "observation", ("Fetch", (2, 0)), own), held) == own
    assert held == {"replicas[2,0].leo": 5, "replicas[2,0].hw": 4}
    lead = _rep(1, 6, 5, "leader")
    assert _with_held(_sl("broker-1", 1, 2, "action", ("Produce", (1, 0)), lead), held) == {
        **lead, "replicas[2,0].leo": 5, "replicas[2,0].hw": 4}
    # the leader's half of broker 2's fetch: broker 2 changes there in the model, before its own half
    # (if ever: its answer may be lost), to the leader's log end and its HW from before the fetch
    _with_held(_sl("broker-1", 2, 3, "observation", ("Fetch", (2, 0)), {**lead, "replicas[1,0].hw": 6}), held)
    assert held == {"replicas[1,0].leo": 6, "replicas[1,0].hw": 6, "replicas[2,0].leo": 6, "replicas[2,0].hw": 5}
    # not with max_fetch_records (a partial fetch), nor from a log end beyond the leader's
    _with_held(_sl("broker-1", 3, 3, "observation", ("Fetch", (2, 0)), lead), held, 1)
    assert "replicas[2,0].hw" not in held
    # a crash (or any launcher or controller action): nothing held until each broker logs again
    assert _with_held(_sl("launcher", 1, 4, "action", ("Crash", (1,)), {}, role="launcher"), held) == {}
    assert held == {}


def test_a_torture_run_with_retried_writes_validates_with_few_candidate_states(tmp_path, monkeypatch):
    """The saved torture run (--seed 3 --duration 5 --faults kill,partition,split,pause,delay,drop)
    whose acks=all write 29 timed out while the leader was paused, the acks=1 producer's 30 went in, and
    29 was appended again (broker-1 seq 72): it failed there, and without held facts it took over a
    minute, with 3856 candidate states at once while broker 2 was cut off."""
    run = _saved("torture-writes-retried-out-of-order-and-twice", tmp_path)
    merged, r = validate_selflogs([run], max_candidates=200)
    assert r.ok, f"{r.reason} {r.details}"
    assert r.max_candidates <= 200 and any("record ids renumbered" in n for n in merged.notes)
    with monkeypatch.context() as m:
        m.setattr(selflog, "_renumber_records", lambda lines: (lines, 0))
        _, r = validate_selflogs([run])
        assert not r.ok and r.reason.startswith("broker-1 seq 72 ") and "replicas[1,0].log" in r.reason, r.reason
    monkeypatch.setattr(selflog, "_with_held", lambda ln, held, limit=0: dict(ln.facts))
    _, r = validate_selflogs([run], max_candidates=200)
    assert not r.ok and "explained by more than 200 model states" in r.reason, r.reason


def test_an_append_killed_before_its_line_is_a_produce_before_the_crash(tmp_path, monkeypatch):
    """The launcher killed the leader after it appended record 3 and before it logged it (a line comes
    after the disk write): its restart shows 3 records. A Produce goes before the Crash line."""
    leader = {**_rep(1, 2, 2, "leader"), "replicas[1,0].log": _log((1, 0), (2, 0))}
    crash = _sl("launcher", 1, 20, "action", ("Crash", (1,)), {"brokers[1].alive": False}, role="launcher")
    back = {**_rep(1, 3, 2, ""), "replicas[1,0].log": _log((1, 0), (2, 0), (3, 0))}
    lines = [_sl("broker-1", 5, 10, "action", ("Produce", (1, 0)), leader), crash,
             _sl("broker-2", 7, 21, "observation", ("DeliverRequest", (2,)), _rep(2, 2, 2, "leader", 1)),
             _sl("broker-1", 1, 30, "action", ("Restart", (1,)), back)]
    out, added = _appends_lost_in_a_crash(lines)
    assert added == 1 and [(x.process, x.action, x.t) for x in out][:3] == [
        ("broker-1", ("Produce", (1, 0)), 10), ("broker-1", ("Produce", (1, 0)), 20), ("launcher", ("Crash", (1,)), 20)]
    assert out[1].facts == {"replicas[1,0].log": _log((1, 0), (2, 0), (3, 0)), "replicas[1,0].leo": 3}
    # a follower's records (a fetch it did not log: Fetch is a silent step), or a log that is not the
    # one logged before plus records of its leader epoch, add nothing
    follower = [dataclasses.replace(lines[0], facts={**leader, "replicas[1,0].role": "follower"})] + lines[1:]
    assert _appends_lost_in_a_crash(follower) == (follower, 0)
    other = lines[:3] + [dataclasses.replace(lines[3],
                                             facts={**back, "replicas[1,0].log": _log((1, 0), (3, 0), (4, 0))})]
    assert _appends_lost_in_a_crash(other) == (other, 0)

    # the saved torture run that failed so (at broker 1's restart): it validates, and not without the rule
    run = _saved("leader-append-killed-before-its-line", tmp_path)
    merged, r = validate_selflogs([run])
    assert r.ok, f"{r.reason} {r.details}"
    assert any("Produce or HW checkpoint step(s) of a broker killed" in n for n in merged.notes)
    monkeypatch.setattr(selflog, "_appends_lost_in_a_crash", lambda lines: (lines, 0))
    _, r = validate_selflogs([run])
    assert not r.ok and r.reason.startswith("broker-1 seq 1 ") and "Restart(1)" in r.reason, r.reason


def test_a_new_leader_elected_after_the_crash_leaves_the_crashed_leaders_answer_before_it():
    """A follower paused (SIGSTOP) with the crashed leader's answer in its socket logged it after the
    controller had elected a new leader (a 15 s torture run, seed 8): the answer is still the crashed
    leader's, and goes before the crash."""
    ctrl = _sl("controller-1", 2, 5, "observation", None, {"partitions[0].leader": 1, "partitions[0].leader_epoch": 0},
               role="controller")
    crash = _sl("launcher", 1, 20, "action", ("Crash", (1,)), {"brokers[1].alive": False}, role="launcher")
    elected = dataclasses.replace(ctrl, seq=3, t=21, facts={"partitions[0].leader": 3, "partitions[0].leader_epoch": 1})
    half = _sl("broker-2", 8, 30, "observation", ("Fetch", (2, 0)), _rep(2, 5, 5))
    out, moved = _fetches_before_crash([ctrl, crash, elected, half])
    assert moved == 1 and [(x.process, x.seq) for x in out] == [("controller-1", 2), ("broker-2", 8), ("launcher", 1),
                                                                ("controller-1", 3)]


def _isr(*b: int) -> dict:
    return {"partitions[0].leader": 1, "partitions[0].isr": list(b), "partitions[0].leader_epoch": 0,
            "partitions[0].zk_version": 1}


def test_a_leader_line_raising_the_hw_shows_another_followers_fetch_counted_unlogged(tmp_path, monkeypatch):
    """Broker 2 took records up to 3 (HW 1); its next fetch (offset 3) was counted by the leader, whose
    HW stayed 2 (broker 3 lagged), so the leader logged nothing, and the answer was held (a long poll).
    Broker 3's fetch then raised the HW to 3 (a line); broker 2 checkpointed HW 1 and logged its half
    (HW 3) after it. In the model broker 2's Fetch came first: its checkpoint goes before the leader's
    line, and its log end and HW are not held across that line (the model's broker 2 has HW 2 there)."""
    lines = [
        _sl("controller-1", 1, 1, "observation", None, _isr(1, 2, 3), role="controller"),
        _sl("broker-1", 5, 10, "observation", ("Fetch", (2, 0)), _rep(1, 3, 2, "leader")),
        _sl("broker-2", 4, 11, "observation", ("Fetch", (2, 0)), _rep(2, 3, 1)),
        _sl("broker-3", 4, 12, "observation", ("Fetch", (3, 0)), _rep(3, 3, 2)),
        _sl("broker-1", 6, 20, "observation", ("Fetch", (3, 0)), _rep(1, 3, 3, "leader")),  # HW 2 -> 3
        _sl("broker-2", 5, 22, "action", ("CheckpointHighWatermark", (2, 0)), _rep(2, 3, 1)),
        _sl("broker-2", 6, 23, "observation", ("Fetch", (2, 0)), _rep(2, 3, 3)),
    ]
    out, changed = selflog._checkpoints_before_fetch(lines)
    assert changed == 1
    assert [(x.process, x.seq) for x in out] == [("controller-1", 1), ("broker-1", 5), ("broker-2", 4), ("broker-3", 4),
                                                 ("broker-2", 5), ("broker-1", 6), ("broker-2", 6)]
    leader_line = out[5]
    assert leader_line.counted == (2,) and out[4].t == 20
    held = {"replicas[1,0].hw": 2, "replicas[1,0].leo": 3, "replicas[2,0].leo": 3, "replicas[2,0].hw": 1}
    facts = _with_held(leader_line, held)
    assert "replicas[2,0].hw" not in facts and "replicas[2,0].leo" not in facts
    # not in the ISR: the HW did not wait for it, nothing is implied
    out, _ = selflog._checkpoints_before_fetch([_sl("controller-1", 1, 1, "observation", None, _isr(1, 3),
                                                    role="controller")] + lines[1:])
    assert out[5].counted == () and [(x.process, x.seq) for x in out][4:6] == [("broker-1", 6), ("broker-2", 5)]
    # its log does not reach the new HW, or it follows another leader epoch: nothing is implied either
    for other in (_rep(2, 2, 1), _rep(2, 3, 1, epoch=1)):
        changed_lines = lines[:2] + [dataclasses.replace(lines[2], facts=other)] + lines[3:]
        assert selflog._checkpoints_before_fetch(changed_lines)[0][5].counted == ()

    # the torture run (--seed 10 --duration 6 --generation kip-320 --min-isr 2) that failed so: it
    # validates, and not without the rule (nor the one fenced answer the merge finds there, a lost answer
    # the model may also place at that leader's line)
    run = _saved("leader-hw-after-an-unlogged-counted-fetch", tmp_path)
    _, r = validate_selflogs([run])
    assert r.ok, f"{r.reason} {r.details}"
    monkeypatch.setattr(selflog, "_counted_unlogged", lambda ln, p, followers: [])
    monkeypatch.setattr(selflog, "_answers_fenced", lambda lines: (lines, 0))
    _, r = validate_selflogs([run])
    assert not r.ok and r.reason.startswith("broker-3 seq 98 ") and "replicas[3,0].hw" in r.reason, r.reason


def test_a_late_follower_half_goes_back_across_a_controller_failover_not_across_a_crash():
    """Broker 2 was paused with the leader's answer (log end 3, HW 2) in its socket; meanwhile the
    launcher killed the active controller; broker 2 read the answer after. The leader's state proves
    the answer was sent before (its HW was 3 by the failover): the half goes back before the leader's
    line after which it would no longer answer so. A crash of another broker in between is still a
    barrier (it is no step a fetch commutes with in general)."""
    lines = [
        _sl("broker-1", 5, 10, "action", ("Produce", (1, 0)), _rep(1, 3, 2, "leader")),
        _sl("broker-2", 4, 11, "observation", ("Fetch", (2, 0)), _rep(2, 2, 2)),
        _sl("broker-1", 6, 20, "observation", ("Fetch", (3, 0)), _rep(1, 3, 3, "leader")),
        _sl("launcher", 1, 30, "action", ("ControllerFailover", ()), {}, role="launcher"),
        _sl("broker-2", 5, 40, "observation", ("Fetch", (2, 0)), _rep(2, 3, 2)),
    ]
    out, moved = _unlogged_answers_in_place(lines)
    assert moved == 1
    assert [(x.process, x.seq) for x in out] == [("broker-1", 5), ("broker-2", 4), ("broker-2", 5), ("broker-1", 6),
                                                 ("launcher", 1)]
    crash = lines[:3] + [_sl("launcher", 1, 30, "action", ("Crash", (3,)), {"brokers[3].alive": False},
                             role="launcher")] + lines[4:]
    assert _unlogged_answers_in_place(crash) == (crash, 0)


def test_a_leader_isr_write_no_line_shows_is_a_shrink_of_the_leader_that_never_heard_of_it():
    """The leader (broker 1) wrote ISR [1, 2, 3] at version 3 (logged), then, cut from the store, had a
    shrink committed that it never heard of (version 4, no line); the controller's election shows
    version 5. A ShrinkIsr of broker 1 (the follower left to the model) goes just before that line;
    a version logged next, or three past, adds nothing."""
    def part(v: int, leader: int = 1, isr=(1, 2, 3), epoch: int = 0) -> dict:
        return {"partitions[0].leader": leader, "partitions[0].isr": list(isr), "partitions[0].leader_epoch": epoch,
                "partitions[0].zk_version": v}
    lines = [
        _sl("broker-1", 7, 10, "observation", ("Fetch", None), part(3)),
        _sl("launcher", 1, 20, "action", ("ExpireSession", (1,)), {}, role="launcher"),
        _sl("controller-1", 3, 30, "observation", None, part(5, 3, (3,), 1), role="controller"),
    ]
    out, added = selflog._shrinks_unanswered(lines)
    assert added == 1 and [(x.process, x.action) for x in out] == [
        ("broker-1", ("Fetch", None)), ("launcher", ("ExpireSession", (1,))), ("broker-1", ("ShrinkIsr", None)),
        ("controller-1", None)]
    assert out[2].t == 30 and out[2].kind == "action" and out[2].facts == {} and "version 5" in out[2].note
    for v in (4, 6):
        same = lines[:2] + [dataclasses.replace(lines[2], facts=part(v, 3, (3,), 1))]
        assert selflog._shrinks_unanswered(same) == (same, 0)


def test_a_delayed_fetch_request_counted_after_its_follower_moved_on_goes_before_that_move():
    """Broker 2 (log end 4) fetched from the leader of epoch 0, broker 1, cut from the others; the
    controller made broker 2 leader of epoch 1 (its DeliverRequest line); then broker 1 counted the
    late request and raised its HW (its half). The request was sent before broker 2's line, and broker
    1 logged nothing since but its own writes and checkpoints: its half (with those) goes just before
    that line. Another line of broker 1 in between, or a crash, keeps it in place."""
    lines = [
        _sl("broker-1", 5, 10, "action", ("Produce", (1, 0)), _rep(1, 4, 3, "leader")),
        _sl("broker-2", 4, 11, "observation", ("Fetch", (2, 0)), _rep(2, 4, 3)),
        _sl("launcher", 1, 15, "action", ("ControllerFailover", ()), {}, role="launcher"),
        _sl("broker-2", 5, 20, "observation", ("DeliverRequest", (2,)), _rep(2, 4, 3, "leader", 1)),
        _sl("broker-1", 6, 30, "observation", ("Fetch", (2, 0)), _rep(1, 4, 4, "leader")),
    ]
    out, moved = selflog._stale_requests_in_place(lines)
    assert moved == 1
    assert [(x.process, x.seq) for x in out] == [("broker-1", 5), ("broker-2", 4), ("launcher", 1), ("broker-1", 6),
                                                 ("broker-2", 5)]
    assert out[3].t == 20 and "moved it to another leader epoch" in out[3].note
    # a write or an HW checkpoint of the leader in between goes back with its half (seed 117), in its order
    between = lines[:4] + [_sl("broker-1", 6, 25, "action", ("CheckpointHighWatermark", (1, 0)), _rep(1, 4, 3, "leader")),
                           dataclasses.replace(lines[4], seq=7)]
    out, moved = selflog._stale_requests_in_place(between)
    assert moved == 2 and [(x.process, x.seq) for x in out] == [
        ("broker-1", 5), ("broker-2", 4), ("launcher", 1), ("broker-1", 6), ("broker-1", 7), ("broker-2", 5)]
    # any other line of the leader in between (here a controller's request it handled) keeps it in place
    other = lines[:4] + [_sl("broker-1", 6, 25, "observation", ("DeliverRequest", (1,)), _rep(1, 4, 3, "leader")),
                         dataclasses.replace(lines[4], seq=7)]
    assert selflog._stale_requests_in_place(other) == (other, 0)
    crash = lines[:4] + [_sl("launcher", 2, 25, "action", ("Crash", (3,)), {"brokers[3].alive": False},
                             role="launcher")] + lines[4:]
    assert selflog._stale_requests_in_place(crash) == (crash, 0)
    # the follower still follows that leader at that epoch: nothing to move
    still = lines[:3] + [dataclasses.replace(lines[3], facts=_rep(2, 4, 3))] + lines[4:]
    assert selflog._stale_requests_in_place(still) == (still, 0)


def test_a_controller_failover_leaves_the_held_facts_a_crash_drops_its_brokers():
    """The model's new controller changes no replica, so a follower that logs nothing across the
    launcher's controller kill keeps its log end and HW; a crash, a session expiry or a controlled
    shutdown drops those of the broker it names only."""
    held = {"replicas[2,0].leo": 5, "replicas[2,0].hw": 4, "replicas[3,0].leo": 5, "replicas[3,0].hw": 5}
    _with_held(_sl("launcher", 1, 1, "action", ("ControllerFailover", ()), {}, role="launcher"), held)
    assert held == {"replicas[2,0].leo": 5, "replicas[2,0].hw": 4, "replicas[3,0].leo": 5, "replicas[3,0].hw": 5}
    _with_held(_sl("launcher", 2, 2, "action", ("Crash", (2,)), {"brokers[2].alive": False}, role="launcher"), held)
    assert held == {"replicas[3,0].leo": 5, "replicas[3,0].hw": 5}
    _with_held(_sl("controller-1", 2, 3, "action", ("ControlledShutdown", (1, 3)), {}, role="controller"), held)
    assert held == {}
    held = {"replicas[3,0].leo": 5}
    _with_held(_sl("launcher", 3, 4, "action", ("RequestReassignment", (0, [2, 3])), {}, role="launcher"), held)
    assert held == {}


def test_a_late_half_of_an_older_epoch_goes_back_past_its_leaders_newer_epoch():
    """Broker 3, paused, read an answer of leader epoch 0 (log end 3, HW 2) after its leader, broker 1,
    had been elected again at epoch 1 (a LeaderAndIsr) and appended: the answer comes from the epoch-0
    run of broker 1's lines (under kip-320 an epoch-1 leader answers an epoch-0 fetch with no data), so
    the half goes back before the leader's line that moved it to epoch 1 (torture seed 33)."""
    lines = [
        _sl("broker-1", 5, 10, "action", ("Produce", (1, 0)), _rep(1, 3, 2, "leader")),
        _sl("broker-3", 4, 11, "observation", ("Fetch", (3, 0)), _rep(3, 2, 2)),
        _sl("broker-1", 6, 20, "observation", ("DeliverRequest", (1,)), _rep(1, 3, 2, "leader", 1)),
        _sl("broker-1", 7, 21, "action", ("Produce", (1, 0)), _rep(1, 4, 2, "leader", 1)),
        _sl("broker-3", 5, 40, "observation", ("Fetch", (3, 0)), _rep(3, 3, 2)),
    ]
    out, moved = _unlogged_answers_in_place(lines)
    assert moved == 1
    assert [(x.process, x.seq) for x in out] == [("broker-1", 5), ("broker-3", 4), ("broker-3", 5), ("broker-1", 6),
                                                 ("broker-1", 7)]
    # no state of broker 1 at epoch 0 answers so (its log end was 2 then): it stays
    never = [dataclasses.replace(lines[0], facts=_rep(1, 2, 2, "leader"))] + lines[1:]
    assert _unlogged_answers_in_place(never) == (never, 0)


def test_before_kip_320_a_late_half_goes_back_before_the_leaders_next_step_of_a_newer_epoch(tmp_path, monkeypatch):
    """The full-disk restart run (tests/impl/test_offline_restart_event_log.py; high-watermark), about one
    run in four on a loaded host: broker 3 went offline, the controller dropped it from the ISR with a
    new leader epoch and told the leader alone (under high-watermark an ISR removal's LeaderAndIsr goes
    to the leader only), whose HW rose to 8 and released broker 2's held fetch with HW 8 and no records;
    the leader appended record 9, and broker 2 (still at epoch 0) logged a checkpoint of HW 7 and its
    half (log end 8, HW 8) after that produce. Before kip-320 neither side compares leader epochs, so
    the leader's states of epoch 1 answer an epoch-0 follower: both lines go back before the produce.
    Under kip-320 the epoch-1 leader would have fenced the fetch: they stay."""
    lines = [
        _sl("broker-1", 19, 10, "action", ("Produce", (1, 0)), _rep(1, 8, 7, "leader")),
        _sl("broker-2", 15, 11, "observation", ("Fetch", (2, 0)), _rep(2, 8, 7)),
        _sl("broker-1", 20, 20, "observation", ("DeliverRequest", (1,)), _rep(1, 8, 8, "leader", 1)),
        _sl("broker-1", 21, 30, "action", ("Produce", (1, 0)), _rep(1, 9, 8, "leader", 1)),
        _sl("broker-2", 16, 31, "action", ("CheckpointHighWatermark", (2, 0)), _rep(2, 8, 7)),
        _sl("broker-2", 17, 32, "observation", ("Fetch", (2, 0)), _rep(2, 8, 8)),
    ]
    out, moved = _unlogged_answers_in_place(lines, 0, False)
    assert moved == 2
    assert [(x.process, x.seq) for x in out] == [("broker-1", 19), ("broker-2", 15), ("broker-1", 20),
                                                 ("broker-2", 16), ("broker-2", 17), ("broker-1", 21)]
    assert [x.t for x in out] == [10, 11, 20, 30, 30, 30]  # the clock never goes back
    assert _unlogged_answers_in_place(lines, 0, True) == (lines, 0)  # kip-320: fenced, it stays
    # the leader's state of an older epoch than the follower's does not answer it either
    older = [dataclasses.replace(ln, facts=_rep(2, ln.facts["replicas[2,0].leo"], ln.facts["replicas[2,0].hw"],
                                                epoch=2)) if ln.process == "broker-2" else ln for ln in lines]
    assert _unlogged_answers_in_place(older, 0, False) == (older, 0)

    # the saved run that failed so (broker-2 seq 17: HW 8 where the model gives 7): it validates, and
    # not with the rule's kip-320 reading of leader epochs
    run = _saved("follower-half-answered-at-a-newer-leader-epoch", tmp_path)
    merged, r = validate_selflogs([run])
    assert r.ok, f"{r.reason} {r.details}"
    rules = selflog._reorderings
    monkeypatch.setattr(selflog, "_reorderings", lambda limit, fenced=True: rules(limit, True))
    _, r = validate_selflogs([run])
    assert not r.ok and r.reason.startswith("broker-2 seq 17 ") and "replicas[2,0].hw" in r.reason, r.reason


def test_a_fetch_answer_the_nemesis_dropped_after_the_leader_counted_it_is_a_lost_answer(tmp_path):
    """torture --seed 10 (kip-320, min ISR 2, 6 s): the leader took broker 2 back into the ISR at its
    fetch (broker-1 seq 81, "ISR expansion to [1, 2, 3] written"), the `drop` fault (p = 0.87 between
    broker 1 and broker 2) lost the answer with two more records, and broker 2 became leader with the
    33 records it had. The run's configuration declares faults.lost_fetch_answers (one per drop fault:
    impl/rigs/torture.py, run_config), so the model's FetchAnswerLost explains it; without the budget the
    model's atomic Fetch gives broker 2 those records and the log does not validate."""
    run = _saved("fetch-answer-lost-after-the-leader-counted-it", tmp_path)
    merged, r = validate_selflogs([run])
    assert merged.log.config.faults.lost_fetch_answers == 2 and "FetchAnswerLost" in merged.log.silent
    assert r.ok, f"{r.reason} {r.details}"
    for f in run.glob("*.events.jsonl"):  # the same run, its configuration without the budget
        lines = f.read_text().split("\n")
        head = json.loads(lines[0])
        del head["config"]["faults"]
        f.write_text("\n".join([json.dumps(head)] + lines[1:]))
    _, r = validate_selflogs([run])
    assert not r.ok and r.reason.startswith("broker-2 seq 63 ") and "replicas[2,0].log" in r.reason, r.reason


def test_a_torture_run_declares_one_lost_fetch_answer_per_drop_fault():
    from isrcheck.impl.rigs.torture import TortureSetting, run_config
    from isrcheck.impl.rigs.torture_schedule import Fault

    setting = TortureSetting()
    drops = [Fault(1.0, "drop", 1, 2.0, amount=0.5), Fault(2.0, "drop", None, 1.0, amount=0.9)]
    assert run_config(setting, [Fault(0.5, "kill", 1, 1.0)]) == setting.config()  # no drop: no budget
    assert run_config(setting, [Fault(0.5, "kill", 1, 1.0), *drops])["faults"] == {"lost_fetch_answers": 2}
    assert run_config(setting, drops * 10)["faults"] == {"lost_fetch_answers": 16}  # the key's bound


def test_a_leader_half_whose_follower_handled_a_controller_request_first_is_a_lost_answer(tmp_path, monkeypatch):
    """A follower drops the answer to a fetch sent before a controller request it has since handled
    (impl/core/broker.py, _fence_fetch): the leader's half of that fetch is the model's FetchAnswerLost.
    The merge marks it (the follower's log end and HW hold across it, unchanged) and counts it in the
    fitted faults.lost_fetch_answers; its next half, after the request, is its own fetch again."""
    lines = [
        _sl("broker-1", 5, 10, "observation", ("Fetch", (2, 0)), _rep(1, 3, 2, "leader")),  # counted, raising the HW
        _sl("broker-2", 4, 11, "observation", ("DeliverRequest", (2,)), _rep(2, 2, 1)),  # then the new controller's
        _sl("broker-2", 5, 12, "observation", ("Fetch", (2, 0)), _rep(2, 3, 2)),  # its fetch sent again
        _sl("broker-1", 6, 13, "observation", ("Fetch", (3, 0)), _rep(1, 3, 3, "leader")),
        _sl("broker-3", 4, 14, "observation", ("Fetch", (3, 0)), _rep(3, 3, 2)),  # answered: not lost
        _sl("broker-1", 7, 15, "observation", ("Fetch", (3, 0)), _rep(1, 3, 3, "leader")),
        _sl("launcher", 1, 16, "action", ("Crash", (3,)), {}, role="launcher"),
        _sl("broker-3", 1, 17, "action", ("Restart", (3,)), _rep(3, 3, 2)),  # a restart is no fence
    ]
    out, n = selflog._answers_fenced(lines)
    assert n == 1 and [x.lost for x in out] == [True] + [False] * 7
    held = {"replicas[1,0].leo": 3, "replicas[1,0].hw": 2, "replicas[2,0].leo": 2, "replicas[2,0].hw": 1}
    facts = _with_held(out[0], dict(held))
    assert facts["replicas[2,0].leo"] == 2 and facts["replicas[2,0].hw"] == 1  # the follower as it was
    assert _with_held(lines[0], dict(held))["replicas[2,0].leo"] == 3  # unmarked: as the model's Fetch gives it

    # torture --seed 54 (kip-320, min ISR 2, 6 s; issue 30's batch 51-90): broker 1 counted broker 2's
    # fetch (broker-1 seq 95, HW 38), the answer was delayed on the link (a delay fault), and broker 2
    # handled the new controller's LeaderAndIsr first (broker-2 seq 50) and dropped it
    run = _saved("fetch-answer-dropped-after-a-controller-request", tmp_path)
    merged, r = validate_selflogs([run])
    assert r.ok, f"{r.reason} {r.details}"
    assert merged.log.config.faults.lost_fetch_answers == 1 + 2  # the drop fault's, and two fenced answers
    monkeypatch.setattr(selflog, "_answers_fenced", lambda lines: (lines, 0))
    _, r = validate_selflogs([run])
    assert not r.ok and r.reason.startswith("broker-2 seq 50 ") and "replicas[2,0].log" in r.reason, r.reason


def test_a_checkpoint_killed_before_its_line_is_a_checkpoint_before_the_crash(tmp_path, monkeypatch):
    """A process writes a step's disk writes before its line, so a SIGKILL between the two leaves an HW
    checkpoint on disk with no line: the restart recovers an HW the model's checkpoint never had. Where
    the restart's HW is the one the broker held at its last line and its last logged checkpoint wrote
    another, a CheckpointHighWatermark goes before the crash; nothing is added where they agree."""
    leader = _rep(1, 16, 16, "leader")
    lines = [_sl("broker-1", 3, 5, "action", ("CheckpointHighWatermark", (1, 0)), _rep(1, 13, 12, "leader")),
             _sl("broker-1", 4, 10, "observation", ("Fetch", (2, 0)), leader),
             _sl("launcher", 1, 20, "action", ("Crash", (1,)), {"brokers[1].alive": False}, role="launcher"),
             _sl("broker-1", 1, 30, "action", ("Restart", (1,)), _rep(1, 16, 16))]
    out, n = _appends_lost_in_a_crash(lines)
    assert n == 1 and out[2].action == ("CheckpointHighWatermark", (1, 0)) and out[2].t == 20
    assert out[2].facts["replicas[1,0].hw"] == 16 and out[3].action == ("Crash", (1,))
    for restart_hw, last_ckpt in ((12, 12), (16, 16)):  # the checkpoint of the line, or nothing lost
        same = [dataclasses.replace(lines[0], facts=_rep(1, 13, last_ckpt, "leader")), lines[1], lines[2],
                dataclasses.replace(lines[3], facts=_rep(1, 16, restart_hw))]
        assert _appends_lost_in_a_crash(same)[1] == 0

    # torture --seed 85 (kip-320, min ISR 2, 6 s; issue 30's batch 51-90): broker 1, the leader, checkpointed
    # HW 16 and was SIGKILLed before that line; its restart recovered HW 16 where its last logged
    # checkpoint was 12
    run = _saved("checkpoint-killed-before-its-line", tmp_path)
    _, r = validate_selflogs([run])
    assert r.ok, f"{r.reason} {r.details}"
    monkeypatch.setattr(selflog, "_lost_checkpoints", lambda prev, restart, t, ckpt: [])
    _, r = validate_selflogs([run])
    assert not r.ok and r.reason.startswith("broker-1 seq 1 ") and "replicas[1,0].hw" in r.reason, r.reason


def test_a_stale_half_goes_back_with_the_leaders_own_write_and_checkpoint(tmp_path, monkeypatch):
    """torture --seed 117 (kip-320, min ISR 2, 6 s; delay, expire, pause, delay): broker 1, its
    session expired, still leading epoch 0, appended a write (broker-1 seq 44) and checkpointed its
    HW (seq 45) after broker 3 had moved to broker 2's epoch 1 (broker-3's LeaderAndIsr), then
    counted broker 3's delayed fetch (seq 46, HW 17 -> 18). Its write and checkpoint go back with the
    stale half to before broker 3's move, and broker 3 dropped the answer (a FetchAnswerLost); kept
    in place, the half is a fetch from a follower that follows another leader, no model behaviour."""
    run = _saved("stale-half-after-the-leaders-own-write", tmp_path)
    _, r = validate_selflogs([run])
    assert r.ok, f"{r.reason} {r.details}"
    monkeypatch.setattr(selflog, "_moves_with_a_stale_half", lambda ln: False)  # only the bare half goes back
    _, r = validate_selflogs([run])
    assert not r.ok and r.reason.startswith("broker-1 seq 46 ") and "replicas[3,0].leo" in r.reason, r.reason
