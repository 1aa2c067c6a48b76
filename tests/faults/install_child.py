"""A host process that installs one plugin and waits to be killed (by the kill-during-install
test). It prints a marker line at each step of the install, and can be slowed down at each:

    python install_child.py DATA_DIR SOURCE COPY_PAUSE TX_PAUSE

COPY_PAUSE seconds after each copied file, TX_PAUSE seconds inside the SQLite transaction
(after the row is written, before COMMIT) and as long again while the previous version's
folder is removed. Markers: started, copy-start, copied, staged, in-transaction,
removing-old, installed. After `installed` it sleeps until killed.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import time
import types
from pathlib import Path

import reference_host.plugins.lifecycle
import reference_host.support.beneath
from reference_host.host import Host, HostConfig
from reference_host.storage.database import Store


def mark(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def main() -> None:
    data_dir, source = Path(sys.argv[1]), Path(sys.argv[2])
    copy_pause, tx_pause = float(sys.argv[3]), float(sys.argv[4])

    copy_fd = reference_host.support.beneath.copy_fd
    copy_plain_tree = reference_host.plugins.lifecycle.copy_plain_tree

    def copy_file(source_fd: int, target_fd: int) -> int:
        result = copy_fd(source_fd, target_fd)
        mark("copied")
        time.sleep(copy_pause)
        return result

    def copytree(src: Path, dst: Path) -> None:
        mark("copy-start")
        copy_plain_tree(src, dst)
        mark("staged")

    def rmtree(path, *args, **kwargs):
        if not Path(path).name.startswith(".staging-"):
            mark("removing-old")
            time.sleep(tx_pause)
        return shutil.rmtree(path, *args, **kwargs)

    patched = types.ModuleType("shutil")
    patched.__dict__.update(shutil.__dict__)
    patched.rmtree = rmtree  # type: ignore[attr-defined]
    reference_host.plugins.lifecycle.shutil = patched  # type: ignore[attr-defined]
    reference_host.plugins.lifecycle.copy_plain_tree = copytree  # type: ignore[assignment]
    reference_host.support.beneath.copy_fd = copy_file  # type: ignore[assignment]

    put_plugin = Store.put_plugin

    def slow_put_plugin(self, db, **kwargs) -> None:
        put_plugin(self, db, **kwargs)
        mark("in-transaction")
        time.sleep(tx_pause)

    Store.put_plugin = slow_put_plugin  # type: ignore[method-assign]

    async def install() -> None:
        host = Host(HostConfig(data_dir=data_dir))
        mark("started")
        await host.install(source)
        mark("installed")
        await asyncio.sleep(600)

    asyncio.run(install())


if __name__ == "__main__":
    main()
