"""Studies built on several checks: diff (two protocols of the same bounds compared: verdicts and
behaviours) and gallery (the known-weakness gallery, specs/10-weaknesses.md, written from runs).
They read their inputs through :mod:`isrcheck.inputs` and import no other room of the command line.
"""
