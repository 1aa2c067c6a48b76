"""Workbook splitting with openpyxl: inspect a workbook, plan a split, write the parts safely.

Nothing here knows about JSON-RPC; every business failure is a SplitError whose message is
meant for the user. Outputs are written as values (cached formula results), one new
workbook per part, into one folder only, under names made safe from cell values.
"""

from __future__ import annotations

import datetime as dt
import os
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from openpyxl import Workbook, load_workbook
from openpyxl.utils import get_column_letter

EXTENSIONS = (".xlsx", ".xlsm", ".xltx", ".xltm")
MAX_SOURCE_BYTES = 100 * 1024 * 1024
MAX_OUTPUT_FILES = 1000
MAX_EXCEL_ROWS = 1_048_576
MAX_EXCEL_COLUMNS = 16_384
CHECK_EVERY = 500
PREFIX_BYTES = 60
STEM_BYTES = 120
BLANK = "(blank)"
UNSAFE = set('<>:"/\\|?*')
RESERVED = {"CON", "PRN", "AUX", "NUL"} | {f"{p}{i}" for p in ("COM", "LPT") for i in range(10)}

Log = Callable[[str], None]
Checkpoint = Callable[[], None]


class SplitError(Exception):
    """A failure to report to the user as {"success": false, "summary": message}."""


def shown(value: Any, limit: int = 120) -> str:
    """value for a message: quoted, printable, valid UTF-8 and bounded in length."""
    text = str(value).encode("utf-8", "replace").decode("utf-8")
    text = "".join(ch if ch.isprintable() else "?" for ch in text)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return f"'{text}'"


