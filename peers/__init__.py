"""Peer models: other people's specifications of the same protocol, transcribed as models for the
project's generic checker, so that isrcheck and their own tools can be measured on the same work."""
