"""The symbolic checks: the model's rules as z3 terms (specs/08-symbolic.md).

z3 is imported only here (and by the tests); its solver is run by ``logic`` alone, so that solver
frames, time limits and the reading of z3's answers into verdicts are written once. The modules,
each importing only the ones listed before it:

- ``verdicts``: three-valued verdicts (PROVED, REFUTED, UNKNOWN), obligations, exit codes (plain
  data, without z3);
- ``expected``: the documented expected refutations of ``prove transitions``
  (specs/expected_refutations.toml), marked on its obligations;
- ``logic``: the logic layer, the only module that runs z3's solver: solvers with a time limit and
  frames, a check's outcome (PROVED, REFUTED with a model, UNKNOWN with a reason), values read out
  of a model, and the initiation and consecution checks of an inductive argument;
- ``types``: the one translation between the model's types and z3 terms (broker sets, selector
  inputs, state-machine tables, a replication State as a SymState and back);
- ``selectors``: every leader selector against its contract (``isrcheck prove selectors``);
- ``transitions``: every controller operation against the state-machine tables
  (``isrcheck prove transitions``);
- ``instance``: the base of the replication encoding: an action as a guard and an effect
  (``Instance``), and the interfaces between the encoding and its plug-ins: ``Encoder`` (the
  encoding as a plug-in sees it), ``ControllerContext`` (the acting controller as the operation
  plug-ins see it) and ``TruncationRule`` (the hooks of a protocol generation);
- ``epochs``: the leader-epoch cache and OffsetsForLeaderEpoch (``model/epochs.py``), the
  ``TruncationRule`` of kip-101, kip-279 and kip-320;
- ``admin``: topic creation and deletion (controller partition and replica states, hosting);
- ``reassignment``: the 12-step reassignment (its state, its tables of replica lists, its steps);
- ``operations``: preferred elections, controlled shutdown and controller failover, and the
  controller-side state (``SymOps``) under which admin's and reassignment's hang; the plug-in the
  encoding hands its controller hooks to;
- ``generations``: the table of protocol generations (``GENERATIONS``), each a ``TruncationRule``;
- ``replication``: ``Encoding``, the replication protocol as a symbolic transition system, which
  consults a generation and, when the configuration has them, the operations;
- ``bmc``: bounded model checking of the encoding, every counterexample replayed by the model
  (``isrcheck bmc``);
- ``committed``: the committed-prefix facts of the kip-320 strengthening pool (every HW, checkpoint
  and the exposed log held alike by the ISR; answers and joins that keep it so);
- ``candidates``: the strengthening candidates every generation gets (the replication path's
  bookkeeping, the fault-free facts), as predicates over a symbolic state;
- ``epoch_candidates``: the candidates of the leader-epoch generations (the epoch cache, durability
  through OffsetsForLeaderEpoch, kip-320's reconciliation, and committed's facts);
- ``pool``: what Houdini starts from: the bounded state space, an encoding's candidates, the pinned
  strengthenings Houdini keeps on two manifest models;
- ``cti``: a counterexample to induction decoded into model states and printed as lines;
- ``houdini``: inductive invariants by Houdini, with counterexamples to induction
  (``isrcheck prove inductive``);
- ``reach``: the explicit checker's side of a counterexample to induction (its pre-state reached,
  or a reachable state from which the same action breaks the property: REFUTED with that run);
- ``mutations``: documented protocol mutations, in the encoding and in the model
  (``isrcheck prove inductive --mutation``).

Dependency order (``a <- b``: b imports a; nothing imports back, not even under TYPE_CHECKING or
inside a function)::

    verdicts <- expected, logic <- types
    logic, types, verdicts <- selectors, transitions
    types <- instance <- epochs, admin, reassignment
    admin, reassignment <- operations
    epochs <- generations, committed
    generations, operations <- replication <- bmc (with ..properties), candidates, cti
    candidates, committed <- epoch_candidates <- pool <- houdini (with cti)
    (every module that checks or decodes imports logic)
    verdicts <- reach; generations, houdini, reach <- mutations

This package imports none of its modules itself: import the one you need.
"""
