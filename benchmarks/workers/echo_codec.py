"""echo_raw.py with a choice of JSON codec (argv[1]: stdlib or orjson), for the codec
section: the same loop, only the encoding and decoding of each frame differ."""

import json
import sys


def main() -> int:
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    if sys.argv[1] == "orjson":
        import orjson

        loads, dumps = orjson.loads, orjson.dumps
    else:
        encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
        loads, dumps = json.loads, lambda value: encode(value).encode()
    for line in stdin:
        request = loads(line)
        reply = {"jsonrpc": "2.0", "id": request["id"], "result": request.get("params")}
        stdout.write(dumps(reply) + b"\n")
        stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
