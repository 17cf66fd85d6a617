"""``python -m cep_core explain|run``: try a query on your own data.

- ``explain QUERY_FILE``: the compiled plan (automaton, predicates, window, engine).
- ``run QUERY_FILE EVENTS.{csv,parquet}``: the query's output events as CSV on stdout (or
  ``--out FILE``), and the cost counters on stderr. The events file has a header, a column
  ``type`` (the event type), a numeric column ``time`` in non-decreasing order (``--sort``
  sorts it, ties in file order), and any attributes; an event's ``id`` is its row number
  (from 0) unless the file has an ``id`` column. Types the query does not name are an error
  unless ``--other-types`` (they matter under strict contiguity, where they break a run).
  Every line has one field per column (an empty field is no value); a number is finite
  (not NaN, inf or 1e400); an attribute the query computes with is a number
  (:func:`cep_core.expr.numeric_attributes`). Every bad value is reported on one line with
  the file, the column and the line.

Parameters: ``--param name=value`` (numbers or text), tables ``--table name=FILE.csv``
(the last column is the value, the others the key, in order of the lookup's arguments).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                  help="Explain or run a cep_core query.", pretty_exceptions_enable=False)

QueryArg = Annotated[Path, typer.Argument(metavar="QUERY_FILE", help="The query text.")]
EventsArg = Annotated[Path, typer.Argument(metavar="EVENTS", help="A CSV or Parquet file.")]
ParamOpt = Annotated[list[str] | None, typer.Option(
    "--param", "-p", help="A parameter, name=value (repeatable).")]
TableOpt = Annotated[list[str] | None, typer.Option(
    "--table", "-t", help="A lookup table, name=FILE.csv: key columns then the value.")]
UnitOpt = Annotated[str, typer.Option(
    "--time-unit", help="Unit of the events' time: ms, s, min or h.")]


def _value(text: str):
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def _params(params: list[str] | None, tables: list[str] | None) -> dict:
    import pandas as pd

    out: dict = {}
    for item in params or []:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise typer.BadParameter(f"--param {item!r}: expected name=value")
        out[name] = _value(value)
    for item in tables or []:
        name, sep, path = item.partition("=")
        if not sep or not name:
            raise typer.BadParameter(f"--table {item!r}: expected name=FILE.csv")
        frame = pd.read_csv(path)
        if frame.shape[1] < 2:
            raise typer.BadParameter(f"--table {item!r}: needs key column(s) and a value")
        keys = list(frame.columns[:-1])
        out[name] = frame.set_index(keys if len(keys) > 1 else keys[0])[frame.columns[-1]]
    return out


def _compile(query_file: Path, params, tables, time_unit: str):
    from cep_core import compile as compile_query

    text = query_file.read_text(encoding="utf-8")
    return compile_query(text, params=_params(params, tables), time_unit=time_unit,
                         source=query_file.name)


def _fail(exc: Exception) -> typer.Exit:
    print(f"error: {exc}", file=sys.stderr)
    return typer.Exit(2)


@app.command()
def explain(query_file: QueryArg, param: ParamOpt = None, table: TableOpt = None,
            time_unit: UnitOpt = "s") -> None:
    """Print the compiled plan of QUERY_FILE."""
    from cep_core.errors import QueryError

    try:
        print(_compile(query_file, param, table, time_unit).explain())
    except (QueryError, OSError, ValueError) as exc:
        raise _fail(exc) from None


class EventsFileError(ValueError):
    """An events file that cannot be run: the message names the file, column and line."""


def _line(position: int) -> str:
    """The file line of data row ``position`` (the header is line 1)."""
    return f"line {position + 2}"


def _check_rows(path: Path) -> None:
    """EventsFileError for the first data row of a CSV file whose fields are not as many
    as its header's (a blank line is no row)."""
    import csv

    try:
        with path.open(newline="", encoding="utf-8") as f:
            reader = csv.reader(f)
            header = next(reader, None)
            if header is None:
                return  # an empty file: read_events says so
            width = len(header)
            for row in reader:
                if row and len(row) != width:
                    raise EventsFileError(
                        f"{path.name}: line {reader.line_num}: {len(row)} field(s), but the "
                        f"header has {width} ({','.join(header)}); every line needs one value "
                        "per column (an empty one for no value)")
    except csv.Error as exc:
        raise EventsFileError(f"{path.name}: not a CSV file ({exc})") from None
    except UnicodeDecodeError as exc:
        raise EventsFileError(f"{path.name}: cannot be read ({exc})") from None
    except OSError as exc:
        raise EventsFileError(f"{path.name}: cannot be read ({exc.strerror or exc})") from None


