"""The Python worker SDK, as the project's own code imports it: the vendorable module
`fengyu_worker` (one file a plugin copies into its backend/) is the one source; this package
keeps the older import path working and adds background jobs (jobs.py).

from reference_host.worker import Worker

worker = Worker.from_manifest(__file__)

@worker.method("render")
def render(params, ctx):
    return {"success": True, "summary": "rendered", "html": to_html(params["markdown"])}

if __name__ == "__main__":
    worker.run()
"""

from fengyu_worker import Context, RpcError, Worker

__all__ = ["Context", "RpcError", "Worker"]
