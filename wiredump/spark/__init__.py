"""The Spark side of wiredump: the tables built from many captures on Spark, and reports.

`wiredump.spark.session` makes the session (local by default), `export` dissects
captures inside executors into the same tables as the local export, `report` runs
Spark SQL over an export directory. PySpark is only imported when these run.
"""
