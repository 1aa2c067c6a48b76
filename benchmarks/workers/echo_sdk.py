"""The same echo written with the project's worker SDK (fengyu_worker)."""

from fengyu_worker import Worker

worker = Worker()


@worker.method("echo")
def echo(params, ctx):
    return params


if __name__ == "__main__":
    raise SystemExit(worker.run())
