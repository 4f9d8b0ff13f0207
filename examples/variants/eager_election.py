"""A designer's variant: when a partition goes offline, elect the first live replica, in the ISR
or not (trading durability for availability). Check it with

    isrcheck check clean-election-isr-shrink --variant examples/variants/eager_election.py:EagerElection

and the checker answers with a counterexample in which an acknowledged write is lost.
"""
from isrcheck.engine.checker import Property
from isrcheck.model.protocol import Protocol
from isrcheck.model.selectors import Election, Selector, SelectorInput
from isrcheck.model.state import State


class EagerElection(Protocol):
    name = "eager-election"

    def select(self, selector: Selector, inp: SelectorInput) -> Election:
        if selector is Selector.OFFLINE_PARTITION:
            live = [r for r in inp.assignment if inp.live >> r & 1]
            if live:
                return Election(live[0], 1 << live[0], tuple(live), unclean=True)
        return super().select(selector, inp)


def _leader_epoch_below_three(s: State) -> bool:
    return all(zp.leader_epoch < 3 for zp in s.zk.partitions)


class EpochBudget(Protocol):
    """The standard protocol with one extra property (a variant may add properties too)."""

    name = "epoch-budget"

    def extra_properties(self) -> list[Property]:
        return [Property("LeaderEpochBelowThree", "always", _leader_epoch_below_three,
                         description="No partition reaches leader epoch 3.")]
