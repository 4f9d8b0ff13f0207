"""Process-independent fingerprints (pipeline/fingerprint.py) and the codec recorded by runs."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from isrcheck.inputs import manifest
from isrcheck.invariants import build_model
from isrcheck.model.statecodec import kafka_state_codec
from isrcheck.pipeline.errors import PipelineError
from isrcheck.pipeline.fingerprint import StableModel
from isrcheck.pipeline.spec import ModelSpec
from isrcheck.pipeline.store import RunStore, check_codec, codec_id

from shared import reachable_states


def reachable(name: str, limit: int = 1500) -> list:
    """The first ``limit`` states of manifest model ``name``, breadth-first."""
    return reachable_states(build_model(manifest.get(name).config), limit)


def test_stable_fingerprints_are_the_same_in_another_process():
    """hash(None) differs between Python 3.11 processes; the pipeline's fingerprint must not."""
    spec = ModelSpec.of("delayed-requests", manifest.get("delayed-requests").config, None)
    model = spec.build()
    states = reachable("delayed-requests", 40)
    here = [model.fingerprint(s) for s in states]
    codec = kafka_state_codec()
    blobs = [codec.encode(s).hex() for s in states]
    prog = (
        "import json, sys\n"
        "from isrcheck.pipeline.spec import ModelSpec\n"
        "from isrcheck.model.statecodec import kafka_state_codec\n"
        "spec = ModelSpec.from_json(sys.argv[1]); m = spec.build(); c = kafka_state_codec()\n"
        "print(json.dumps([m.fingerprint(c.decode(bytes.fromhex(b))) for b in json.load(sys.stdin)]))\n"
    )
    out = subprocess.run([sys.executable, "-c", prog, spec.to_json()], input=json.dumps(blobs),
                         capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == here
    assert len(set(here)) == len(here)


def test_stable_model_respects_symmetry():
    cfg = manifest.get("spare-brokers").config
    sym = StableModel(build_model(cfg, symmetry=True), force_digest=True)
    plain = StableModel(build_model(cfg, symmetry=False), force_digest=True)
    s = reachable("spare-brokers", 200)
    # states the symmetric model identifies are identified by the stable fingerprint too
    by_model = {}
    for x in s:
        by_model.setdefault(sym.model.fingerprint(x), set()).add(sym.fingerprint(x))
    assert all(len(v) == 1 for v in by_model.values())
    assert len({plain.fingerprint(x) for x in s}) == len(s)


def test_runs_record_the_codec_and_refuse_another(tmp_path):
    assert codec_id() == f"binary-1:{kafka_state_codec().signature}"
    check_codec(codec_id(), "here")
    with pytest.raises(PipelineError, match="encoded with codec '0123456789abcdef'.*binary-1:"):
        check_codec("0123456789abcdef", "here")
    store = RunStore(tmp_path / "run")
    store.create({"codec": "0123456789abcdef"})  # a run written by the JSON codec
    with pytest.raises(PipelineError, match="run: its states are encoded with codec '0123456789abcdef'"):
        store.load_meta()
