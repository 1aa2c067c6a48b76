"""The Excel Splitter's tools: one split session per worker, and a handler per rpc method.

Each handler takes the validated params and answers a dict with success and summary; a
business failure (nothing analyzed yet, unknown sheet, missing folder, ...) is
{"success": false, "summary": reason}, never an exception.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import excel_split as xs

from fengyu_worker import JobHandle, Jobs

MODES = ("BY_SHEET", "BY_COLUMN", "COMPLEX")
MAX_RULES = 50
MAX_LISTED = 10
MAX_HEADERS = 200
MAX_LOG_LINES_PER_POLL = 200
CANCEL_WAIT_SECONDS = 2.0

Result = dict[str, Any]


def fail(summary: str) -> Result:
    return {"success": False, "summary": summary}


def listed(names: list[str]) -> str:
    """Up to MAX_LISTED names for a summary, then how many more."""
    head = ", ".join(xs.shown(n, 60) for n in names[:MAX_LISTED])
    more = len(names) - MAX_LISTED
    return f"{head} and {more} more" if more > 0 else head


@dataclass(frozen=True)
class Rule:
    sheet: str
    header_row: int
    column: int
    label: str

    def entry(self) -> Result:
        return {
            "sheetName": self.sheet,
            "headerIndex": self.header_row,
            "columnIndex": self.column,
            "columnName": self.label,
        }


@dataclass
class Session:
    """What the user set up so far: the analyzed workbook, the mode and its settings."""

    source: xs.WorkbookInfo | None = None
    mode: str | None = None
    sheets: tuple[str, ...] = ()
    split_sheet: str | None = None
    split_column: str | None = None
    split_index: int | None = None
    rules: list[Rule] = field(default_factory=list)
    last_job: str | None = None

    def plan(self) -> xs.Plan:
        """The split to run, or SplitError saying what is missing."""
        if self.source is None:
            raise xs.SplitError(NO_SOURCE)
        if self.mode is None:
            raise xs.SplitError("No split mode configured yet: call excel_configure first")
        if self.mode == "BY_SHEET":
            return xs.Plan(self.source.path, copies=self.sheets)
        if self.mode == "BY_COLUMN":
            assert self.split_sheet is not None and self.split_index is not None
            split = xs.ColumnSplit(self.split_sheet, 1, self.split_index, self.split_column or "")
            return xs.Plan(self.source.path, splits=(split,))
        if not self.rules:
            raise xs.SplitError(
                "COMPLEX mode has no rules yet: add them with excel_complex_config action=add"
            )
        splits = tuple(
            xs.ColumnSplit(r.sheet, r.header_row, r.column, r.label, (r.sheet, r.label))
            for r in self.rules
        )
        return xs.Plan(self.source.path, splits=splits)


NO_SOURCE = "No workbook analyzed yet: call excel_analyze with the workbook first"


class ExcelTools:
    """The handlers, sharing one session and one job registry."""

    def __init__(self, jobs: Jobs | None = None, log: Callable[[str], None] | None = None):
        self.session = Session()
        self.jobs = jobs or Jobs(keep_finished=16, max_log_lines=1000)
        self.log = log or (lambda _line: None)

    # excel_analyze -------------------------------------------------------------------------

    def analyze(self, params: dict[str, Any]) -> Result:
        try:
            path = xs.check_source(params["filePath"])
            info = xs.inspect_workbook(path)
        except xs.SplitError as exc:
            kept = " (the previous session is kept)" if self.session.source else ""
            return fail(f"{exc}{kept}")
        self.session = Session(source=info, last_job=self.session.last_job)
        details = [
            {
                "name": s.name,
                "rows": s.rows,
                "columns": s.columns,
                "headers": list(s.headers[:MAX_HEADERS]),
            }
            for s in info.sheets
        ]
        return {
            "success": True,
            "summary": (
                f"Analyzed {xs.shown(path.name)}: {len(info.sheets)} sheet(s) "
                f"({listed(info.names)}). It is now the source workbook; choose a split with "
                "excel_configure."
            ),
            "sheets": info.names,
            "sheetDetails": details,
        }

    # excel_configure -----------------------------------------------------------------------

    def configure(self, params: dict[str, Any]) -> Result:
        info = self.session.source
        if info is None:
            return fail(NO_SOURCE)
        mode = params["mode"]
        if mode == "BY_SHEET":
            return self._by_sheet(info, params.get("sheets") or [])
        if mode == "BY_COLUMN":
            return self._by_column(info, params.get("splitSheet"), params.get("splitColumn"))
        self._set(mode="COMPLEX")
        count = len(self.session.rules)
        hint = (
            f"{count} rule(s) are configured"
            if count
            else "add rules with excel_complex_config action=add"
        )
        return {"success": True, "summary": f"Mode COMPLEX selected; {hint}.", "mode": mode}

    def _by_sheet(self, info: xs.WorkbookInfo, wanted: list[str]) -> Result:
        unknown = [s for s in wanted if info.sheet(s) is None]
        if unknown:
            return fail(
                f"Unknown sheet(s): {listed(unknown)}. The workbook has: {listed(info.names)}"
            )
        chosen = list(dict.fromkeys(wanted)) or info.names
        self._set(mode="BY_SHEET", sheets=tuple(chosen))
        return {
            "success": True,
            "summary": (
                f"Mode BY_SHEET: one workbook per sheet for {len(chosen)} sheet(s) "
                f"({listed(chosen)}). Run it with excel_execute."
            ),
            "mode": "BY_SHEET",
        }

    def _by_column(self, info: xs.WorkbookInfo, sheet_name: Any, column: Any) -> Result:
        if not sheet_name:
            if len(info.sheets) != 1:
                return fail(f"BY_COLUMN needs splitSheet, one of: {listed(info.names)}")
            sheet_name = info.sheets[0].name
        sheet = info.sheet(sheet_name)
        if sheet is None:
            return fail(
                f"Unknown sheet {xs.shown(sheet_name)}. The workbook has: {listed(info.names)}"
            )
        headers = [h for h in sheet.headers if h]
        if not headers:
            return fail(f"Sheet {xs.shown(sheet.name)} has no header row to split by")
        if not isinstance(column, str) or not column.strip():
            return fail(f"BY_COLUMN needs splitColumn, one of the headers: {listed(headers)}")
        index = sheet.find_header(column)
        if index is None:
            return fail(
                f"Unknown column {xs.shown(column)} in sheet {xs.shown(sheet.name)}; "
                f"its headers are: {listed(headers)}"
            )
        label = sheet.headers[index - 1]
        self._set(mode="BY_COLUMN", split_sheet=sheet.name, split_column=label, split_index=index)
        return {
            "success": True,
            "summary": (
                f"Mode BY_COLUMN: sheet {xs.shown(sheet.name)} will be split into one workbook "
                f"per value of column {xs.shown(label)}. Run it with excel_execute."
            ),
            "mode": "BY_COLUMN",
        }

    def _set(self, **settings: Any) -> None:
        session = self.session
        session.mode = settings.get("mode")
        session.sheets = settings.get("sheets", ())
        session.split_sheet = settings.get("split_sheet")
        session.split_column = settings.get("split_column")
        session.split_index = settings.get("split_index")

    # excel_complex_config ------------------------------------------------------------------

    def complex_config(self, params: dict[str, Any]) -> Result:
        action = params["action"]
        session = self.session
        if action == "clear":
            count = len(session.rules)
            session.rules = []
            return {"success": True, "summary": f"Cleared {count} rule(s).", "entries": []}
        if action == "list":
            entries = [r.entry() for r in session.rules]
            summary = f"{len(entries)} complex rule(s) configured."
            return {"success": True, "summary": summary, "entries": entries}
        return self._add_rule(params)

    def _add_rule(self, params: dict[str, Any]) -> Result:
        info = self.session.source
        if info is None:
            return fail(NO_SOURCE)
        missing = [k for k in ("sheetName", "headerIndex", "columnIndex") if k not in params]
        if missing:
            return fail(f"action=add needs {', '.join(missing)}")
        sheet = info.sheet(params["sheetName"])
        if sheet is None:
            return fail(
                f"Unknown sheet {xs.shown(params['sheetName'])}. "
                f"The workbook has: {listed(info.names)}"
            )
        header_row, column = int(params["headerIndex"]), int(params["columnIndex"])
        if not 1 <= header_row <= max(sheet.rows, 0):
            return fail(
                f"headerIndex {header_row} is outside sheet {xs.shown(sheet.name)}, "
                f"which has {sheet.rows} row(s) (headerIndex counts from 1)"
            )
        if not 1 <= column <= max(sheet.columns, 0):
            return fail(
                f"columnIndex {column} is outside sheet {xs.shown(sheet.name)}, "
                f"which has {sheet.columns} column(s) (columnIndex counts from 1)"
            )
        if len(self.session.rules) >= MAX_RULES:
            return fail(f"At most {MAX_RULES} complex rules; clear some first")
        try:
            label = xs.header_label(info.path, sheet.name, header_row, column)
        except xs.SplitError as exc:
            return fail(str(exc))
        rule = Rule(sheet.name, header_row, column, label)
        entries = self.session.rules
        known = any(
            (r.sheet, r.header_row, r.column) == (rule.sheet, header_row, column) for r in entries
        )
        if not known:
            entries.append(rule)
        hint = (
            ""
            if self.session.mode == "COMPLEX"
            else " Select it with excel_configure mode=COMPLEX."
        )
        verb = "is already configured" if known else "added"
        return {
            "success": True,
            "summary": (
                f"Rule {verb}: split sheet {xs.shown(sheet.name)} by column {column} "
                f"({xs.shown(label)}) below header row {header_row}; "
                f"{len(entries)} rule(s) in all.{hint}"
            ),
            "entries": [r.entry() for r in entries],
        }

    # excel_execute / excel_execute_start ---------------------------------------------------

    def _prepare(self, params: dict[str, Any]) -> tuple[xs.Plan, Any, str]:
        plan = self.session.plan()
        folder = xs.check_output_dir(params["outputDir"])
        running = self.jobs.running()
        if running:
            raise xs.SplitError(
                f"Split job {running[0]} is still running; poll it with excel_execute_status "
                "or stop it with excel_cancel"
            )
        return plan, folder, params.get("filePrefix") or ""

    def execute(self, params: dict[str, Any]) -> Result:
        try:
            plan, folder, prefix = self._prepare(params)
            names = xs.run_plan(plan, folder, prefix, self.log)
        except xs.SplitError as exc:
            return fail(str(exc))
        except OSError as exc:
            return fail(f"Writing the split failed: {xs.shown(exc)}")
        return written(names, folder)

    def execute_start(self, params: dict[str, Any]) -> Result:
        try:
            plan, folder, prefix = self._prepare(params)
        except xs.SplitError as exc:
            return fail(str(exc))

        def work(handle: JobHandle) -> Result:
            handle.log(f"splitting {plan.source.name} into {folder}")
            try:
                names = xs.run_plan(plan, folder, prefix, handle.log, handle.raise_if_cancelled)
            except OSError as exc:
                raise xs.SplitError(f"Writing the split failed: {xs.shown(exc)}") from None
            handle.log(f"done: {len(names)} file(s)")
            return written(names, folder)

        job_id = self.jobs.start(work, name="excel-split")
        self.session.last_job = job_id
        return {
            "success": True,
            "summary": (
                f"Started split job {job_id}. Poll excel_execute_status with this jobId and "
                "cursor 0 (then the cursor it returns) until done is true."
            ),
            "jobId": job_id,
        }

    # excel_execute_status ------------------------------------------------------------------

    def execute_status(self, params: dict[str, Any]) -> Result:
        job_id = params["jobId"]
        cursor = max(0, int(params.get("cursor") or 0))
        snapshot = self.jobs.snapshot(job_id, cursor, limit=MAX_LOG_LINES_PER_POLL)
        if snapshot is None:
            return fail(
                f"Unknown job {xs.shown(job_id)}: job ids come from excel_execute_start, and "
                "only the most recent finished jobs are kept"
            )
        status = snapshot["status"]
        if status == "running":
            summary = f"Job {job_id} is running; poll again with cursor {snapshot['cursor']}."
        elif status == "succeeded":
            summary = f"Job {job_id} finished: {snapshot['result']['summary']}"
        elif status == "failed":
            summary = f"Job {job_id} failed: {snapshot.get('error', 'unknown error')}"
        else:
            summary = f"Job {job_id} was cancelled; files it had written were removed."
        return {"success": True, "summary": summary, **snapshot}

    # excel_query / excel_cancel ------------------------------------------------------------

    def query(self, params: dict[str, Any]) -> Result:
        session = self.session
        state: Result = {}
        if session.source is not None:
            state["filePath"] = str(session.source.path)
            state["sheets"] = session.source.names
        if session.mode is not None:
            state["mode"] = session.mode
        if session.mode == "BY_SHEET":
            state["selectedSheets"] = list(session.sheets)
        if session.mode == "BY_COLUMN":
            state["splitSheet"] = session.split_sheet
            state["splitColumn"] = session.split_column
        state["rules"] = [r.entry() for r in session.rules]
        if session.last_job is not None:
            snapshot = self.jobs.snapshot(session.last_job)
            if snapshot is not None:
                state["jobId"] = session.last_job
                state["jobStatus"] = snapshot["status"]
        if session.source is None:
            summary = "No workbook analyzed yet; start with excel_analyze."
        else:
            mode = session.mode or "no mode chosen yet (call excel_configure)"
            summary = (
                f"Source {xs.shown(session.source.path.name)}, "
                f"{len(session.source.sheets)} sheet(s); mode: {mode}; "
                f"{len(session.rules)} complex rule(s)."
            )
        return {"success": True, "summary": summary, "state": state}

    def cancel(self, params: dict[str, Any]) -> Result:
        stopped = [job for job in self.jobs.running() if self.jobs.cancel(job)]
        for job in stopped:
            self.jobs.wait(job, CANCEL_WAIT_SECONDS)
        had_session = self.session.source is not None
        self.session = Session(last_job=self.session.last_job)
        parts = [f"Cancelled job {job}" for job in stopped] or ["No split job was running"]
        parts.append("cleared the session" if had_session else "the session was already empty")
        result: Result = {
            "success": True,
            "summary": "; ".join(parts) + ".",
            "cancelled": bool(stopped),
        }
        if stopped:
            result["jobId"] = stopped[0]
        return result


def written(names: list[str], folder: Any) -> Result:
    summary = f"Wrote {len(names)} file(s) to {xs.shown(folder)}"
    summary += f": {listed(names)}." if names else "."
    return {
        "success": True,
        "summary": summary,
        "files": {"count": len(names), "names": names},
        "outputDir": str(folder),
    }
