"""Work per value of a column (Session.feed(.., work_by=..), cep_core.counters.WorkBy): one
batch fed with work_by gives the outputs and, per value, the counters of feeding each
value's events as a batch of its own; on the whole-batch scan of the keyed engine, on its
waves, and on the reference engine. And lookup tables given as DataFrames (row, column),
the form the meter tier hands λ in."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import cep_core
from cep_core.counters import WorkBy
from cep_core.engine import keyed
from cep_core.errors import QueryError

METER = """SEQ (M a+[])
WHERE SAME[h] AND a[i].x > λ[a[i].h, a[i].time] AND a[i].time + 1 = a[i+1].time
AND LENGTH(a+[]) >= 3
WITHIN 30
RETURN U(a[3].time, a[3].h, a[3].x)"""

NEXT = """SEQ (M a, M+ b[])
WHERE SAME[h] AND b[i].x > a.x AND LENGTH(b+[]) >= 2
WITHIN 10
RETURN U(a.time, a.h, b[last].x)"""


def stream(seed: int, households: int = 40, times: int = 12) -> tuple[pd.DataFrame, pd.Series]:
    rng = np.random.default_rng(seed)
    t = np.repeat(np.arange(1, times + 1), households)
    h = np.tile(np.arange(100, 100 + households), times)
    frame = pd.DataFrame({"type": "M", "time": t, "h": h, "x": rng.normal(size=t.size)})
    keep = rng.random(t.size) > 0.1  # some readings missing: runs break
    frame = frame[keep].reset_index(drop=True)
    lam = pd.Series(rng.normal(-0.3, 0.5, t.size),
                    index=pd.MultiIndex.from_arrays([h, t], names=["h", "time"]))
    return frame, lam


def by_hand(query, frame: pd.DataFrame, policy: str, engine: str | None = None):
    """Each time's events as a batch of its own: outputs and counters per time."""
    s = query.start(policy, runs="one-per-partition", **({"engine": engine} if engine else {}))
    rows, outs = [], []
    for t, part in frame.groupby("time", sort=False):
        before = s.counters.as_dict()
        outs.append(s.feed(part, as_frame=True))
        after = s.counters.as_dict()
        rows.append([t, *(after[f] - before[f] for f in WorkBy.FIELDS)])
    return pd.concat(outs, ignore_index=True), np.array(rows)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("text,policy,engine", [
    (METER, "strict-contiguity", None),          # the keyed engine's whole-batch scan
    (NEXT, "skip-till-next-match", None),        # the keyed engine's waves
    (METER, "strict-contiguity", "reference"),   # an engine that takes events one by one
])
def test_one_batch_gives_the_work_of_one_batch_per_value(seed, text, policy, engine):
    frame, lam = stream(seed)
    query = cep_core.compile(text, params={"λ": lam})
    expected_out, expected = by_hand(query, frame, policy, engine)
    s = query.start(policy, runs="one-per-partition", **({"engine": engine} if engine else {}))
    out = s.feed(frame, as_frame=True, work_by="time")
    work = s.work
    assert work.column == "time" and work.values.tolist() == expected[:, 0].tolist()
    got = np.stack([work.values, *(getattr(work, f) for f in WorkBy.FIELDS)], axis=1)
    np.testing.assert_array_equal(got, expected)
    assert out.astype({"type": str}).to_dict("records") == \
        expected_out.astype({"type": str}).to_dict("records")
    assert work.at(np.array([0, 1, 99]), "events").tolist() == \
        [0, int(expected[0, 1]) if expected[0, 0] == 1 else 0, 0]


def test_the_scan_takes_the_batch_and_a_later_batch_the_waves(monkeypatch):
    """The first batch of a fresh session is taken by the whole-batch scan; a second one,
    whose keys enter with live runs, by the waves; both tally the same as per-time feeds."""
    taken = []

    def spy(*args, _scan=keyed.scan_batch):
        taken.append(_scan(*args))
        return taken[-1]

    monkeypatch.setattr(keyed, "scan_batch", spy)
    frame, lam = stream(3)
    query = cep_core.compile(METER, params={"λ": lam})
    _, expected = by_hand(query, frame, "strict-contiguity")
    s = query.start("strict-contiguity", runs="one-per-partition")
    half = frame["time"] <= 6
    s.feed(frame[half], work_by="time")
    first = s.work
    s.feed(frame[~half], work_by="time")
    second = s.work
    got = np.concatenate([np.stack([w.values, *(getattr(w, f) for f in WorkBy.FIELDS)],
                                   axis=1) for w in (first, second)])
    np.testing.assert_array_equal(got, expected)
    assert taken[-2:] == [True, False]


def test_bad_work_by_column_names_it():
    frame, lam = stream(0)
    s = cep_core.compile(METER, params={"λ": lam}).start("strict-contiguity",
                                                         runs="one-per-partition")
    with pytest.raises(QueryError, match="work_by='minute'"):
        s.feed(frame, work_by="minute")
    assert s.feed(frame.iloc[:0], work_by="time") == [] and s.work.values.size == 0


@pytest.mark.parametrize("engine", [None, "reference"])
def test_a_dataframe_table_answers_as_the_series_of_its_cells(engine):
    """λ[h, time] from a DataFrame (rows h, columns time) gives the matches of the same
    table as a MultiIndex Series; a key it lacks is an error naming it."""
    frame, lam = stream(5)
    grid = lam.unstack("time")
    outs = []
    for table in (lam, grid):
        s = cep_core.compile(METER, params={"λ": table}).start(
            "strict-contiguity", runs="one-per-partition", **({"engine": engine} if engine else {}))
        outs.append(s.feed(frame) + s.flush())
    assert outs[0] == outs[1] and len(outs[0]) > 0
    s = cep_core.compile(METER, params={"λ": grid.iloc[:-1]}).start(
        "strict-contiguity", runs="one-per-partition", **({"engine": engine} if engine else {}))
    with pytest.raises(QueryError, match=r"λ\[139, "):
        s.feed(frame)
