"""Entry point for `spark-submit`: the `wiredump spark` commands as a Spark application.

    spark-submit --master yarn --py-files wiredump.zip \\
        "$(python -c 'import wiredump.spark.submit as s; print(s.__file__)')" \\
        export hdfs:///captures/a.pcap hdfs:///captures/b.pcap -o hdfs:///tables

Under spark-submit the master, memory and every other setting come from spark-submit
(wiredump only adds UTC, quiet progress and Parquet timestamp settings).
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    from wiredump.cli.entry import main as cli

    cli(["spark", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    main()
