"""Named safety properties over model states (specs/06-properties.md).

``build_model`` assembles a checkable model: the protocol, the properties that apply to its
configuration, and symmetry reduction where the configuration allows it. The z3 encodings and
proofs are the subpackage ``symbolic`` (not imported here: import the module you need).
"""
from __future__ import annotations

from .properties import ALL_PROPERTIES, applicable_properties, build_model, property_names

__all__ = ["ALL_PROPERTIES", "applicable_properties", "build_model", "property_names"]
