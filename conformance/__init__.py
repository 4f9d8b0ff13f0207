"""Conformance: the only package importing both the model and the implementation."""
