# The two commands of the README: `make check` (the safety gate) and `make test` (the test suite).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
NATIVE := $(VENV)/.compiled
# What mypyc compiles (isrcheck/native.py lists the modules) and the plain C extensions beside it
# (engine/_newtuple.c, the state classes' constructor; model/_partshash.c, the state fingerprint;
# engine/_fptable.c, the parallel workers' shared fingerprint table; engine/_parentmap.c, the
# single-process checker's fingerprint-to-parent map; engine/_codec.c, the state codec's program;
# engine/_scc.c, the liveness graph's components; engine/_assemble.c, the liveness graph of a parallel
# search from the workers' parts; engine/_fpset.c, the --disk search's window of fingerprints;
# peers/kafka_specification/_canon.c, the peer's symmetric fingerprint); a change recompiles them.
NATIVE_SOURCES := $(wildcard engine/*.py engine/*.c engine/*.h model/*.py model/*.c invariants/properties/*.py) peers/kafka_specification/model.py peers/kafka_specification/_canon.c setup.py isrcheck/native.py

.DEFAULT_GOAL := install
.PHONY: install check test gate-all history bench bench-peer bench-variant bench-liveness bench-scale bench-impl bench-spark bench-simulation system-deps clean

# Installs are quiet: --quiet for pip, and no Python warnings from the build backend (setuptools'
# "Editable installation" notice, printed on every editable install); errors still show in full.
PIP := PYTHONWARNINGS=ignore $(PY) -m pip

# The dependencies first, with the project installed as Python source (ISRCHECK_BUILD_PURE=1: quick);
# the compiled build is then always the $(NATIVE) step's own, so that a fresh clone runs compiled.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	ISRCHECK_BUILD_PURE=1 $(PIP) install --quiet -e '.[test,spark]'
	touch $(STAMP)

## the compiled build: the model, the properties and the engine, compiled by mypyc, and engine/_newtuple.c, model/_partshash.c, engine/_fptable.c, engine/_parentmap.c, engine/_codec.c and peers/kafka_specification/_canon.c (setup.py)
$(NATIVE): $(NATIVE_SOURCES) | $(STAMP)
	$(PIP) install --quiet --no-deps -e .
	touch $(NATIVE)

## install (the default): the virtual environment with the project installed and its hot path compiled
install: $(STAMP) $(NATIVE)

## check: create the virtual environment, install, run the safety gate on the default models
check: $(STAMP) $(NATIVE)
	$(VENV)/bin/isrcheck gate

## system-deps: what the tests need outside Python (Debian's ZooKeeper and Chromium; Java for Spark), as root
system-deps:
	bash scripts/zookeeper.sh install
	bash scripts/chromium.sh install
	@if [ -f scripts/ensure-java.sh ]; then bash scripts/ensure-java.sh; fi

## test: install with test extras and the system dependencies, run the test suite
## (on TEST_WORKERS processes, 2 by default as CI has 2 cores; a file's tests stay in one process,
## so its module fixtures are built once; the slowest tests are listed at the end, to watch CI's time)
TEST_WORKERS ?= 2
test: $(STAMP) $(NATIVE) system-deps
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --durations=25

## history: regenerate specs/12-history.md (Kafka's bug history: classification, pairs, counterexamples)
history: $(STAMP) $(NATIVE)
	$(VENV)/bin/isrcheck history --write specs/12-history.md

## gate-all: the gate including the large models
gate-all: $(STAMP) $(NATIVE)
	$(VENV)/bin/isrcheck gate --all

## bench: print throughput and memory figures for the standard models
bench: $(STAMP) $(NATIVE)
	$(PY) benchmarks/bench_checker.py

## bench-peer: the transcription of the public TLA+ specification against TLC's recorded figures
bench-peer: $(STAMP) $(NATIVE)
	$(PY) benchmarks/bench_peer.py

## bench-variant: what a designer's variant costs (one that changes nothing, and the ELR example)
bench-variant: $(STAMP) $(NATIVE)
	$(PY) benchmarks/bench_variant.py

## bench-liveness: time and memory of the liveness checker (graph, components against networkx, verdicts)
bench-liveness: $(STAMP) $(NATIVE)
	$(PY) benchmarks/bench_liveness.py

## bench-scale: issue 32's runs (liveness against safety, 4 brokers, the peer against TLC, checkpointed against plain), minutes
bench-scale: $(STAMP) $(NATIVE)
	$(PY) benchmarks/bench_scale.py

## bench-spark: Spark exploration against the single-process checker
bench-spark: $(STAMP) system-deps
	$(PY) benchmarks/bench_spark.py

## bench-simulation: seeded random-fault campaigns of the implementation, per protocol generation
bench-simulation: $(STAMP)
	$(PY) benchmarks/bench_simulation.py

## bench-impl: produce throughput and failover time of the reference implementation on loopback
bench-impl: $(STAMP) system-deps
	$(PY) benchmarks/bench_impl.py

clean:
	rm -rf $(VENV) build *.egg-info isrcheck/native_build.json
	find . -name '*.so' -not -path './$(VENV)/*' -delete
