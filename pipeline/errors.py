"""The pipeline's input errors: one line for the user, exit status 2 on the command line."""
from __future__ import annotations


class PipelineError(ValueError):
    """Bad input to a pipeline job (a grid file, a corpus directory, an output directory, a query),
    or a machine that cannot run Spark; the message is one line."""
