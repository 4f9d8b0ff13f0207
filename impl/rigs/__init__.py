"""The test rigs: what drives the implementation to find out whether it keeps its promises.

- :mod:`.simulator`: the deterministic simulator, step by step (``Simulator``) and autonomous
  (``AutoSimulator``), both on the very cores the processes run;
- :mod:`.fault_schedule`, :mod:`.fault_run`, :mod:`.sim_campaign`: seeded random faults on
  ``AutoSimulator``, one run and many seeds' figures;
- :mod:`.history`: the history checker (acknowledged writes lost, reordered, duplicated; replicas
  diverged), and :mod:`.loss_shape`, a run's anomalies matched to the known weaknesses;
- :mod:`.torture_schedule`, :mod:`.torture`, :mod:`.torture_scenarios`, :mod:`.torture_explain`:
  a real cluster behind :mod:`.nemesis_proxy` (a fault-injecting TCP proxy per link), its seeded
  schedule, fixed scenarios and why each lost write was lost.

Why a room of its own: a rig may import everything of impl (cores, store, disks, frames,
processes), and nothing else of impl imports a rig (``tests/test_layering.py``).
"""
