"""Hybrid's gains over the baselines in the Ch. 5 reproduction (§5.6.2) and the ablation
of the ``paper`` set-up (:mod:`experiments.ch5_setups`).

The *gain* over a baseline at a percentile is the baseline's latency over Hybrid's; the
gain over the *best* baseline at p50 is the lowest of BL1's, BL2's and BL3's medians
over Hybrid's (§5.6.2: "Hybrid reduces the median latency by at least 26×"). BL1 has no
cache policy and is compared in both cache configurations.

The ablation (``scripts/reproduce_ch5.py --ablation``, quick form) runs a few
configurations under the literal set-up, the literal one with each change of
:data:`~experiments.ch5_setups.CHANGES` alone, the paper set-up without each change, and
the paper set-up; a change's *share* of the gain is ``log(G_paper / G_without) /
log(G_paper / G_literal)`` (the part of the paper set-up's gain, on a log scale, lost
when it alone is left out).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import numpy as np

from experiments.ch5_setups import CHANGES, LITERAL, PAPER, with_changes
from experiments.results_csv import write_rows

__all__ = ["groups", "gains", "summary_line", "print_paper", "ablation", "ABLATION_CONFIGS"]

BASELINES = ("BL1", "BL2", "BL3")
#: the configurations the ablation runs (dataset, query, selection, cache): one with
#: matches under both set-ups' data in a short stream (Q5 under the literal data finds
#: about one match per 2,000 events)
ABLATION_CONFIGS = [("DS3", "Q6", "non-greedy", "cost")]


def groups(rows: list[dict]) -> dict[tuple, dict[str, dict]]:
    """Rows by (dataset, query, selection, cache), then strategy (BL1 in both caches;
    a configuration without Hybrid left out)."""
    out: dict[tuple, dict[str, dict]] = {}
    for r in rows:
        caches = ("cost", "lru") if r["strategy"] == "BL1" else (r["cache"],)
        for cache in caches:
            out.setdefault((r["dataset"], r["query"], r["selection"], cache),
                           {})[r["strategy"]] = r
    return {k: g for k, g in out.items() if "Hybrid" in g}


def gains(g: dict[str, dict]) -> dict[str, float]:
    """Gains of one configuration: over each baseline at p50 and p95 (``BL1_p50``, ..)
    and over the best baseline at p50 (``best``).

    >>> row = lambda p50, p95: {"p50": p50, "p95": p95}
    >>> gains({"BL1": row(300, 900), "BL2": row(100, 400), "BL3": row(200, 500),
    ...        "Hybrid": row(10, 80)})["best"]
    10.0
    """
    h = g["Hybrid"]
    out = {f"{b}_{p}": float(g[b][p]) / max(float(h[p]), 1e-9)
           for b in BASELINES for p in ("p50", "p95")}
    out["best"] = min(float(g[b]["p50"]) for b in BASELINES) / max(float(h["p50"]), 1e-9)
    return out


def summary_line(rows: list[dict], queries: tuple[str, ...] = ("Q5", "Q6"),
                 label: str = "paper setup") -> str:
    """``<label>: Hybrid below every baseline at p50 in N of M; gain over the best
    baseline at p50: max Gx, median Mx`` over the configurations of ``queries``."""
    best = [gains(g)["best"] for k, g in sorted(groups(rows).items()) if k[1] in queries]
    below = sum(b > 1 for b in best)
    return (f"{label}: Hybrid below every baseline at p50 in {below} of {len(best)}; "
            f"gain over the best baseline at p50: max {max(best):.1f}x, "
            f"median {float(np.median(best)):.1f}x")


def _table(rows: list[dict]) -> list[str]:
    head = ("| configuration | matches | BL1 | BL2 | BL3 | PFetch | LzEval | Hybrid | "
            "gain p50 BL1/BL2/BL3 | gain p95 BL1/BL2/BL3 | utilisation BL1/BL2/BL3/Hybrid |")
    out = [head, "|" + "---|" * 11]
    for (d, q, s, c), g in sorted(groups(rows).items()):
        x = gains(g)
        lat = " | ".join(f"{float(g[n]['p50']):,.1f}" for n in
                         ("BL1", "BL2", "BL3", "PFetch", "LzEval", "Hybrid"))
        util = "/".join(f"{float(g[n]['utilisation']):.2g}" for n in (*BASELINES, "Hybrid"))
        out.append(f"| {q} over {d}, {s}, {c} | {int(g['Hybrid']['matches'])} | {lat} | "
                   + "/".join(f"{x[f'{b}_p50']:.1f}" for b in BASELINES) + " | "
                   + "/".join(f"{x[f'{b}_p95']:.1f}" for b in BASELINES) + f" | {util} |")
    return out


def print_paper(rows: list[dict]) -> None:
    """The paper set-up's table (median latency [µs] per strategy, gains, utilisation),
    the listing's Q5 (``Q5L``) line if it ran, and last the summary over the 16
    configurations of Q5 and Q6."""
    for line in _table(rows):
        print(line)
    if any(r["query"] == "Q5L" for r in rows):
        print(summary_line(rows, ("Q5L",), "listing's Q5 (REMOTE[d.v1, d.v2])"))
    print(summary_line(rows))


def ablation(run: Callable[..., list[dict]], path: Path,
             configs: list[tuple] | None = None) -> list[dict]:
    """Run the ablation (module doc) with ``run(setup, configs=..)`` (the rows of a
    set-up's configurations); print its table and write it to ``path``."""
    configs = configs or ABLATION_CONFIGS
    setups = [("literal", LITERAL)]
    setups += [(f"literal + {n}", with_changes(LITERAL, [n], f"literal+{n}"))
               for n in CHANGES]
    setups += [(f"paper - {n}", with_changes(LITERAL, [m for m in CHANGES if m != n],
                                             f"paper-{n}")) for n in CHANGES]
    setups.append(("paper", PAPER))
    gain = {}
    for label, setup in setups:
        per = groups(run(setup, configs=configs))
        gain[label] = {k: gains(per[k])["best"] for k in configs}
        print(f"  {label}: " + ", ".join(f"{k[1]}/{k[0]} {k[2]} {gain[label][k]:.2f}x"
                                         for k in configs), flush=True)
    out = []
    for label, _ in setups:
        row = {"setup": label}
        for k in configs:
            row[f"{k[1]}_{k[0]}_{k[2]}"] = gain[label][k]
            if label.startswith("paper - "):
                total = math.log(gain["paper"][k] / gain["literal"][k])
                lost = math.log(gain["paper"][k] / gain[label][k])
                row[f"share_{k[1]}"] = lost / total if total else float("nan")
        out.append(row)
    columns = ["setup", *(f"{k[1]}_{k[0]}_{k[2]}" for k in configs),
               *(f"share_{k[1]}" for k in configs)]
    write_rows(out, path, columns)
    print("| set-up | " + " | ".join(f"gain {k[1]}/{k[0]} {k[2]}" for k in configs)
          + " | " + " | ".join(f"share of the gain, {k[1]}" for k in configs) + " |")
    print("|" + "---|" * (1 + 2 * len(configs)))
    for r in out:
        shares = [f"{r[f'share_{k[1]}']:.0%}" if f"share_{k[1]}" in r else ""
                  for k in configs]
        print(f"| {r['setup']} | " + " | ".join(f"{r[c]:.1f}x" for c in columns[1:1 + len(
            configs)]) + " | " + " | ".join(shares) + " |")
    return out
