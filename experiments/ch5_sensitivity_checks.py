"""The statements of the dissertation's §5.6.3 (Figures 5.13-5.15) checked on the rows of
``experiments/ch5_sensitivity.py``.

Each check gives the statement with drsim's numbers and whether it holds. Readings of
the text: "grows significantly" is a rise of at least 20 %; "stable", "comparable" and
"close to the optimal" are within 10 % of the reference; an optimum holds when the
value the text names is within 2 % of the best of the sweep and some other value is at
least 5 % above it (a flat curve has no optimum).

>>> rows = [{"figure": "5.13b", "value": str(c), "strategy": s,
...          "p50": 200 / c if s == "PFetch" else 10 + 100 / c}
...         for c in (5, 80) for s in ("PFetch", "LzEval", "Hybrid")]
>>> [ok for _, ok in cache_size(rows)]
[True, True]
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["check", "noise", "cache_size", "latency", "omega", "lookahead", "lazy_states"]

Statements = list[tuple[str, bool]]


def _table(rows: list[dict], figure: str) -> dict[tuple[str, str], dict[str, float]]:
    """(value, strategy) -> the row's latencies as floats, for ``figure``."""
    return {(str(r["value"]), r["strategy"]): {k: float(v) for k, v in r.items()
                                               if k.startswith("p") and k[1:].isdigit()}
            for r in rows if r["figure"] == figure}


def _values(t: dict, strategy: str) -> list[str]:
    return [v for v, s in t if s == strategy]


def _curve(t: dict, strategy: str, p: str = "p50") -> list[float]:
    return [t[(v, strategy)][p] for v in _values(t, strategy)]


def _ratio(a: float, b: float) -> float:
    return a / b if b > 0 else float("inf")


def noise(rows: list[dict]) -> Statements:
    """Figure 5.13a."""
    t = _table(rows, "5.13a")
    lo, hi = "0.0", "0.9"
    pf, lz, hy = (lambda v, p="p50", s=s: t[(v, s)][p] for s in ("PFetch", "LzEval",
                                                                   "Hybrid"))
    out = [(f"5.13a: PFetch's median grows with the noise (p50 {pf(lo):.1f} µs without, "
            f"{pf(hi):.1f} at 90 %)", pf(hi) >= 1.2 * pf(lo))]
    high = [v for v in _values(t, "PFetch") if float(v) > 0.5]
    out.append(("5.13a: above 50 % noise PFetch's median exceeds LzEval's p75 and "
                "Hybrid's p95 (" + "; ".join(f"{float(v):.0%}: {pf(v):.1f} against "
                                             f"{lz(v, 'p75'):.1f}, {hy(v, 'p95'):.1f} µs"
                                             for v in high) + ")",
                all(pf(v) > lz(v, "p75") and pf(v) > hy(v, "p95") for v in high)))
    spread = {p: _ratio(max(_curve(t, "LzEval", p)), min(_curve(t, "LzEval", p)))
              for p in ("p5", "p25", "p50")}
    out.append(("5.13a: LzEval's p5, p25 and p50 stable across noise levels (max/min "
                + ", ".join(f"{p} {r:.2f}" for p, r in spread.items()) + ")",
                all(r <= 1.1 for r in spread.values())))
    out.append((f"5.13a: LzEval's p95 grows with the noise ({lz(lo, 'p95'):.1f} µs "
                f"without, {lz(hi, 'p95'):.1f} at 90 %)", lz(hi, "p95") > lz(lo, "p95")))
    levels = _values(t, "Hybrid")
    below = [v for v in levels if hy(v) <= min(pf(v), lz(v))]
    out.append((f"5.13a: Hybrid at or below PFetch and LzEval at p50 at every noise level "
                f"({len(below)} of {len(levels)})", len(below) == len(levels)))
    out.append((f"5.13a: at 90 % noise Hybrid's p75 above LzEval's ({hy(hi, 'p75'):.1f} "
                f"against {lz(hi, 'p75'):.1f} µs)", hy(hi, "p75") > lz(hi, "p75")))
    return out


def _sensitivity(t: dict, first: str, last: str) -> dict[str, float]:
    """Per strategy of ours, p50 at ``first`` over p50 at ``last`` of the sweep."""
    return {s: _ratio(t[(first, s)]["p50"], t[(last, s)]["p50"])
            for s in ("PFetch", "LzEval", "Hybrid") if (first, s) in t}


def cache_size(rows: list[dict]) -> Statements:
    """Figure 5.13b."""
    t = _table(rows, "5.13b")
    sizes = sorted({v for v, _ in t}, key=float)
    small, large = sizes[0], sizes[-1]
    gain = _sensitivity(t, small, large)
    text = ", ".join(f"{s} {r:.2f}×" for s, r in gain.items())
    return [(f"5.13b: a larger cache lowers every strategy's median (p50 at {small} over "
             f"at {large} elements: {text})", all(r > 1 for r in gain.values())),
            (f"5.13b: PFetch the most sensitive to the cache size ({text})",
             max(gain, key=gain.get) == "PFetch")]