def _texts(path: Path, frame, column: str):
    """The values of ``column`` as the file writes them (a CSV file's text; a Parquet
    file's values as text)."""
    import pandas as pd

    if path.suffix == ".parquet":
        return frame[column].astype(str)
    at = list(frame.columns).index(column)
    return pd.read_csv(path, usecols=[at], dtype=str, keep_default_na=False).iloc[:, 0]


def _not_finite(path: Path, frame, column: str, values, rows=None) -> None:
    """EventsFileError for the first value of ``column`` (numbers ``values``; of ``rows``
    only, if given) that is infinite, NaN or beyond float range (1e400): an empty field is
    no value, but NaN, inf and 1e400 are not numbers to compute with."""
    import numpy as np

    values = np.asarray(values, dtype=float)
    odd = ~np.isfinite(values) if rows is None else rows & ~np.isfinite(values)
    if not odd.any():
        return
    texts = _texts(path, frame, column)
    bad = odd & (~frame[column].isna().to_numpy() if path.suffix == ".parquet" else
                 texts.str.strip().ne("").to_numpy())
    texts = texts.to_numpy(dtype=object)
    if bad.any():
        at = int(np.flatnonzero(bad)[0])
        raise EventsFileError(f"{path.name}: column '{column}', {_line(at)}: '{texts[at]}' "
                              "is not a finite number" + (
                                  " (times are numbers, in the --time-unit unit)"
                                  if column == "time" else
                                  " (leave the field empty for no value)"))


