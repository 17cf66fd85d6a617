"""The references of ``scripts/bench_cep.py --only meter``: the per-event loop and the bare
numpy pass find the households Listing 6.1 flags, the same as cep_core's keyed engine."""

from __future__ import annotations

import pytest

import cep_core
from experiments import bench_cep as bench


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_loop_numpy_and_engine_flag_the_same_households(seed):
    t_start, t_end, m = 1110, 1230, 3
    frame, lam = bench.make_meter_stream(400, 24, t_start, seed)
    rows = list(zip(frame["time"], frame["houseID"], frame["groupID"], frame["accLoad"],
                    strict=True))
    loop = bench.flagged_loop(rows, lam.to_dict(), t_start, t_end, m)
    numpy = bench.flagged_numpy(*(frame[c].to_numpy() for c in ("time", "houseID", "accLoad")),
                                lam.unstack("time").to_numpy(), t_start, t_end, m)
    query = cep_core.compile(bench.LISTING_61, params={"t_start": t_start, "t_end": t_end,
                                                       "m_user": m, "λ": lam}, time_unit="min")
    engine = set(query.run(frame, output="frame", policy="strict-contiguity",
                           runs="one-per-partition")["houseID"].tolist())
    assert 0 < len(loop) < 400
    assert loop == numpy == engine
