"""The features of hybrid load shedding's cost model (dissertation §4.3.1-4.3.2): what
a partial match or an event is classified by, the attributes its state's (or type's)
predicates read and the outcomes of the predicates on one variable (each a 1.0 or 0.0).
Shared by the tracing run that fits the model (:mod:`cep_core.shedding.fitting`) and the
shedding engines that classify with it (:mod:`cep_core.shedding.cost_model`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

KEEP = (-1, -1)  # the label of an event that completes or may block a match

__all__ = ["KEEP", "features_of", "event_features", "local_tests", "test_values"]


def features_of(values: Iterable[Any]) -> tuple[float, ...]:
    """Numeric features of attribute values (numbers as floats, anything else by a
    stable code).

    >>> features_of([3, 2.5, True])
    (3.0, 2.5, 1.0)
    """
    out = []
    for v in values:
        try:
            out.append(float(v))
        except (TypeError, ValueError):
            out.append(float(sum(ord(ch) * 31 ** i for i, ch in enumerate(str(v))) % 1e9))
    return tuple(out)


def event_features(event: dict, attrs: Iterable[str]) -> tuple[float, ...]:
    """Features of an event: its ``attrs`` (a missing one as 0).

    >>> event_features({"type": "B", "ID": 3, "V": 7}, ["V", "ID"])
    (7.0, 3.0)
    """
    return features_of(event.get(a, 0.0) for a in attrs)


def local_tests(plan: Any) -> dict[str, list[Any]]:
    """Per event type, the predicates that read only the new event of that type: its
    attributes (``v.attr`` or ``v[i].attr``), parameters and lookups, no other variable,
    no ``LENGTH`` and no other index. Whether an event passes them is a feature of the
    input side (the ψ of Eq. 4.9: which value predicates an event can satisfy), e.g.
    ``a[i].accLoad > λ[a[i].houseID, a[i].time]`` of Listing 6.1."""
    from cep_core.expr import walk
    from cep_core.lang import ast

    types = {p.var: p.type for p in plan.positions}
    out: dict[str, list[Any]] = {}
    for pred in plan.preds:
        if len(pred.vars) != 1 or pred.node is None:
            continue
        (var,) = pred.vars
        nodes = list(walk(pred.node))
        if var not in types or any(isinstance(n, ast.Length | ast.Aggregate) for n in nodes):
            continue
        if all(n.var == var and (n.index is None or n.index.kind == "i" and
                                 n.index.offset == 0)
               for n in nodes if isinstance(n, ast.Attr)):
            out.setdefault(types[var], []).append(pred)
    return out


def test_values(tests: list[Any], var_multi: dict[str, bool], event: dict
                ) -> tuple[float, ...]:
    """Whether ``event`` passes each of ``tests`` (1.0 or 0.0; a failing lookup is 0)."""
    out = []
    for pred in tests:
        (var,) = pred.vars
        try:
            ok = pred.test({var: (event,) if var_multi[var] else event})
        except Exception:  # noqa: BLE001 (a missing key of a lookup: not passed)
            ok = False
        out.append(1.0 if ok else 0.0)
    return tuple(out)

