"""ControllerWork (model/world.py): the controller's working copy replaces only the field an action
writes, so what an action leaves alone keeps its identity (the fingerprint and EpochsMonotonic
recognise unchanged parts by identity)."""
from __future__ import annotations

from isrcheck.inputs import manifest
from isrcheck.invariants import build_model
from isrcheck.engine.explore import successors
from isrcheck.model.world import ControllerWork

from test_statehash import reachable

FIELDS = ("partition_states", "replica_states", "reassign_step", "reassign_old", "reassign_new")


def test_an_untouched_controller_is_the_same_object_and_a_touched_one_keeps_its_other_fields() -> None:
    name = "deposed-controller-ar-write"
    model = build_model(manifest.get(name).config)
    same = changed = kept = 0
    for s in reachable(name, 300):
        for a, t in successors(model, s):
            if t.controller == s.controller:
                assert t.controller is s.controller, a
                same += 1
            elif t.controller.epoch == s.controller.epoch:
                changed += 1
                for field in FIELDS:
                    before, after = getattr(s.controller, field), getattr(t.controller, field)
                    if before == after:
                        assert after is before, (a, field)
                        kept += 1
    assert same > 100 and changed > 10 and kept > 10


def test_writing_a_value_already_there_copies_nothing() -> None:
    s = reachable("reassignment", 40)[-1]
    work = ControllerWork(s.controller)
    p, b = 0, s.zk.partitions[0].replicas[0]
    work.set_partition_state(p, s.controller.partition_states[p])
    work.set_replica_state(p, b, s.controller.replica_states[p][b - 1])
    work.set_reassign_step(p, s.controller.reassign_step[p])
    work.set_reassignment(p, s.controller.reassign_old[p], s.controller.reassign_new[p])
    assert work.freeze() is s.controller


def test_a_write_changes_that_entry_alone() -> None:
    s = reachable("reassignment", 40)[-1]
    c = s.controller
    work = ControllerWork(c)
    b = s.zk.partitions[0].replicas[0]
    work.set_replica_state(0, b, c.replica_states[0][b - 1] + 100)
    work.set_reassignment(0, (7,), (8, 9))
    frozen = work.freeze()
    assert frozen.replica_states[0][b - 1] == c.replica_states[0][b - 1] + 100
    assert [x for i, x in enumerate(frozen.replica_states[0]) if i != b - 1] == \
        [x for i, x in enumerate(c.replica_states[0]) if i != b - 1]
    assert (frozen.reassign_old[0], frozen.reassign_new[0]) == ((7,), (8, 9))
    assert frozen.partition_states is c.partition_states and frozen.reassign_step is c.reassign_step
    assert c.replica_states[0][b - 1] != frozen.replica_states[0][b - 1]  # the original is untouched
