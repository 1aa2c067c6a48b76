"""The Python worker SDK: write a FengYu worker as a few decorated functions.

from reference_host.worker import Worker

worker = Worker.from_manifest(__file__)

@worker.method("render")
def render(params, ctx):
    return {"success": True, "summary": "rendered", "html": to_html(params["markdown"])}

if __name__ == "__main__":
    worker.run()
"""

from reference_host.worker.errors import RpcError
from reference_host.worker.runtime import Context, Worker

__all__ = ["Context", "RpcError", "Worker"]
