"""The sensitivity analysis of Ch. 5 (experiments/ch5_sensitivity.py): the tuned engine's
knobs do what they say, and the sweeps are wired to them, on tiny streams."""

from __future__ import annotations

import csv
from collections import Counter

import pytest

import cep_core
from cep_core.remote import RemoteConfig, RemoteSource
from cep_core.remote.utility import UtilityModel
from experiments import ch5_data, ch5_sensitivity
from experiments.ch5_sensitivity_checks import check
from experiments.ch5_setups import LITERAL
from experiments.ch5_tuned import NoisyUtility, Tuning, tuned_session

ANY = "skip-till-any-match"
DOMAIN = tuple(("REMOTE", (x,)) for x in range(1, ch5_data.KEYS + 1))


def _compile(text: str, window: int):
    source = RemoteSource(ch5_data.remote_table(), latency=LITERAL.latency, seed=7)
    return cep_core.compile(text.format(window=window / LITERAL.rate), remote={"REMOTE": source})


def _run(session, n: int = 600, dataset: str = "DS3"):
    session.feed(ch5_data.stream(dataset, n, LITERAL.rate, seed=3))
    session.flush()
    return session


@pytest.mark.parametrize("strategy", ["PFetch", "LzEval", "Hybrid"])
def test_an_untuned_engine_runs_as_the_remote_engine(strategy):
    q6 = ch5_data.QUERIES["Q6"]
    cfg = RemoteConfig(strategy, unit_cost=0.14, capacity=10)
    plain = _run(_compile(q6, 150).start(ANY, output="matches", remote=cfg))
    tuned = _run(tuned_session(_compile(q6, 150), ANY, cfg, Tuning()))
    assert plain.remote_report()["matches"] > 0
    assert tuned.engine.match_latencies == plain.engine.match_latencies
    assert tuned.remote_report()["fetch"] == plain.remote_report()["fetch"]


def test_a_fixed_lookahead_prefetches_that_many_categories_ahead():
    cq = _compile(ch5_sensitivity.QUERIES["Q5-end"], 2000)
    cfg = RemoteConfig("PFetch", unit_cost=0.1, capacity=10)
    for k, state in ((0, 6), (3, 3), (6, 0), (9, 0)):
        s = _run(tuned_session(cq, ANY, cfg, Tuning(lookahead=k)), n=300)
        assert set(s.engine.stream_state.trigger) == {state}
    learned = _run(tuned_session(cq, ANY, cfg, Tuning()), n=300)
    assert set(learned.engine.stream_state.trigger) == {6}  # no misses counted yet


def test_fixed_lazy_states_postpone_over_that_many_states_never_the_final_one():
    cq = _compile(ch5_sensitivity.QUERIES["Q5-start"], 2000)
    cfg = RemoteConfig("LzEval", unit_cost=0.1, capacity=10)
    for k, reach in ((1, {1}), (4, {1, 2, 3, 4}), (8, {1, 2, 3, 4, 5, 6})):
        s = _run(tuned_session(cq, ANY, cfg, Tuning(lazy_states=k)), n=300)
        assert s.engine.stream_state.reach == {0: frozenset(reach)}


def _close(model, live, urgent):
    model.tran_key.append({0: Counter({("REMOTE", (1,)): 4, ("REMOTE", (2,)): 2})})
    model.tran_cat.append(Counter({0: 3}))
    model.close_slice(10.0, live, urgent, lambda d: [])
    return model


def test_noise_moves_a_share_of_the_estimates_to_wrong_elements():
    live, urgent = Counter({0: 3, 1: 5}), [("REMOTE", (1,)), ("REMOTE", (2,))]
    true = _close(UtilityModel(4, {"REMOTE": 10.0}), live, urgent)
    none = _close(NoisyUtility(4, {"REMOTE": 10.0}, 0.0, [("REMOTE", (9,))]), live, urgent)
    assert none.urgent == true.urgent and none.future == pytest.approx(true.future)
    assert none.mean_live() == true.mean_live()
    decoy = ("REMOTE", (9,))
    full = _close(NoisyUtility(4, {"REMOTE": 10.0}, 1.0, [decoy]), live, urgent)
    assert set(full.urgent) == {decoy} and full.urgent[decoy] == 2
    assert set(full.future) == {decoy}
    assert full.future[decoy] == pytest.approx(sum(true.future.values()))
    half = [_close(NoisyUtility(4, {"REMOTE": 10.0}, 0.5, DOMAIN, seed=3), live, urgent)
            for _ in range(2)]
    assert half[0].future == half[1].future and half[0].urgent == half[1].urgent


def test_tuning_refuses_what_it_cannot_mean():
    with pytest.raises(ValueError, match="noise"):
        Tuning(noise=1.5, domain=DOMAIN)
    with pytest.raises(ValueError, match="domain"):
        Tuning(noise=0.5)
    with pytest.raises(ValueError, match="lookahead"):
        Tuning(lookahead=-1)


def test_each_sweep_sets_its_parameter_and_keeps_the_others():
    todo = ch5_sensitivity.jobs(sorted(ch5_sensitivity.SWEEPS), 100, 0.1)
    assert len(todo) == sum(len(v) * len(s) for _, v, s, _ in ch5_sensitivity.SWEEPS.values())
    for job in todo:
        changed = {k for k, v in job["settings"].items()
                   if v != ch5_sensitivity.DEFAULTS[k]}
        assert changed <= {job["parameter"]}


def _row(fig: str, value, strategy: str = "BL2", n: int = 400) -> dict:
    parameter = ch5_sensitivity.SWEEPS[fig][0]
    job = {"figure": fig, "parameter": parameter, "value": value, "strategy": strategy,
           "query": ch5_sensitivity.SWEEPS[fig][3], "events": n, "unit_cost": 0.1,
           "settings": {**ch5_sensitivity.DEFAULTS, parameter: value}}
    return ch5_sensitivity.run_job(job)


def test_the_latency_and_cache_sweeps_reach_the_engine():
    slow, fast = _row("5.13c", (1_000, 10_000)), _row("5.13c", (1, 10))
    assert slow["value"] == "1000-10000" and slow["requests"] > 0
    assert slow["waited"] > 100 * fast["waited"] > 0
    small, large = _row("5.13b", 5, n=1_000), _row("5.13b", 80, n=1_000)
    assert small["requests"] > large["requests"]


def test_main_writes_the_csv_and_the_statements(tmp_path, capsys):
    assert ch5_sensitivity.main(["--events", "300", "--only", "5.15b", "--workers", "1",
                                 "--out", str(tmp_path)]) == 0
    with open(tmp_path / "sensitivity_full.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["value"] for r in rows] == ["learned", "1", "2", "3", "4", "5", "6"]
    out = capsys.readouterr().out
    assert out.count("5.15b:") == len(check(rows)) == 4
