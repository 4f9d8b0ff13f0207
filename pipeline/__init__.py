"""The Spark pipeline: the only package that imports pyspark (see ARCHITECTURE.md)."""
