"""``python -m cep_core explain|run``: try a query on your own data.

- ``explain QUERY_FILE``: the compiled plan (automaton, predicates, window, engine).
- ``run QUERY_FILE EVENTS.{csv,parquet}``: the query's output events as CSV on stdout (or
  ``--out FILE``), and the cost counters on stderr. The events file has a header, a column
  ``type`` (the event type), a numeric column ``time`` in non-decreasing order (``--sort``
  sorts it, ties in file order), and any attributes; an event's ``id`` is its row number
  (from 0) unless the file has an ``id`` column. Types the query does not name are an error
  unless ``--other-types`` (they matter under strict contiguity, where they break a run).
  Every bad value is reported on one line with the file, the column and the line.

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


def read_events(path: Path, types: frozenset[str] | None = None, sort: bool = False,
                other_types: bool = False):
    """The events of a CSV or Parquet file as a DataFrame in stream order, checked: a
    ``type`` and a numeric ``time`` on every row, times non-decreasing (or sorted, stably,
    with ``sort``), only the query's ``types`` (unless ``other_types``). Each row's ``id`` is
    its row number unless the file has ids. EventsFileError names the file, the column and
    the line of the first bad value."""
    import numpy as np
    import pandas as pd

    name = path.name
    try:
        if path.suffix == ".parquet":
            frame = pd.read_parquet(path)
        else:
            frame = pd.read_csv(path)
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
    frame = frame.reset_index(drop=True)
    for column in ("type", "time"):
        blank = frame[column].isna()
        if blank.any():
            raise EventsFileError(f"{name}: column '{column}', {_line(int(blank.idxmax()))}: "
                                  "no value")
    time = pd.to_numeric(frame["time"], errors="coerce")
    bad = ~np.isfinite(time.to_numpy(dtype=float))
    if bad.any():
        bad = pd.Series(bad)
        at = int(bad.idxmax())
        raise EventsFileError(f"{name}: column 'time', {_line(at)}: '{frame['time'][at]}' is "
                              "not a number (times are numbers, in the --time-unit unit)")
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

    try:
        query = _compile(query_file, param, table, time_unit)
        plan = getattr(query, "plan", None)
        types = None if plan is None or plan.stream_type else plan.types
        events = read_events(events_file, types, sort=sort, other_types=other_types)
        outputs = query.run(events, policy=policy, runs=runs, output="frame")
    except (QueryError, OSError, ValueError) as exc:
        raise _fail(exc) from None
    if out is None:
        outputs.to_csv(sys.stdout, index=False)
    else:
        outputs.to_csv(out, index=False)
    print(f"{len(outputs)} outputs ({query.engine} engine); counters "
          f"{query.counters.as_dict()}", file=sys.stderr)


if __name__ == "__main__":
    app()
