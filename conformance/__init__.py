"""Conformance: the only package importing both the model and the implementation.

The two sides share nothing but ``specs/``: the action vocabulary and the observation schema, with
their loaders and checks (:mod:`isrcheck.specs.actions`, :mod:`isrcheck.specs.observation`); this
package drives them in those terms and compares what they report. It never loads the manifest:
whoever calls it (the command line, the tests) hands it configurations, targets or entries.

============== =====================================================================================
module         role
============== =====================================================================================
observations   observations as flat maps of named fields (``replicas[2,0].log``); the field diff
sides          the model and the implementation's step-mode simulator behind one interface;
               which configurations (protocol generations) the implementation accepts
traces         trace files: JSON lines and ITF (Apalache/Quint), written and strictly read back
export         counterexamples and seeded sample paths out of the checker, as traces
replay         model -> implementation: replay a trace, compare every step, first divergence
cover          the model's state graph (networkx) and path sets covering every edge / state /
               every path up to a depth, replayed with a coverage report
lockstep       hypothesis RuleBasedStateMachine: both sides in lockstep; shrunk failures saved
eventlog       implementation -> model: event logs, and their validation by guided search
runs           fault-injection runs of the autonomous implementation (AutoSimulator, real cluster),
               logged for validation
weaknesses     the known-weakness gallery replayed on the implementation
report         rich tables and JSON
============== =====================================================================================

specs/11-conformance.md describes the formats and the guarantees.
"""
