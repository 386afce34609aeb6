"""A separate process draining one inbox in a loop (for the cross-process race test).

Prints the ids it received as JSON on stdout.
"""

from __future__ import annotations

import json
import sys
import time

from memhubd.cowork import InboxStore

if __name__ == "__main__":
    path, recipient, start_at = sys.argv[1], sys.argv[2], float(sys.argv[3])
    store = InboxStore(path)
    while time.time() < start_at:
        time.sleep(0.001)
    got: list[int] = []
    for _ in range(200):
        got.extend(m.id for m in store.drain(recipient))
    store.close()
    print(json.dumps(got))
