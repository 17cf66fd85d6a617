"""``python -m cep_core explain|run``: try a query on your own data.

- ``explain QUERY_FILE``: the compiled plan (automaton, predicates, window, engine).
- ``run QUERY_FILE EVENTS.{csv,parquet}``: the query's output events as CSV on stdout (or
  ``--out FILE``), and the cost counters on stderr.

Parameters: ``--param name=value`` (numbers or text), tables ``--table name=FILE.csv``
(the last column is the value, the others the key, in order of the lookup's arguments).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Explain or run a cep_core query.", pretty_exceptions_enable=False)

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
def explain(query_file: Path, param: ParamOpt = None, table: TableOpt = None,
            time_unit: UnitOpt = "s") -> None:
    """Print the compiled plan of QUERY_FILE."""
    from cep_core.errors import QueryError

    try:
        print(_compile(query_file, param, table, time_unit).explain())
    except (QueryError, OSError, ValueError) as exc:
        raise _fail(exc) from None


@app.command()
def run(query_file: Path, events_file: Path, param: ParamOpt = None, table: TableOpt = None,
        time_unit: UnitOpt = "s",
        policy: Annotated[str, typer.Option(help="Selection policy.")] = "skip-till-any-match",
        runs: Annotated[str, typer.Option(help="every-event or one-per-partition.")
                        ] = "every-event",
        out: Annotated[Path | None, typer.Option(help="Write the outputs here (CSV).")] = None,
        ) -> None:
    """Run QUERY_FILE over EVENTS (CSV or Parquet with at least type and time)."""
    import pandas as pd

    from cep_core.errors import QueryError

    try:
        query = _compile(query_file, param, table, time_unit)
        if events_file.suffix == ".parquet":
            events = pd.read_parquet(events_file)
        else:
            events = pd.read_csv(events_file)
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
