"""What a Spark task needs to rebuild the model: a small JSON document, not a pickled object.

A :class:`ModelSpec` is the configuration (``Config.to_dict()``) and the symmetry choice. Tasks get
its JSON text (a few hundred bytes in the task closure) and call :func:`model_for`, which builds
the model once per worker process and caches it, so the model, its protocol and its properties are
always built inside the worker from data, never shipped as Python objects.

A protocol variant (``--variant``) travels as text too: ``variant`` is ``MODULE:ATTR`` with a file
path made absolute, and ``variant_path`` the driver's current directory, where a worker imports a
module name from (:func:`isrcheck.invariants.variants.resolve_variant`); both are in the JSON only when set, so
the spec of the standard protocol is what it always was.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from isrcheck.invariants import build_model
from isrcheck.model.config import Config, ConfigError, from_mapping
from isrcheck.specs.protocol import DEFAULT_GENERATION, generation_setting

from .fingerprint import SCHEME as FINGERPRINT_SCHEME
from .fingerprint import StableModel


def config_json(cfg: Config) -> str:
    """The configuration as canonical JSON (sorted keys), for storage and comparison."""
    return json.dumps(cfg.to_dict(), sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class ModelSpec:
    label: str
    config: dict[str, Any]
    symmetry: bool
    variant: str | None = None
    variant_path: str | None = None

    @classmethod
    def of(cls, label: str, cfg: Config, symmetry: bool | None, variant: str | None = None) -> ModelSpec:
        """``variant``: a ``--variant MODULE:ATTR`` as the user gave it (checked and resolved here)."""
        if symmetry is None:
            from isrcheck.model.symmetry import symmetry_allowed

            symmetry = symmetry_allowed(cfg)
        shipped = None
        if variant is not None:
            from isrcheck.invariants.variants import resolve_variant

            shipped = resolve_variant(variant)
        return cls(label, json.loads(config_json(cfg)), bool(symmetry), *(shipped or (None, None)))

    def to_json(self) -> str:
        d: dict[str, Any] = {"label": self.label, "config": self.config, "symmetry": self.symmetry}
        if self.variant is not None:
            d.update(variant=self.variant, variant_path=self.variant_path)
        return json.dumps(d, sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> ModelSpec:
        d = json.loads(text)
        return cls(d["label"], d["config"], bool(d["symmetry"]), d.get("variant"), d.get("variant_path"))

    def build_config(self) -> Config:
        try:
            return from_mapping(self.config)
        except ConfigError as e:
            raise ConfigError(f"{self.label}: {e}") from None

    def build(self) -> StableModel:
        """The model, with fingerprints that are the same in every process (:mod:`.fingerprint`)."""
        cfg = self.build_config()
        protocol = None
        if self.variant is not None:
            from isrcheck.invariants.variants import load_variant

            protocol = load_variant(self.variant, search_path=self.variant_path)(cfg)
        return StableModel(build_model(cfg, protocol=protocol, symmetry=self.symmetry))

    @property
    def generation(self) -> str:
        given = generation_setting(self.config)  # a corpus written before the rename has "truncation"
        return str(given[1]) if given else DEFAULT_GENERATION.value


_MODELS: dict[str, Any] = {}


def model_for(spec_json: str) -> Any:
    """The (stable-fingerprint) model of ``spec_json``, built once per process (Spark reuses its Python workers)."""
    m = _MODELS.get(spec_json)
    if m is None:
        if len(_MODELS) > 64:
            _MODELS.clear()
        m = _MODELS[spec_json] = ModelSpec.from_json(spec_json).build()
    return m
