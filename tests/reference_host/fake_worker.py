"""A deliberately controllable worker for process-manager tests (raw stdio, no SDK).

Methods: echo (params back), env (the FENGYU_* and TMPDIR variables), sleep {seconds},
crash {code}, fail (a JSON-RPC error), noise (non-JSON stdout and an unknown-id reply first),
big {bytes} (a result of that many characters), spawn (starts a grandchild, returns its pid,
then never answers again), log {text} (to stderr), close_stdout (closes it, keeps running),
deaf (stops reading stdin for good).
With IGNORE_EOF=1 it keeps running after stdin closes. Requests are handled on threads, so
replies may come back out of order.
"""

import json
import os
import subprocess
import sys
import threading
import time

lock = threading.Lock()


def reply(message):
    with lock:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def handle(request):
    method, params, rid = request["method"], request.get("params") or {}, request.get("id")
    if method == "echo":
        reply({"jsonrpc": "2.0", "id": rid, "result": params})
    elif method == "env":
        keys = (
            "FENGYU_PLUGIN_ID",
            "FENGYU_PLUGIN_ROOT",
            "FENGYU_LOG_LEVEL",
            "TMPDIR",
            "TMP",
            "TEMP",
        )
        reply({"jsonrpc": "2.0", "id": rid, "result": {k: os.environ.get(k) for k in keys}})
    elif method == "sleep":
        time.sleep(params["seconds"])
        reply({"jsonrpc": "2.0", "id": rid, "result": params["seconds"]})
    elif method == "crash":
        sys.stderr.write("about to crash\n")
        sys.stderr.flush()
        os._exit(params.get("code", 3))
    elif method == "nothing":  # FengYu's Go SDK for a handler's `return nil, nil`
        reply({"jsonrpc": "2.0", "id": rid})
    elif method == "null_error":  # a null error is no error to FengYu
        reply({"jsonrpc": "2.0", "id": rid, "result": params, "error": None})
    elif method == "fail":
        reply({"jsonrpc": "2.0", "id": rid, "error": {"code": 4001, "message": "no such row"}})
    elif method == "noise":
        with lock:
            sys.stdout.write("this is not json\n")
            sys.stdout.write(
                json.dumps({"jsonrpc": "2.0", "id": "someone-else", "result": 1}) + "\n"
            )
        reply({"jsonrpc": "2.0", "id": rid, "result": "after noise"})
    elif method == "big":
        reply({"jsonrpc": "2.0", "id": rid, "result": "x" * params["bytes"]})
    elif method == "spawn":
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        with open(params["pidfile"], "w") as f:
            f.write(str(child.pid))
        time.sleep(600)
    elif method == "close_stdout":
        os.close(sys.stdout.fileno())
        time.sleep(600)
    elif method == "log":
        sys.stderr.write(params["text"] + "\n")
        sys.stderr.flush()
        reply({"jsonrpc": "2.0", "id": rid, "result": None})


for line in sys.stdin:
    request = json.loads(line)
    if request["method"] == "deaf":
        time.sleep(600)  # stops reading stdin: the host's writes fill the pipe and block
    threading.Thread(target=handle, args=(request,), daemon=True).start()
if os.environ.get("IGNORE_EOF") == "1":
    time.sleep(600)
