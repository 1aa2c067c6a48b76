"""The same echo written with the reference host's worker SDK (reference_host.worker)."""

from reference_host.worker import Worker

worker = Worker()


@worker.method("echo")
def echo(params, ctx):
    return params


if __name__ == "__main__":
    raise SystemExit(worker.run())
