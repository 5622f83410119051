"""The statfs helper process (see statfs.py): one thread per request, answers as JSON lines.

stdin:  {"id": 7, "path": "/mnt/nfs"}
stdout: {"id": 7, "stat": [f_bsize, f_frsize, f_blocks, ...]}  or  {"id": 7, "errno": 13, ...}
At end of input it exits at once, whatever its threads are blocked in.
"""

from __future__ import annotations

import json
import os
import sys
import threading

READY = b'{"ready": true}\n'


def _answer(call_id: int, path: str, lock: threading.Lock) -> None:
    try:
        reply: dict[str, object] = {"id": call_id, "stat": list(os.statvfs(path))}
    except OSError as error:
        reply = {"id": call_id, "errno": error.errno or 0, "error": error.strerror or ""}
    line = (json.dumps(reply) + "\n").encode()
    with lock:
        try:
            sys.stdout.buffer.write(line)
            sys.stdout.buffer.flush()
        except OSError:
            os._exit(0)  # diskprobe is gone


def main() -> None:
    lock = threading.Lock()
    sys.stdout.buffer.write(READY)  # started and imported: the caller's timeouts start now
    sys.stdout.buffer.flush()
    for line in sys.stdin.buffer:
        try:
            request = json.loads(line)
            call_id, path = int(request["id"]), str(request["path"])
        except (ValueError, KeyError, TypeError):
            continue
        threading.Thread(target=_answer, args=(call_id, path, lock), daemon=True).start()
    os._exit(0)


if __name__ == "__main__":
    main()