def latency(rows: list[dict]) -> Statements:
    """Figure 5.13c."""
    t = _table(rows, "5.13c")
    ranges = sorted({v for v, _ in t}, key=lambda v: float(v.split("-")[0]))
    strategies = sorted({s for _, s in t})
    rising = {s: all(b >= a for a, b in zip(_curve(t, s), _curve(t, s)[1:], strict=False))
              for s in strategies}
    growth = _sensitivity(t, ranges[-1], ranges[0])
    text = ", ".join(f"{s} {r:.0f}×" for s, r in growth.items())
    return [("5.13c: every strategy's median rises with the remote latency ("
             + ", ".join(f"{s}: " + "/".join(f"{x:.0f}" for x in _curve(t, s))
                         for s in strategies) + " µs over " + ", ".join(ranges) + " µs)",
             all(rising.values())),
            (f"5.13c: PFetch the most sensitive (p50 at {ranges[-1]} over at {ranges[0]} "
             f"µs: {text})", max(growth, key=growth.get) == "PFetch")]


def _optimum(t: dict, strategy: str, p: str) -> tuple[str, float]:
    best = min(_values(t, strategy), key=lambda v: t[(v, strategy)][p])
    return best, t[(best, strategy)][p]


def _is_optimum(curve: dict, named) -> bool:
    """Whether ``curve[named]`` is its optimum (module doc)."""
    at = curve[named]
    return at <= 1.02 * min(curve.values()) and max(curve.values()) >= 1.05 * at


def omega(rows: list[dict]) -> Statements:
    """Figure 5.14a-b (Hybrid)."""
    out = []
    for fig, name, named, near in (("5.14a", "ω_fetch", "0.7", ("0.5", "0.7", "0.9")),
                                   ("5.14b", "ω_cache", "0.5", ("0.3", "0.5", "0.7"))):
        t = _table(rows, fig)
        for p in ("p75", "p95"):
            best, low = _optimum(t, "Hybrid", p)
            curve = {v: t[(v, "Hybrid")][p] for v in _values(t, "Hybrid")}
            out.append((f"{fig}: {name} = {named} best at {p} ({curve[named]:.1f} µs; "
                        f"the lowest {low:.1f} at {best}, the highest "
                        f"{max(curve.values()):.1f})", _is_optimum(curve, named)))
        _, low = _optimum(t, "Hybrid", "p50")
        meds = {v: t[(v, "Hybrid")]["p50"] for v in near if (v, "Hybrid") in t}
        out.append((f"{fig}: medians for {name} in [{near[0]}, {near[-1]}] within 10 % "
                    f"of the best ({', '.join(f'{v}: {m:.1f}' for v, m in meds.items())}; "
                    f"best {low:.1f} µs)", all(m <= 1.1 * low for m in meds.values())))
    return out


def _fixed(t: dict, strategy: str) -> dict[int, float]:
    return {int(v): t[(v, strategy)]["p50"] for v in _values(t, strategy) if v.isdigit()}


def lookahead(rows: list[dict]) -> Statements:
    """Figure 5.15a (PFetch)."""
    t = _table(rows, "5.15a")
    fixed = _fixed(t, "PFetch")
    best = min(fixed, key=fixed.get)
    learned = t[("learned", "PFetch")]["p50"]
    curve = ", ".join(f"{k}: {v:.1f}" for k, v in fixed.items())
    return [(f"5.15a: prefetching 3 categories ahead is best (p50 by categories ahead "
             f"{curve} µs)", _is_optimum(fixed, 3)),
            ("5.15a: prefetching fewer than 2 categories ahead hides only part of the "
             "latency (p50 at 0 and 1 above at 3)", min(fixed[0], fixed[1]) > fixed[3]),
            (f"5.15a: the learned lookahead (Alg. 3) within 10 % of the best fixed "
             f"({learned:.1f} against {fixed[best]:.1f} µs at {best})",
             learned <= 1.1 * fixed[best])]


def lazy_states(rows: list[dict]) -> Statements:
    """Figure 5.15b (LzEval)."""
    t = _table(rows, "5.15b")
    fixed = _fixed(t, "LzEval")
    best = min(fixed, key=fixed.get)
    learned = t[("learned", "LzEval")]["p50"]
    curve = ", ".join(f"{k}: {v:.1f}" for k, v in fixed.items())
    mid = [fixed[k] for k in (3, 4, 5, 6) if k in fixed]
    return [(f"5.15b: postponing over 4 succeeding categories is best (p50 by categories "
             f"{curve} µs)", _is_optimum(fixed, 4)),
            ("5.15b: 3 to 6 categories comparable (within 10 % of the best)",
             all(v <= 1.1 * fixed[best] for v in mid)),
            ("5.15b: 1 or 2 categories hide little (p50 above the best by over 10 %)",
             min(fixed[1], fixed[2]) > 1.1 * fixed[best]),
            (f"5.15b: the learned succ(j) (Alg. 4) within 10 % of the best fixed "
             f"({learned:.1f} against {fixed[best]:.1f} µs at {best})",
             learned <= 1.1 * fixed[best])]


CHECKS: dict[str, Callable[[list[dict]], Statements]] = {
    "5.13a": noise, "5.13b": cache_size, "5.13c": latency, "5.14a": omega,
    "5.15a": lookahead, "5.15b": lazy_states}


def check(rows: list[dict]) -> Statements:
    """The statements of every figure with rows (5.14a's check reads both of 5.14's
    sweeps, and runs when both are there)."""
    figures = {r["figure"] for r in rows}
    out = []
    for fig, fn in CHECKS.items():
        need = {"5.14a", "5.14b"} if fig == "5.14a" else {fig}
        if need <= figures:
            out.extend(fn(rows))
    return out
