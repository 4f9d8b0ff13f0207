"""Frames between the parallel checker's forked workers: a pickle behind an 8-byte length.

The workers are forks of one process and trust each other, so pickle is the format (states
cross only when the coordinator evens out the frontier). This module stays interpreted: its
pickler dispatch table subclasses ``dict`` and its error subclasses ``RuntimeError``, which the
compiler does not support.
"""
from __future__ import annotations

import copyreg
import io
import pickle
import struct
from typing import Any

class WorkerError(RuntimeError):
    """A worker process failed; the message carries its traceback."""


class PeerGone(Exception):
    """A peer worker's pipe closed in the middle of a level."""


HDR = struct.Struct("<Q")
END_FRAME = bytes(HDR.size)  # an empty frame: "nothing more from me in this phase"

_tuple_new = tuple.__new__


def _reduce_namedtuple(obj: tuple) -> tuple:
    # Rebuilt by tuple.__new__(cls, items): no Python-level __new__ call when unpickling, and
    # no __getnewargs__ call when pickling (about 2x faster both ways than the default).
    return _tuple_new, (type(obj), tuple(obj))


class _DispatchTable(dict):
    """copyreg's table plus a fast reducer for every namedtuple class, found on first use."""

    def __missing__(self, cls: type) -> Any:
        if issubclass(cls, tuple) and hasattr(cls, "_fields") and getattr(cls, "__dictoffset__", 1) == 0:
            self[cls] = _reduce_namedtuple
            return _reduce_namedtuple
        raise KeyError(cls)


_DISPATCH = _DispatchTable(copyreg.dispatch_table)


def frame(obj: Any) -> memoryview:
    """``obj`` pickled (protocol 5) behind an 8-byte length header, in one buffer."""
    f = io.BytesIO()
    f.write(END_FRAME)
    p = pickle.Pickler(f, protocol=5)
    p.dispatch_table = _DISPATCH
    p.dump(obj)
    view = f.getbuffer()
    HDR.pack_into(view, 0, len(view) - HDR.size)
    return view
