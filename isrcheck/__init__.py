"""isrcheck: a formally checked model of Kafka's ZooKeeper-era controller and ISR replication."""

from isrcheck import native as _native

__version__ = "0.1.0"

_native.choose_build()  # the compiled modules, or their Python source (ISRCHECK_PURE=1, or stale)
