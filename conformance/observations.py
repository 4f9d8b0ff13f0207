"""Observations as flat maps of named fields, and the field-by-field comparison.

An observation (specs/observation.toml) is nested; conformance compares and reports it one field
at a time, under a *path* that names the protocol fact rather than a list position:

=============================  =====================================================
``controller.epoch``           a field of the controller
``brokers[2].alive``           broker **id** 2 (not list position 2)
``partitions[0].isr``          partition index 0
``replicas[2,0].log``          broker 2's replica of partition 0
``acked[0]``                   the writes acknowledged to producers on partition 0 (not part of
                               the observation schema: the model's history variable, the
                               implementation's producer acknowledgements; ascending ids)
=============================  =====================================================

A field's value is compared whole (a log, an ISR). :func:`flatten` and :func:`unflatten` convert
between the two forms; :func:`diff` lists the fields that differ.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from isrcheck.specs.observation import fields

__all__ = ["Difference", "EXCLUDED", "diff", "field_paths", "flatten", "unflatten", "path_sort_key",
           "strict_equal"]

#: fields left out of every comparison, with the reason. Empty on purpose: both sides produce every
#: field of specs/observation.toml with the same meaning, including ``epochs`` and ``fetch_state``
#: (constant under generation = "high-watermark", compared all the same so that a later generation is
#: checked as soon as the implementation accepts it). Users can add paths with ``--ignore``.
EXCLUDED: dict[str, str] = {}

_PATH = re.compile(r"^(controller)\.([a-z_]+)$|^(brokers|partitions)\[(\d+)\]\.([a-z_]+)$"
                   r"|^(replicas)\[(\d+),(\d+)\]\.([a-z_]+)$|^(acked)\[(\d+)\]$")


@dataclass(frozen=True)
class Difference:
    path: str
    expected: Any  # the model's value (or the trace's)
    actual: Any  # the implementation's value
    missing: str = ""  # "expected" / "actual" when one side lacks the field


def strict_equal(a: Any, b: Any) -> bool:
    """Equality that also insists on equal types (``True`` is not ``1``, a tuple is not a list)."""
    ta = type(a)
    if ta is not type(b):
        return False
    if ta is dict:
        if len(a) != len(b):
            return False
        for k, v in a.items():
            if k not in b or not strict_equal(v, b[k]):
                return False
        return True
    if ta is list:
        if len(a) != len(b):
            return False
        for x, y in zip(a, b):
            if not strict_equal(x, y):
                return False
        return True
    return a == b


def field_paths(brokers: int, partitions: int, acked: bool = True) -> list[str]:
    """Every path of an observation of ``brokers`` brokers and ``partitions`` partitions, in order."""
    out = [f"controller.{f}" for f in fields("controller")]
    for b in range(1, brokers + 1):
        out += [f"brokers[{b}].{f}" for f in fields("broker") if f != "id"]
    for p in range(partitions):
        out += [f"partitions[{p}].{f}" for f in fields("partition") if f != "index"]
    for b in range(1, brokers + 1):
        for p in range(partitions):
            out += [f"replicas[{b},{p}].{f}" for f in fields("replica") if f not in ("broker", "partition")]
    if acked:
        out += [f"acked[{p}]" for p in range(partitions)]
    return out


def flatten(obs: Mapping[str, Any], acked: Sequence[Iterable[int]] | None = None) -> dict[str, Any]:
    """Path -> value. The identifying fields (``id``, ``index``, ``broker``, ``partition``) go into the paths."""
    out: dict[str, Any] = {}
    for k, v in obs["controller"].items():
        out[f"controller.{k}"] = v
    for br in obs["brokers"]:
        for k, v in br.items():
            if k != "id":
                out[f"brokers[{br['id']}].{k}"] = v
    for pa in obs["partitions"]:
        for k, v in pa.items():
            if k != "index":
                out[f"partitions[{pa['index']}].{k}"] = v
    for r in obs["replicas"]:
        for k, v in r.items():
            if k not in ("broker", "partition"):
                out[f"replicas[{r['broker']},{r['partition']}].{k}"] = v
    if acked is not None:
        for p, ids in enumerate(acked):
            out[f"acked[{p}]"] = sorted(ids)
    return out


def parse_path(path: str) -> tuple[str, tuple[int, ...], str]:
    """``replicas[2,0].log`` -> ("replicas", (2, 0), "log"); ValueError when not a path."""
    m = _PATH.match(path) if isinstance(path, str) else None
    if m is None:
        raise ValueError(f"not an observation path: {path!r}")
    g = m.groups()
    if g[0]:
        return "controller", (), g[1]
    if g[2]:
        return g[2], (int(g[3]),), g[4]
    if g[5]:
        return "replicas", (int(g[6]), int(g[7])), g[8]
    return "acked", (int(g[10]),), ""


def unflatten(flat: Mapping[str, Any], brokers: int, partitions: int) -> tuple[dict[str, Any], list[list[int]] | None]:
    """The observation (and the acked lists, if present) from a complete flat map."""
    obs: dict[str, Any] = {"controller": {}, "brokers": [], "partitions": [], "replicas": []}
    for f in fields("controller"):
        obs["controller"][f] = flat[f"controller.{f}"]
    for b in range(1, brokers + 1):
        obs["brokers"].append({f: (b if f == "id" else flat[f"brokers[{b}].{f}"]) for f in fields("broker")})
    for p in range(partitions):
        obs["partitions"].append({f: (p if f == "index" else flat[f"partitions[{p}].{f}"])
                                  for f in fields("partition")})
    for b in range(1, brokers + 1):
        for p in range(partitions):
            obs["replicas"].append({f: b if f == "broker" else p if f == "partition" else
                                    flat[f"replicas[{b},{p}].{f}"] for f in fields("replica")})
    acked = None
    if any(k.startswith("acked[") for k in flat):
        acked = [list(flat[f"acked[{p}]"]) for p in range(partitions)]
    return obs, acked


def path_sort_key(path: str) -> tuple:
    kind, key, f = parse_path(path)
    return ({"controller": 0, "brokers": 1, "partitions": 2, "replicas": 3, "acked": 4}[kind], key, f)


def diff(expected: Mapping[str, Any], actual: Mapping[str, Any], ignore: Iterable[str] = ()) -> list[Difference]:
    """Fields of two flat maps that differ (in the order of ``expected``, then extra ones of ``actual``).

    ``ignore`` holds paths or field-name patterns: ``replicas[*].hw`` ignores every replica's hw,
    ``acked[*]`` every acknowledgement list.
    """
    patterns = [_glob(x) for x in (*EXCLUDED, *ignore)]
    out: list[Difference] = []
    for path, v in expected.items():
        if any(p.match(path) for p in patterns):
            continue
        if path not in actual:
            out.append(Difference(path, v, None, missing="actual"))
        elif actual[path] != v or type(actual[path]) is not type(v):
            out.append(Difference(path, v, actual[path]))
    for path, v in actual.items():
        if path not in expected and not any(p.match(path) for p in patterns):
            out.append(Difference(path, None, v, missing="expected"))
    return out


def _glob(pattern: str) -> re.Pattern[str]:
    return re.compile("^" + re.escape(pattern).replace(r"\*", r"[^\]]*") + "$")
