"""The reference implementation: an independent implementation of specs/ (see impl/README.md)."""
