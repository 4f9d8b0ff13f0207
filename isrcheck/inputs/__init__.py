"""What a command is asked to check, read and validated: manifest (specs/models.toml read for the
model, a model NAME or --config FILE resolved, a result compared with its expectation), scenario
(scenario files replayed as model steps) and tracefile (trace files replayed as model steps).
Inputs import no other room of the command line.
"""
