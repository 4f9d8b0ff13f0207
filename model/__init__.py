"""The explicit-state model of Kafka's ZooKeeper-era controller and ISR replication protocol.

Pure code: no I/O beyond reading a configuration, no pyspark, no z3. The checker engine in
:mod:`isrcheck.engine.checker` is generic; :class:`isrcheck.model.kafka.KafkaModel` plugs the
protocol into it.
"""