def _parquet_not_finite(path: Path, frame) -> None:
    """EventsFileError for the first NaN or infinite value of a Parquet file's floating
    columns (a null is no value)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    for column in table.column_names:
        values = table.column(column)
        if not pa.types.is_floating(values.type):
            continue
        odd = pc.and_(pc.is_valid(values), pc.invert(pc.is_finite(values)))
        odd = odd.to_numpy(zero_copy_only=False)
        if odd.any():
            at = int(np.flatnonzero(odd)[0])
            raise EventsFileError(f"{path.name}: column '{column}', {_line(at)}: "
                                  f"{values[at].as_py()} is not a finite number")


def read_events(path: Path, types: frozenset[str] | None = None, sort: bool = False,
                other_types: bool = False, numeric: dict | None = None):
    """The events of a CSV or Parquet file as a DataFrame in stream order, checked: as many
    fields on every line as the header has, a ``type`` and a finite numeric ``time`` on
    every row, times non-decreasing (or sorted, stably, with ``sort``), only the query's
    ``types`` (unless ``other_types``), no NaN, infinite or out-of-range (1e400) number in
    any numeric column, and numbers where the query computes (``numeric``:
    :func:`cep_core.expr.numeric_attributes`; text such as ``'2'`` there becomes the
    number). An empty field is no value. Each row's ``id`` is its row number unless the
    file has ids. EventsFileError names the file, the column and the line of the first bad
    value."""
    import pandas as pd

    name = path.name
    frame = _load_events(path)
    time = _checked_types_and_times(path, frame, types, other_types)
    _numbers_where_computed(path, frame, numeric or {})
    if path.suffix == ".parquet":
        _parquet_not_finite(path, frame)
    else:
        for column in frame.columns:
            if column not in ("type", "time") and pd.api.types.is_float_dtype(frame[column]):
                _not_finite(path, frame, column, frame[column])
    if "id" not in frame.columns:
        frame["id"] = range(len(frame))
    back = time.diff() < 0
    if back.any():
        if not sort:
            at = int(back.idxmax())
            raise EventsFileError(
                f"{name}: column 'time', {_line(at)}: {time[at]:g} is before the previous "
                f"event's {time[at - 1]:g}; sort the file by time, or pass --sort")
        frame = frame.sort_values("time", kind="stable").reset_index(drop=True)
    return frame


def _load_events(path: Path):
    """The rows of an events file with its ``type`` and ``time`` columns (at least one
    row); EventsFileError for a file that cannot be read as one."""
    import pandas as pd

    name = path.name
    parquet = path.suffix == ".parquet"
    if not parquet and path.is_file():
        _check_rows(path)
    try:
        frame = pd.read_parquet(path) if parquet else pd.read_csv(path)
    except pd.errors.EmptyDataError:
        raise EventsFileError(f"{name}: the file is empty; expected a header line (type,time,"
                              "...) and one event per line") from None
    except pd.errors.ParserError as exc:
        raise EventsFileError(f"{name}: not a CSV file ({str(exc).strip()})") from None
    except OSError as exc:
        raise EventsFileError(f"{name}: cannot be read ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise EventsFileError(f"{name}: cannot be read ({exc})") from None
    missing = [c for c in ("type", "time") if c not in frame.columns]
    if missing:
        raise EventsFileError(f"{name}: no column {', '.join(map(repr, missing))}; columns: "
                              f"{', '.join(map(str, frame.columns))}; expected at least type "
                              "and time")
    if frame.empty:
        raise EventsFileError(f"{name}: no events (a header line but no rows)")
    return frame.reset_index(drop=True)


def _checked_types_and_times(path: Path, frame, types: frozenset[str] | None,
                             other_types: bool):
    """Check every row's ``type`` and ``time`` (given; a finite number; a type of the query
    unless ``other_types``), set them in ``frame`` as text and numbers; the times."""
    import numpy as np
    import pandas as pd

    name, parquet = path.name, path.suffix == ".parquet"
    for column in ("type", "time"):
        blank = frame[column].isna()
        if blank.any():
            at = int(blank.idxmax())
            text = "" if parquet else _texts(path, frame, column)[at].strip()
            raise EventsFileError(f"{name}: column '{column}', {_line(at)}: " + (
                "no value" if not text else f"'{text}' is read as no value" +
                (", not a number" if column == "time" else "; name the type otherwise")))
    time = pd.to_numeric(frame["time"], errors="coerce")
    bad = time.isna().to_numpy()
    if bad.any():
        at = int(np.flatnonzero(bad)[0])
        raise EventsFileError(f"{name}: column 'time', {_line(at)}: '{frame['time'][at]}' is "
                              "not a number (times are numbers, in the --time-unit unit)")
    _not_finite(path, frame, "time", time)
    frame["time"] = time
    frame["type"] = frame["type"].astype(str)
    if types is not None and not other_types:
        unknown = ~frame["type"].isin(types)
        if unknown.any():
            at = int(unknown.idxmax())
            raise EventsFileError(
                f"{name}: column 'type', {_line(at)}: {frame['type'][at]!r} is not a type of "
                f"the query ({', '.join(sorted(types))}); pass --other-types to feed such "
                "events too (under strict contiguity they break a run)")
    return time


def _numbers_where_computed(path: Path, frame, numeric: dict) -> None:
    """Make the attributes the query computes with (``numeric``, by event type) numbers in
    ``frame``, in place; EventsFileError for text that is not one, or a non-finite one."""
    import numpy as np
    import pandas as pd

    for kind, attributes in numeric.items():
        rows = np.ones(len(frame), dtype=bool) if kind is None else \
            (frame["type"] == kind).to_numpy()
        for column, text in attributes.items():
            if column not in frame.columns or column in ("type", "time") or not rows.any():
                continue
            if pd.api.types.is_numeric_dtype(frame[column]):
                continue
            given = frame[column].notna().to_numpy() & rows
            values = pd.to_numeric(frame[column].where(given), errors="coerce")
            wrong = given & values.isna().to_numpy()
            if wrong.any():
                at = int(np.flatnonzero(wrong)[0])
                raise EventsFileError(
                    f"{path.name}: column '{column}', {_line(at)}: {frame[column][at]!r} is "
                    f"not a number, and the query computes with {text} (of "
                    f"{'every event' if kind is None else 'its ' + kind + ' events'})")
            _not_finite(path, frame, column, values, given)
            frame[column] = frame[column].astype(object)
            frame.loc[given, column] = values[given].astype(object)


@app.command()
def run(query_file: QueryArg, events_file: EventsArg, param: ParamOpt = None,
        table: TableOpt = None, time_unit: UnitOpt = "s",
        policy: Annotated[str, typer.Option(help="Selection policy.")] = "skip-till-any-match",
        runs: Annotated[str, typer.Option(help="every-event or one-per-partition.")
                        ] = "every-event",
        sort: Annotated[bool, typer.Option(
            "--sort", help="Sort the events by time (ties in file order).")] = False,
        other_types: Annotated[bool, typer.Option(
            "--other-types", help="Feed events of types the query does not name.")] = False,
        out: Annotated[Path | None, typer.Option(help="Write the outputs here (CSV).")] = None,
        ) -> None:
    """Run QUERY_FILE over EVENTS (CSV or Parquet: a header with type, time and any
    attributes, then one event per line in time order)."""
    from cep_core.errors import QueryError
    from cep_core.expr import numeric_attributes

    try:
        query = _compile(query_file, param, table, time_unit)
        plan = getattr(query, "plan", None)
        types = None if plan is None or plan.stream_type else plan.types
        numeric = numeric_attributes(query.query, _params(param, table))
        events = read_events(events_file, types, sort=sort, other_types=other_types,
                             numeric=numeric)
        session = query.start(policy, runs=runs)
        outputs = session.run(events, as_frame=True)
    except (QueryError, OSError, ValueError) as exc:
        raise _fail(exc) from None
    if out is None:
        outputs.to_csv(sys.stdout, index=False)
    else:
        outputs.to_csv(out, index=False)
    print(f"{len(outputs)} outputs ({session.engine_name} engine); counters "
          f"{session.counters.as_dict()}", file=sys.stderr)


if __name__ == "__main__":
    app()
