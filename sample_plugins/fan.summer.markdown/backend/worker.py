"""The fan.summer.markdown worker: render Markdown and outline Markdown files.

FengYu starts it as `python3 -u backend/worker.py` in the plugin folder (manifest
`backend.runtime: python`); FENGYU_PYTHON names a Python that has markdown-it-py. Built on the
one-file worker SDK fengyu_worker: a packaged copy of this plugin carries it next to this file
(copy it with `python -c "import fengyu_worker, shutil; shutil.copy(fengyu_worker.__file__,
'backend/fengyu_worker.py')"`); in the repository, which keeps the SDK's one source, the
installed module is found instead. Params are validated against the manifest's rpc.methods
schemas before a handler runs.
"""

import sys
from pathlib import Path

# The host checks the package's digest before every start: no __pycache__ in it.
sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))

from markdown_it import MarkdownIt  # noqa: E402

from fengyu_worker import Context, Worker  # noqa: E402

worker = Worker.from_manifest(__file__)
markdown = MarkdownIt("commonmark", {"html": False})
MAX_BYTES = 8 * 1024 * 1024


@worker.method("render")
def render(params: dict, ctx: Context) -> dict:
    html = markdown.render(params["markdown"])
    return {
        "success": True,
        "summary": f"rendered {len(params['markdown'])} characters",
        "html": html,
    }


@worker.method("outline")
def outline(params: dict, ctx: Context) -> dict:
    path = Path(params["filePath"])
    if not path.is_file():
        return {"success": False, "summary": f"{path} is not a readable file"}
    if path.stat().st_size > MAX_BYTES:
        return {"success": False, "summary": f"{path.name} is larger than 8 MiB"}
    text = path.read_bytes().decode("utf-8", "replace")
    depth = params.get("maxDepth", 6)
    headings = []
    tokens = markdown.parse(text)
    for index, token in enumerate(tokens):
        ctx.check_cancelled()
        if token.type == "heading_open" and int(token.tag[1:]) <= depth:
            headings.append({"level": int(token.tag[1:]), "text": tokens[index + 1].content})
    return {
        "success": True,
        "summary": f"{len(headings)} headings in {path.name}",
        "headings": headings,
    }


if __name__ == "__main__":
    raise SystemExit(worker.run())
