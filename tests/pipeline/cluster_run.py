"""Run by test_cluster.py in a child process (a process may hold one SparkContext, and the test
session's local one is already running). The first argument is a master URL: the session is
started on it with the pipeline's own ``create_session`` (what ``--master`` does), once, so that
the cluster's executors start once; every further argument is one ``isrcheck`` command line as a
JSON list, run through the real command line (which uses that session). One JSON list of
``[exit code, stdout, stderr]`` is printed."""
from __future__ import annotations

import json
import sys

from click.testing import CliRunner

from isrcheck.cli import main
from isrcheck.commands.spark import spark
from isrcheck.pipeline.session import create_session

if "spark" not in main.commands:
    main.add_command(spark)
session = create_session(sys.argv[1], app_name="isrcheck-cluster-test")
out = []
for arg in sys.argv[2:]:
    r = CliRunner().invoke(main, json.loads(arg), prog_name="isrcheck")
    out.append([r.exit_code, r.stdout, r.stderr + (repr(r.exception) if r.exception and r.exit_code not in (0, 1, 2) else "")])
session.stop()
print(json.dumps(out))
