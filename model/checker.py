"""Compatibility names: the checker moved to the engine package (:mod:`isrcheck.engine`).

Designers' variants written against the earlier layout import ``Property`` (and sometimes
``Checker``) from here; they keep working. New code imports from ``isrcheck.engine``.
"""
from __future__ import annotations

from isrcheck.engine.checker import Checker
from isrcheck.engine.core import CheckResult, Model, ModelFault, Property, Step, Violation

__all__ = ["Checker", "CheckResult", "Model", "ModelFault", "Property", "Step", "Violation"]
