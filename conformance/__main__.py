"""`python -m conformance`: helpers beside the pytest plugin.

migrate DIR|manifest.json   print the v2 equivalent of a legacy v1 manifest
requirements                print the requirement catalog
explain ID                  one requirement: its level, reason, examples and fix
reference                   print docs/spec/requirements.md, generated from the catalog
schemas                     print the paths of the shipped JSON Schemas
init fengyu|erp DIR [--id ID] [--kit-source URL]  start a plugin that passes the kit
vendor [DIR]                write a wheel of this kit into DIR/.conformance/, which the
                            plugin's CI installs (pip install .conformance/*.whl)
marketplace --targets FILE --shard I/N --output DIR  check one shard of a marketplace's
                            targets, each in a bounded run of its own
merge SHARD.json... --output M.json [--targets FILE]  join shard reports into one
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
from collections import Counter
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
from conformance.shards import ShardError, chosen_shard
from conformance.sources import JsonLoadError, load_json_file
from conformance.vendor import INSTALL, VendorError, vendor
from plugin_spec.json_types import JsonObject, as_array, objects_in
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
    market = commands.add_parser(
        "marketplace", help="check one shard of a targets file, each target in its own run"
    )
    market.add_argument("--targets", type=Path, required=True, help="JSON lines, one target each")
    sliced = market.add_mutually_exclusive_group(required=True)
    sliced.add_argument("--shard", help="I/N: the shard to check (from 1)")
    sliced.add_argument("--shards", type=int, help="N: the shard JOB_COMPLETION_INDEX+1 of N")
    market.add_argument("--output", type=Path, required=True, help="the folder of the reports")
    market.add_argument("--wall", type=float, default=600.0, help="seconds per target (600)")
    market.add_argument("--memory", default="4G", help="resident bytes per target (4G)")
    market.add_argument("--keep", default="1M", help="output bytes kept per target (1M)")
    market.add_argument("--jobs", type=int, default=1, help="targets checked at once (1)")
    market.add_argument("kit_args", nargs="*", help="after --: more arguments for each kit run")
    merge_ = commands.add_parser("merge", help="join shard reports into one report")
    merge_.add_argument("reports", type=Path, nargs="+", help="the shards' JSON reports")
    merge_.add_argument("--output", type=Path, required=True, help="the merged JSON report")
    merge_.add_argument("--targets", type=Path, help="the targets file: check none is missing")
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
    if args.command == "marketplace":
        return _marketplace(args)
    if args.command == "merge":
        return _merge(args.reports, args.output, args.targets)
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


def _marketplace(args: argparse.Namespace) -> int:
    """One shard of a targets file; exit status 0 once every target's run ended (what the
    targets' items say is in the report), 2 for a usage error."""
    from conformance.marketplace.run_target import Limits, Outcome
    from conformance.marketplace.shard_run import run_shard, shard_path
    from conformance.marketplace.targets import TargetsError, load_targets

    try:
        shard = chosen_shard(args.shard, args.shards)
        targets = load_targets(args.targets)
        limits = Limits(args.wall, _bytes(args.memory, "--memory"), _bytes(args.keep, "--keep"))
    except (ShardError, TargetsError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    assert shard is not None  # one of the two is required

    def told(outcome: Outcome) -> None:
        print(f"{outcome.id}: {outcome.status} ({outcome.seconds:.1f} s) {outcome.reason}".rstrip())

    document = run_shard(
        targets, shard, args.output, limits, jobs=args.jobs, kit_args=args.kit_args, told=told
    )
    ran = objects_in(document["targets"])
    statuses = Counter(str(t["status"]) for t in ran)
    counted = ", ".join(f"{n} {status}" for status, n in sorted(statuses.items()))
    print(f"shard {shard}: {len(ran)} targets ({counted or 'none'})")
    print(f"report: {shard_path(args.output, shard).with_suffix('.json')}")
    return 0


def _bytes(raw: str, flag: str) -> int:
    """A size: a number with an optional K, M or G."""
    units = {"K": 2**10, "M": 2**20, "G": 2**30}
    text = raw.strip().upper()
    scale = units.get(text[-1:], 1)
    number = text[:-1] if text[-1:] in units else text
    if not number.isdigit():
        raise ValueError(f"{flag} {raw!r}: expected bytes, e.g. 512M or 4G")
    return int(number) * scale


def _merge(reports: list[Path], output: Path, targets: Path | None) -> int:
    from conformance.marketplace.merge import MergeError, ShardReport, merge
    from conformance.marketplace.targets import TargetsError, load_targets
    from conformance.report import write_document

    try:
        loaded = [ShardReport(path, load_report(path)) for path in reports]
        expected = [t.id for t in load_targets(targets)] if targets else None
        document = merge(loaded, expected)
    except (ReportError, MergeError, TargetsError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    write_document(document, base=output, sarif=output.with_suffix(".sarif"))
    print(f"merged {len(reports)} shards: {len(as_array(document['results']))} items -> {output}")
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
    summaries: list[JsonObject] = []
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
