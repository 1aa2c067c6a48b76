"""The trivial echo worker: a raw stdio loop, no SDK. Each request's params come back as its
result, one newline-delimited JSON frame per reply; it exits at stdin EOF."""

import json
import sys


def main() -> int:
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    for line in stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        if "id" not in request:
            continue
        reply = {"jsonrpc": "2.0", "id": request["id"], "result": request.get("params")}
        stdout.write(json.dumps(reply, separators=(",", ":")).encode() + b"\n")
        stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
