"""Run by test_ingest.py in a separate process: ingest one file into a store once
`go` exists, and print the report as JSON."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from recall_fakes import HashingEmbedder, options  # noqa: E402

from memhubd.recall.ingest import Ingestor, SourceLock  # noqa: E402
from memhubd.recall.store import open_store  # noqa: E402


def main(database: str, locks: str, source: str, path: str, go: str) -> None:
    store = open_store(database)
    ingestor = Ingestor(store, HashingEmbedder(), SourceLock(locks))
    text = Path(path).read_text(encoding="utf-8")
    while not Path(go).exists():
        time.sleep(0.005)
    report = ingestor.ingest_text(source, text, options())
    store.close()
    print(json.dumps(report.as_dict()))


if __name__ == "__main__":
    main(*sys.argv[1:6])