def cell_text(value: Any) -> str:
    """A cell value as text: the grouping key of a split and the label of a header."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, dt.datetime):
        if value.time() == dt.time(0, 0):
            return value.date().isoformat()
        return value.isoformat(sep=" ")
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    return str(value).strip()


@dataclass(frozen=True)
class SheetInfo:
    name: str
    rows: int
    columns: int
    headers: tuple[str, ...]

    def find_header(self, wanted: str) -> int | None:
        """1-based index of the header named wanted: exact first, then ignoring case/space."""
        for index, header in enumerate(self.headers, start=1):
            if header == wanted:
                return index
        folded = wanted.strip().casefold()
        for index, header in enumerate(self.headers, start=1):
            if folded and header.strip().casefold() == folded:
                return index
        return None


@dataclass(frozen=True)
class WorkbookInfo:
    path: Path
    sheets: tuple[SheetInfo, ...]

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.sheets]

    def sheet(self, name: Any) -> SheetInfo | None:
        return next((s for s in self.sheets if s.name == name), None)


def check_source(text: str) -> Path:
    """The workbook at text (an absolute path to a readable .xlsx file), or SplitError."""
    if not text.strip():
        raise SplitError("filePath is empty: pass the FileRef of an .xlsx workbook")
    path = _absolute(text, "filePath")
    try:
        stat = path.stat()
    except FileNotFoundError:
        raise SplitError(f"File not found: {shown(text)}") from None
    except (OSError, ValueError) as exc:
        raise SplitError(f"Cannot access {shown(text)}: {shown(exc)}") from None
    if path.is_dir():
        raise SplitError(f"{shown(text)} is a folder, not an Excel workbook")
    if not path.is_file():
        raise SplitError(f"{shown(text)} is not a regular file")
    if path.suffix.lower() not in EXTENSIONS:
        hint = " (save .xls files as .xlsx first)" if path.suffix.lower() == ".xls" else ""
        raise SplitError(f"{shown(path.name)} is not an .xlsx workbook{hint}")
    if stat.st_size > MAX_SOURCE_BYTES:
        raise SplitError(f"{shown(path.name)} is larger than {MAX_SOURCE_BYTES >> 20} MiB")
    return path


def check_output_dir(text: str) -> Path:
    """The existing writable folder at text (an absolute path), or SplitError."""
    if not text.strip():
        raise SplitError("outputDir is empty: pass the writable DirectoryRef for the results")
    path = _absolute(text, "outputDir")
    try:
        is_dir = path.is_dir()
        exists = is_dir or path.exists()
    except (OSError, ValueError) as exc:
        raise SplitError(f"Cannot access {shown(text)}: {shown(exc)}") from None
    if not exists:
        raise SplitError(f"Output folder does not exist: {shown(text)}")
    if not is_dir:
        raise SplitError(f"Output path {shown(text)} is not a folder")
    if not os.access(path, os.W_OK | os.X_OK):
        raise SplitError(f"Output folder {shown(text)} is not writable")
    return path


def _absolute(text: str, name: str) -> Path:
    if "\x00" in text:
        raise SplitError(f"{name} is not a valid path")
    path = Path(text)
    if not path.is_absolute():
        raise SplitError(
            f"{name} must be an absolute path (the host passes the resolved path of a granted "
            f"ref), got {shown(text)}"
        )
    return path


def _open(path: Path) -> Any:
    try:
        return load_workbook(path, read_only=True, data_only=True, keep_links=False)
    except Exception as exc:  # openpyxl raises many types for a damaged or foreign file
        reason = str(exc) or type(exc).__name__
        raise SplitError(
            f"{shown(path.name)} could not be read as an .xlsx workbook: {shown(reason)}"
        ) from None


def _rows(sheet: Any) -> Iterator[tuple[Any, ...]]:
    """Every row of a read-only sheet, ignoring a possibly wrong stored dimension."""
    sheet.reset_dimensions()
    for row in sheet.iter_rows(values_only=True):
        yield tuple(row)


def _worksheet(book: Any, name: str) -> Any:
    match = next((ws for ws in book.worksheets if ws.title == name), None)
    if match is None:
        raise SplitError(f"Sheet {shown(name)} is no longer in the workbook; analyze it again")
    return match


def inspect_workbook(path: Path) -> WorkbookInfo:
    """Sheet names, sizes and first-row headers of the workbook (read-only, streamed)."""
    book = _open(path)
    try:
        sheets = []
        for ws in book.worksheets:
            rows = columns = 0
            headers: tuple[str, ...] = ()
            for number, row in enumerate(_rows(ws), start=1):
                if number == 1:
                    headers = tuple(cell_text(v) for v in _trim(row))
                if any(v is not None for v in row):
                    rows = number
                    columns = max(columns, len(_trim(row)))
            sheets.append(SheetInfo(ws.title, rows, columns, headers))
    except SplitError:
        raise
    except Exception as exc:
        raise SplitError(f"{shown(path.name)} could not be read: {shown(exc)}") from None
    finally:
        book.close()
    if not sheets:
        raise SplitError(f"{shown(path.name)} has no worksheets")
    return WorkbookInfo(path, tuple(sheets))


def header_label(path: Path, sheet: str, header_row: int, column: int) -> str:
    """The text of the header cell, or the column letter when that cell is blank."""
    book = _open(path)
    try:
        ws = _worksheet(book, sheet)
        for number, row in enumerate(_rows(ws), start=1):
            if number == header_row:
                value = row[column - 1] if column <= len(row) else None
                return cell_text(value) or get_column_letter(column)
    finally:
        book.close()
    return get_column_letter(column)


def _trim(row: Sequence[Any]) -> Sequence[Any]:
    end = len(row)
    while end and row[end - 1] is None:
        end -= 1
    return row[:end]


@dataclass(frozen=True)
class ColumnSplit:
    """Split sheet's rows below header_row by the values of column (1-based)."""

    sheet: str
    header_row: int
    column: int
    label: str
    name_parts: tuple[str, ...] = ()

    def describe(self) -> str:
        return (
            f"sheet {shown(self.sheet)} by column {self.column} ({shown(self.label)}) "
            f"below header row {self.header_row}"
        )


@dataclass(frozen=True)
class Plan:
    """What to write: whole sheets copied, and column splits."""

    source: Path
    copies: tuple[str, ...] = ()
    splits: tuple[ColumnSplit, ...] = field(default_factory=tuple)


