"""isrcheck: a formally checked model of Kafka's ZooKeeper-era controller and ISR replication."""

__version__ = "0.1.0"
