"""Where the kit's own data files are: the folder of this module.

Not `importlib.resources.files("conformance")`: run inside a plugin that has a
`conformance/` folder of its own (the documented `conformance/examples/`), the current
directory comes first on sys.path and that folder is taken for the package, so the kit would
look for its catalog in the plugin. A module's own file cannot be mistaken."""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
CATALOG = PACKAGE / "requirements.toml"
SCHEMAS = PACKAGE / "schemas"
SCAFFOLD = PACKAGE / "scaffold"  # one template folder per profile, for `plugin-conformance init`
