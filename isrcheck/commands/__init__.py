"""The commands of ``isrcheck``, one module per command or command group, and what they share.

check (``check``), peer (``check --peer``), simulate, run, gate (``list``, ``gate``), diff, gallery,
graph (``graph``, ``report``), prove (``prove``, ``bmc``), spark, conform (``conform``, ``validate``,
``traces``), cluster with cluster_simulate and cluster_torture (``cluster ...``); options (the
options most commands take), resources (memory ceiling, step cap, progress of a long run) and usage
(input and usage errors as one line, exit 2). isrcheck/cli.py registers them on the ``isrcheck``
group. Commands may import every other room of the command line; no other room imports them.
"""
