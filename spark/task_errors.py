"""An error raised in a Spark task, raised again in the driver as itself.

Spark reports a Python task's failure as a Java exception whose message holds the
worker's traceback as text: hundreds of lines, whatever the error. A task function wrapped
by :func:`carried` puts its exception, pickled, into that message; :func:`task_errors`
finds it in what the driver caught and raises the original instead, so that the Spark
backend raises what the serial backend raises (a scenario's bad query as its one line).
"""

from __future__ import annotations

import base64
import inspect
import pickle
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import wraps
from typing import Any

__all__ = ["TaskError", "carried", "carry", "raised_in_task", "task_errors"]

MARK = "drsim-task-error:"
_PACKED = re.compile(re.escape(MARK) + r"([A-Za-z0-9+/=]+)")


class TaskError(RuntimeError):
    """The error of a task, pickled into its message (:func:`carry`)."""


def carry(exc: BaseException) -> TaskError:
    """A :class:`TaskError` carrying ``exc`` (as "Type: message" when it does not pickle)."""
    try:
        data = pickle.dumps(exc)
        pickle.loads(data)
    except Exception:  # noqa: BLE001 - any error must reach the driver
        data = pickle.dumps(RuntimeError(f"{type(exc).__name__}: {exc}"))
    return TaskError(MARK + base64.b64encode(data).decode("ascii"))


def carried(function: Callable) -> Callable:
    """``function`` (a plain or generator function run in a task) with the exception it
    raises carried to the driver (:func:`carry`)."""
    if inspect.isgeneratorfunction(function):
        @wraps(function)
        def generator(*args: Any, **kwargs: Any) -> Iterator:
            try:
                yield from function(*args, **kwargs)
            except Exception as exc:
                raise carry(exc) from exc
        return generator

    @wraps(function)
    def plain(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except Exception as exc:
            raise carry(exc) from exc
    return plain


def raised_in_task(exc: BaseException) -> BaseException | None:
    """The error a task carried into ``exc`` (what Spark raised in the driver), or None."""
    found = _PACKED.search(str(exc))
    if found is None:
        return None
    try:
        original = pickle.loads(base64.b64decode(found.group(1)))
    except Exception:  # noqa: BLE001 - then Spark's own error is reported
        return None
    return original if isinstance(original, BaseException) else None


@contextmanager
def task_errors() -> Iterator[None]:
    """Raise the error a failed task carried instead of Spark's report of it."""
    try:
        yield
    except Exception as exc:
        original = raised_in_task(exc)
        if original is None:
            raise
        raise original from None
