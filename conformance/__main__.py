"""`python -m conformance`: helpers beside the pytest plugin.

migrate DIR|manifest.json   print the v2 equivalent of a legacy v1 manifest
requirements                print the requirement catalog
explain ID                  one requirement: its level, reason, examples and fix
reference                   print docs/spec/requirements.md, generated from the catalog
schemas                     print the paths of the shipped JSON Schemas
init fengyu|erp DIR [--id ID] [--kit-source URL]  start a plugin that passes the kit
vendor [DIR]                write a wheel of this kit into DIR/.conformance/, which the
                            plugin's CI installs (pip install .conformance/*.whl)
diff OLD.json NEW.json [--json]  what regressed, was fixed, appeared or disappeared
                            between two runs' reports (exit status 1 on a regression)
mcp-replay FILE             send a failing MCP item's transcript to its server again
providers DIR...            the tools x providers matrix of each plugin, in Markdown (exit
                            status 1 when a provider refuses a tool or a request)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from conformance.catalog import format_catalog
from conformance.explain import UnknownRequirement, explain
from conformance.fengyu.manifest import MANIFEST
from conformance.fengyu.migrate import MigrationError, migrate_v1
from conformance.init_plugin import PROFILES, InitError, init, kit_source
from conformance.package_data import SCHEMAS
from conformance.profiles import load_plugin
from conformance.provider_report import provider_matrix_markdown, refused
from conformance.provider_view import provider_matrix
from conformance.reference_page import reference_page
from conformance.reports.diff import ReportError, compare, format_comparison, load_report
from conformance.run_store import RunStore
from conformance.sources import JsonLoadError, load_json_file
from conformance.vendor import INSTALL, VendorError, vendor
from plugin_spec.plugin_folders import expand


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance")
    commands = parser.add_subparsers(dest="command", required=True)
    migrate = commands.add_parser("migrate", help="print the v2 equivalent of a v1 manifest")
    migrate.add_argument("path", type=Path, help="plugin folder or manifest.json")
    commands.add_parser("requirements", help="print the requirement catalog")
    commands.add_parser("schemas", help="print the paths of the shipped JSON Schemas")
    explain_ = commands.add_parser("explain", help="one requirement, its examples and fix")
    explain_.add_argument("id", help="a requirement id, e.g. FY-MAN-006")
    commands.add_parser("reference", help="print the generated requirement reference page")
    init_ = commands.add_parser("init", help="start a plugin that passes the kit, with CI")
    init_.add_argument("profile", choices=PROFILES, help="the plugin profile")
    init_.add_argument("dir", type=Path, help="the new plugin's folder (new or empty)")
    init_.add_argument("--id", help="the plugin id (default: from the folder name)")
    init_.add_argument(
        "--kit-source",
        help="where the plugin's CI installs the kit from: a git URL with a commit or tag "
        "(git+https://...@REF), an archive URL or a folder (default: where this kit came from)",
    )
    diff_ = commands.add_parser("diff", help="compare two runs' JSON reports, per target")
    diff_.add_argument("old", type=Path, help="the earlier run's --conformance-report JSON")
    diff_.add_argument("new", type=Path, help="the later run's")
    diff_.add_argument("--json", action="store_true", help="print the changes as JSON")
    vendor_ = commands.add_parser(
        "vendor", help="write a wheel of this kit into DIR/.conformance/ for the plugin's CI"
    )
    vendor_.add_argument("dir", type=Path, nargs="?", default=Path("."), help="the plugin")
    providers = commands.add_parser(
        "providers", help="will OpenAI, Anthropic and Gemini take these plugins' tools?"
    )
    providers.add_argument("dirs", type=Path, nargs="+", help="plugin folders (or folders of them)")
    replay_ = commands.add_parser(
        "mcp-replay", help="send a failing MCP item's transcript (JSONL) to its server again"
    )
    replay_.add_argument("file", type=Path, help="the transcript a finding names")
    args = parser.parse_args(argv)
    if args.command == "mcp-replay":
        return _replay(args.file)
    if args.command == "diff":
        return _diff(args.old, args.new, args.json)
    if args.command == "vendor":
        return _vendor(args.dir)
    if args.command == "providers":
        return _providers(args.dirs)
    if args.command == "requirements":
        print(format_catalog())
        return 0
    if args.command == "explain":
        try:
            print(explain(args.id))
        except UnknownRequirement as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        return 0
    if args.command == "init":
        return _init(args.profile, args.dir, args.id, args.kit_source)
    if args.command == "reference":
        print(reference_page(), end="")
        return 0
    if args.command == "schemas":
        folder = SCHEMAS
        for entry in sorted(folder.iterdir(), key=lambda e: e.name):
            if entry.name.endswith(".schema.json"):
                print(entry)
        return 0
    return _migrate(args.path)


def _init(profile: str, folder: Path, plugin_id: str | None, source: str | None) -> int:
    try:
        kit = kit_source(source)
        written = init(profile, folder, plugin_id, kit)
    except (InitError, VendorError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for path in written:
        print(f"wrote {path}")
    print(f"next: cd {folder} && pytest --plugin-dir . --conformance-strict")
    if kit.warning:
        print(f"warning: {kit.warning}", file=sys.stderr)
    return 0


def _diff(old: Path, new: Path, as_json: bool) -> int:
    try:
        comparison = compare(load_report(old), load_report(new))
    except ReportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if as_json:
        print(json.dumps(comparison.to_json(), indent=2, ensure_ascii=False))
    else:
        print(format_comparison(comparison), end="")
    return 1 if comparison.regressed else 0


def _vendor(folder: Path) -> int:
    if not folder.is_dir():
        print(f"error: {folder} is not a folder", file=sys.stderr)
        return 2
    try:
        path = vendor(folder)
    except VendorError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {path}")
    print(f"commit it; the plugin's CI installs it with: {INSTALL}")
    return 0


def _providers(dirs: list[Path]) -> int:
    """Each plugin judged on its own, with the host's built-ins, as
    docs/guide/providers-matrix.md shows it; exit status 1 when a provider rejects a tool or
    refuses a plugin's request."""
    missing = [d for d in dirs if not d.is_dir()]
    if missing:
        print(f"error: {missing[0]} is not a folder", file=sys.stderr)
        return 2
    summaries = []
    for root in dict.fromkeys(expand([d.resolve() for d in dirs])):
        plugin = load_plugin(root)
        if plugin.load_error is not None:
            print(f"note: {root}: the plugin's files did not load", file=sys.stderr)
            continue
        summaries.append(
            {"label": plugin.label, "providers": provider_matrix(plugin, [], RunStore())}
        )
    table = "\n".join(provider_matrix_markdown(summaries, heading="###")).strip()
    if not table:
        print("note: no plugin here has a tool to judge", file=sys.stderr)
        return 0
    print(table)
    refusals = refused(summaries)
    for line in refusals:
        print(f"refused: {line}", file=sys.stderr)
    return 1 if refusals else 0


def _replay(path: Path) -> int:
    from conformance.deadlines import Deadlines
    from conformance.mcp.replay import ReplayError, replay

    try:
        return replay(path, Deadlines())
    except ReplayError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _migrate(path: Path) -> int:
    manifest = path / MANIFEST if path.is_dir() else path
    try:
        document = load_json_file(manifest, str(manifest))
        if not isinstance(document.data, dict):
            raise MigrationError(f"{manifest} does not hold a JSON object")
        migration = migrate_v1(document.data)
    except (JsonLoadError, MigrationError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for note in migration.notes:
        print(f"note: {note}", file=sys.stderr)
    print(json.dumps(migration.manifest, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
