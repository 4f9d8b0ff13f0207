"""isrcheck: a formally checked model of Kafka's ZooKeeper-era controller and ISR replication."""

from isrcheck import native as _native

__version__ = "0.1.0"

if _native.pure_requested():  # ISRCHECK_PURE=1: import the compiled modules' Python source
    _native.install_pure_finder()
