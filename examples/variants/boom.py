"""A variant with a bug in its own code: ``select`` divides by zero when a partition goes offline.
The README's "Running a variant" runs it to show what a raising variant looks like:

    isrcheck check clean-election --variant examples/variants/boom.py:Boom --debug

exits 2 (not 1: the model found nothing; the variant's code failed) with one line naming the
variant, the Protocol method and the exception, and with --debug a shortest action path to a
state where it raises.
"""
from isrcheck.model.protocol import Protocol
from isrcheck.model.selectors import Election, Selector, SelectorInput


class Boom(Protocol):
    name = "boom"

    def select(self, selector: Selector, inp: SelectorInput) -> Election:
        if selector is Selector.OFFLINE_PARTITION:
            # the bug: the leader just went down, so no replica is both leader and live
            live_leaders = [r for r in inp.assignment if r == inp.leader and inp.live >> r & 1]
            _share = 100 // len(live_leaders)
        return super().select(selector, inp)