class Namer:
    """Distinct, safe file names inside one folder, created exclusively (never overwritten)."""

    def __init__(self, folder: Path, prefix: str) -> None:
        self.folder = folder
        self.prefix = safe_component(prefix, PREFIX_BYTES, fallback="")
        self.used: set[str] = set()

    def create(self, parts: Iterable[str]) -> tuple[str, BinaryIO]:
        stem = "_".join(safe_component(p, STEM_BYTES // 2) for p in parts if p is not None)
        stem = _clip(self.prefix + (stem or "_"), PREFIX_BYTES + STEM_BYTES)
        for attempt in range(1, MAX_OUTPUT_FILES + 2):
            name = f"{stem}.xlsx" if attempt == 1 else f"{stem}_{attempt}.xlsx"
            if name.casefold() in self.used:
                continue
            target = self.folder / name
            if target.resolve().parent != self.folder.resolve():
                raise SplitError(f"Refusing to write {shown(name)} outside the output folder")
            try:
                handle = open(target, "xb")  # noqa: SIM115 (closed by the caller)
            except FileExistsError:
                continue
            self.used.add(name.casefold())
            return name, handle
        raise SplitError(f"Could not find a free file name for {shown(stem)}")


def safe_component(text: Any, limit: int, fallback: str = "_") -> str:
    """text as part of a file name: no separators, control chars, '..' or reserved names."""
    chars = []
    for ch in str(text):
        category = unicodedata.category(ch)
        bad = ch in UNSAFE or category in ("Cc", "Cs", "Cf", "Zl", "Zp", "Co", "Cn")
        chars.append("_" if bad else ch)
    cleaned = "".join(chars).strip()
    while ".." in cleaned:
        cleaned = cleaned.replace("..", ".")
    cleaned = _clip(cleaned.strip(" ."), limit).strip(" .")
    if not cleaned:
        return fallback
    if cleaned.split(".")[0].upper() in RESERVED:
        cleaned = f"_{cleaned}"
    return cleaned


def _clip(text: str, limit: int) -> str:
    """text cut to at most limit UTF-8 bytes, on a character boundary."""
    encoded = text.encode("utf-8")
    if len(encoded) <= limit:
        return text
    return encoded[:limit].decode("utf-8", "ignore")


def run_plan(
    plan: Plan,
    folder: Path,
    prefix: str,
    log: Log = lambda _line: None,
    checkpoint: Checkpoint = lambda: None,
) -> list[str]:
    """Write every part of plan into folder; the names written, in order.

    On any failure (or when checkpoint raises, to cancel) the files written so far are
    removed again, so a folder never keeps half a split.
    """
    namer = Namer(folder, prefix)
    written: list[Path] = []
    book = _open(plan.source)
    try:
        for sheet in plan.copies:
            checkpoint()
            ws = _worksheet(book, sheet)
            name = _write(namer, written, (sheet,), sheet, _rows(ws), checkpoint)
            log(f"sheet {shown(sheet)} -> {name}")
        for split in plan.splits:
            header, groups = _group(_worksheet(book, split.sheet), split, checkpoint)
            if len(written) + len(groups) > MAX_OUTPUT_FILES:
                raise SplitError(
                    f"Splitting {split.describe()} would write {len(groups)} files; "
                    f"at most {MAX_OUTPUT_FILES} files per split are allowed"
                )
            log(f"{split.describe()}: {len(groups)} value(s)")
            for value, rows in groups.items():
                parts = (*split.name_parts, value or BLANK)
                name = _write(namer, written, parts, split.sheet, [*header, *rows], checkpoint)
                log(f"{shown(value or BLANK)}: {len(rows)} row(s) -> {name}")
    except BaseException:
        for path in written:
            path.unlink(missing_ok=True)
        if written:
            log(f"removed {len(written)} file(s) written before the split stopped")
        raise
    finally:
        book.close()
    return [path.name for path in written]


def _group(
    ws: Any, split: ColumnSplit, checkpoint: Checkpoint
) -> tuple[list[tuple[Any, ...]], dict[str, list[tuple[Any, ...]]]]:
    header: list[tuple[Any, ...]] = []
    groups: dict[str, list[tuple[Any, ...]]] = {}
    for number, row in enumerate(_rows(ws), start=1):
        if number % CHECK_EVERY == 0:
            checkpoint()
        if number <= split.header_row:
            header.append(row)
            continue
        if all(v is None or (isinstance(v, str) and not v.strip()) for v in row):
            continue
        value = cell_text(row[split.column - 1]) if split.column <= len(row) else ""
        groups.setdefault(value, []).append(row)
        if len(groups) > MAX_OUTPUT_FILES:
            raise SplitError(
                f"Column {shown(split.label)} of sheet {shown(split.sheet)} has more than "
                f"{MAX_OUTPUT_FILES} distinct values; at most {MAX_OUTPUT_FILES} files per "
                "split are allowed"
            )
    if len(header) < split.header_row:
        raise SplitError(
            f"Sheet {shown(split.sheet)} has only {len(header)} row(s), fewer than the "
            f"header row {split.header_row}"
        )
    return header, groups


def _write(
    namer: Namer,
    written: list[Path],
    parts: Iterable[str],
    title: str,
    rows: Iterable[Sequence[Any]],
    checkpoint: Checkpoint,
) -> str:
    name, handle = namer.create(parts)
    target = namer.folder / name
    written.append(target)
    with handle:
        book = Workbook(write_only=True)
        ws = book.create_sheet(title)
        for number, row in enumerate(rows, start=1):
            if number % CHECK_EVERY == 0:
                checkpoint()
            ws.append(list(row))
        book.save(handle)
    return name
