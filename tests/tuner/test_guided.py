"""The guided sampler on real SQLite studies: what it proposes, when it stops, resume, replay round trip."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import numpy as np
import optuna
import pytest
from optuna.trial import TrialState

from autotune.backends.replay import ReplayBackend
from autotune.backends.simulate import SimulateBackend
from autotune.commands.options import settings_for
from autotune.simulator import simulate
from autotune.study import open_study, run_study
from autotune.pareto import front_indices
from autotune.study.loop import CONVERGED_ATTR, make_sampler
from autotune.study.retries import evaluated_trials
from autotune.study.valid import usable_values, valid_checks
from autotune.candidate import params_key
from tests.cli import autotune, autotune_main


# What a probe keeps with its values: a COMPLETE trial without it was added outside autotune, and the model leaves
# it out (study/outside.py).
def _probed(params: dict, status: str = "ok") -> dict:
    """The user attrs autotune keeps on a probed trial: its result and the candidate it is for (one without them is
    a trial added outside autotune, left out of the model: study/outside.py)."""
    return {"result": {"status": status, "source": "measured"}, "candidate": {"knobs": params}}


def _settings(model="32b", nodes="2-8"):
    return settings_for("--model", model, "--nodes", nodes)


def _guided(tmp_path, settings, checks, seed=0):
    return open_study(tmp_path, None, make_sampler(seed, 30, "guided", checks))


def _table(checks, tmp_path):
    """A ground truth the simulator does not know: offload 15% slower, recompute 10% less energy."""
    records = []
    for check in checks:
        if not check.valid:
            continue
        knobs, step = check.candidate.knobs, simulate(check.candidate)
        time_s = step.time_s * (1.15 if knobs.optimizer_offload != "none" else 1.0)
        energy_kj = step.energy_kj * (0.9 if knobs.activation_checkpointing == "recompute" else 1.0)
        records.append({"params": knobs.to_dict(), "status": "ok", "time_s": time_s, "energy_kj": energy_kj, "source": "simulated"})
    path = tmp_path / "table.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path, records


def _epsilon(found: np.ndarray, truth: np.ndarray) -> float:
    """Multiplicative epsilon indicator: how far the found front is from covering the true one."""
    return max(min(max(f[0] / t[0], f[1] / t[1]) for f in found) for t in truth)


def test_never_proposes_invalid_probed_or_running(tmp_path):
    settings = _settings()
    checks = valid_checks(settings)
    sampler = make_sampler(0, 30, "guided", checks)
    study = open_study(tmp_path, None, sampler)
    run_study(study, settings, SimulateBackend(), 30, checks=checks)
    valid = {params_key(c.candidate.knobs.to_dict()) for c in checks if c.valid}
    proposed = [params_key(t.params) for t in study.trials]
    assert set(proposed) <= valid  # never an invalid candidate
    assert len(proposed) == len(set(proposed))  # never one already probed
    assert not [t for t in study.trials if "duplicate_of" in t.user_attrs]
    # A candidate another worker is probing is not proposed either.
    nxt = sampler.next_candidate(study, None)
    running = study.ask()  # what another worker's loop does: it suggests, then probes for minutes
    choices = usable_values(checks)
    assert {k: running.suggest_categorical(k, choices[k]) for k in choices} == sampler.predictions.params[nxt]
    assert sampler.next_candidate(study, None) != nxt


def test_early_stop_fires_on_a_known_table_after_the_true_front(tmp_path):
    settings = _settings(nodes="4")  # the known table of one node count: a range only slows each proposal
    checks = valid_checks(settings)
    path, records = _table(checks, tmp_path)
    study = _guided(tmp_path, settings, checks)
    run_study(study, settings, ReplayBackend(path), 200, checks=checks)
    evaluated = evaluated_trials(study)
    print(f"converged after {len(evaluated)} probes of {len(records)} candidates")
    assert type(study.sampler).__name__ == "GuidedSampler"  # not wrapped: a wrapper hid its early stop
    assert CONVERGED_ATTR in study.user_attrs  # stopped on its own, well within the budget
    assert study.user_attrs[CONVERGED_ATTR]["probes"] == len(evaluated) < 200
    truth = np.array([[r["time_s"], r["energy_kj"]] for r in records])
    found = np.array([t.values for t in evaluated.values() if t.state == TrialState.COMPLETE])
    assert _epsilon(found, truth[front_indices(truth)]) <= 1.01  # not before the true front is found
    # The simulator is wrong here, so not before every knob value has been probed either (coverage).
    every_value = {(k, str(v)) for r in records for k, v in r["params"].items()}
    assert {(k, str(v)) for t in evaluated.values() for k, v in t.params.items()} == every_value


def test_early_stop_waits_for_a_knob_interaction_the_simulator_lacks(tmp_path, monkeypatch):
    """Offload 15% slower everywhere (an error the probes show), and activation offload_async with
    micro-batch 2 35% faster: only a probe holding both values can show it, and it moves the front's
    fast end. Without the coverage of value pairs the study stopped after 15 probes, 38% short of it."""
    import autotune.study.guided as guided

    refits = []  # the pair reach's leave-one-out refits, once per set of ok probes (k fits each)
    refit = guided.leave_one_out_log_residual
    monkeypatch.setattr(guided, "leave_one_out_log_residual", lambda *a: refits.append(tuple(a[2])) or refit(*a))
    settings = _settings("32b", "4")
    checks = valid_checks(settings)
    records = []
    for check in checks:
        if check.valid:
            knobs, step = check.candidate.knobs, simulate(check.candidate)
            time_s = step.time_s * (1.15 if knobs.optimizer_offload != "none" else 1.0)
            if knobs.activation_checkpointing == "offload_async" and knobs.micro_batch == 2:
                time_s *= 0.65
            records.append({"params": knobs.to_dict(), "status": "ok", "time_s": time_s, "energy_kj": step.energy_kj})
    path = tmp_path / "table.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    study = _guided(tmp_path, settings, checks)
    run_study(study, settings, ReplayBackend(path), 100, checks=checks)
    assert CONVERGED_ATTR in study.user_attrs
    truth = np.array([[r["time_s"], r["energy_kj"]] for r in records])
    found = np.array([t.values for t in evaluated_trials(study).values() if t.state == TrialState.COMPLETE])
    assert _epsilon(found, truth[front_indices(truth)]) <= 1.01
    assert refits and len(refits) == len(set(refits))  # the proposal and the stop check share them


def test_killed_guided_study_resumes_without_repeating_a_probe(tmp_path):
    settings = _settings()
    checks = valid_checks(settings)
    study = _guided(tmp_path, settings, checks)
    run_study(study, settings, SimulateBackend(), 2, checks=checks)
    # What SIGKILL leaves: a trial that had its knobs (mid-probe), and one killed before its first suggest.
    mid_probe = study.ask()
    choices = usable_values(checks)
    killed_knobs = {k: mid_probe.suggest_categorical(k, choices[k]) for k in choices}
    study.ask()  # no params at all
    before = {k: t.values for k, t in evaluated_trials(study).items()}
    resumed = _guided(tmp_path, settings, checks)
    run_study(resumed, settings, SimulateBackend(), 30, checks=checks)
    trials = resumed.get_trials(deepcopy=False)
    assert not [t for t in trials if t.state == TrialState.RUNNING]
    evaluated = evaluated_trials(resumed)
    assert {k: evaluated[k].values for k in before} == before
    assert params_key(killed_knobs) in evaluated  # the interrupted probe ran again, once
    assert not [t for t in trials if "duplicate_of" in t.user_attrs]


def test_replay_round_trip_gives_the_same_front(tmp_path):
    """A measured-like study exported with `export --measurements` and replayed finds the same front."""
    settings = _settings("7b", "1")
    checks = valid_checks(settings)
    original = open_study(tmp_path / "a", None, make_sampler(1, 40, "random"))
    run_study(original, settings, SimulateBackend(), 40, checks=checks)
    from autotune.cli import main

    measurements = tmp_path / "m.jsonl"
    (tmp_path / "a").mkdir(exist_ok=True)
    assert main(["export", str(tmp_path / "a"), "--measurements", str(measurements)]) == 0
    lines = [json.loads(line) for line in measurements.read_text().splitlines()]
    assert len(lines) == len(evaluated_trials(original))
    # As `autotune run --backend replay` does: the study searches the recorded candidates only.
    backend = ReplayBackend(measurements)
    recorded = backend.evaluable(checks)
    replayed = open_study(tmp_path / "b", None, make_sampler(0, 40, "guided", recorded))
    run_study(replayed, settings, backend, 200, checks=recorded)

    def front(study):
        points = {params_key(t.params): tuple(t.values) for t in study.trials if t.state == TrialState.COMPLETE}
        keys = list(points)
        values = np.array([points[k] for k in keys])
        return {keys[i]: points[keys[i]] for i in front_indices(values)}

    assert front(replayed) == front(original)
    sources = {t.user_attrs["result"]["source"] for t in replayed.trials if t.state == TrialState.COMPLETE}
    assert sources == {"simulated"}  # the record's label, kept


def test_cli_replays_the_space_list_and_stops_on_its_own(tmp_path):
    space = autotune_main("space", "--model", "32b", "--nodes", "4", "--simulate", "--json")
    assert space.returncode == 0, space.stderr
    measurements = tmp_path / "space.json"
    measurements.write_text(space.stdout)
    run = autotune_main("run", "--model", "32b", "--nodes", "4", "--backend", "replay", "--measurements", measurements,
                        "--trials", "20", "--out", tmp_path / "run")
    assert run.returncode == 0, run.stderr
    assert "converged after" in run.stderr
    pareto = json.loads((tmp_path / "run" / "pareto.json").read_text())
    assert 0 < pareto["trials"] < 20 and pareto["source"] == "simulated"


@pytest.mark.slow
def test_two_workers_share_the_model(tmp_path):
    """Two `autotune run` processes on one SQLite study: neither probes what the other did or is doing,
    and together they stop about where one worker alone would."""
    settings = _settings(nodes="4")  # a node range's 1492 candidates would only slow each proposal
    path, _ = _table(valid_checks(settings), tmp_path)
    url = f"sqlite:///{tmp_path / 'shared.db'}"

    def worker(i):
        return subprocess.Popen(
            [sys.executable, "-m", "autotune.cli", "run", "--model", "32b", "--nodes", "4", "--backend", "replay",
             "--measurements", str(path), "--trials", "40", "--storage", url, "--out", str(tmp_path / f"w{i}")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )

    optuna.storages.RDBStorage(url)  # tables first: two workers creating them at once is another issue's race
    workers = [worker(0), worker(1)]
    for w in workers:
        _, stderr = w.communicate(timeout=600)
        assert w.returncode == 0, stderr[-2000:]
    study = optuna.load_study(study_name="autotune", storage=url)
    evaluated = [t for t in study.trials if "result" in t.user_attrs and "duplicate_of" not in t.user_attrs]
    knobs = [params_key(t.user_attrs["candidate"]["knobs"]) for t in evaluated]
    assert len(knobs) == len(set(knobs))  # nothing probed twice
    # The workers answer in milliseconds, in step: each waits for the other's proposal under way, so no
    # proposal is spent on a duplicate, and Optuna's own view holds no twins. (Both may queue the baseline
    # when they start at once: the later copy defers to the first, without a probe.)
    assert not [t.number for t in study.trials if "duplicate_of" in t.user_attrs and "fixed_params" not in t.system_attrs]
    complete = [params_key(t.params) for t in study.trials if t.state == TrialState.COMPLETE]
    assert len(complete) == len(set(complete))
    alone = _guided(tmp_path / "alone", settings, valid_checks(settings))
    run_study(alone, settings, ReplayBackend(path), 40)
    # Each worker decides without the other's result in flight, so a few more; never twice the work.
    assert len(evaluated) <= 1.5 * len(evaluated_trials(alone)) + 2


def test_help_states_the_stop_rule():
    from autotune.study.stop_rule import stop_rule_help

    shown = autotune("run", "--help", timeout=60)
    assert shown.returncode == 0, shown.stderr
    # Wrapped to the terminal: compare with the whitespace folded. The rule with its thresholds, as a
    # list after the options; --trials points to it instead of holding it.
    folded = " ".join(shown.stdout.split())
    rule = " ".join(stop_rule_help().split())
    assert rule in folded and folded.index(rule) > folded.index("--eta")
    for threshold in ("5% or higher chance", "more than 1% in time or energy", "at least 3 successful probes", "22% wrong", "more than 10% faster"):
        assert threshold in rule
    start = folded.index("--trials N budget")
    trials = folded[start:folded.index("--sampler {guided", start)]
    assert "every worker included" in trials and "early stop, below" in trials


def test_time_only_guided_study_stops_on_its_own(tmp_path):
    settings = _settings("7b", "1")
    checks = valid_checks(settings)
    study = open_study(tmp_path, None, make_sampler(0, 40, "guided", checks), objectives=1)
    run_study(study, settings, SimulateBackend(), 40, checks=checks, objectives="time")
    assert CONVERGED_ATTR in study.user_attrs
    fastest = min(simulate(c.candidate).time_s for c in checks if c.valid)
    assert min(t.values[0] for t in study.trials if t.state == TrialState.COMPLETE) <= 1.01 * fastest


def test_simulate_study_finds_the_exact_front_and_says_exhaustive(tmp_path):
    from autotune.commands.finish import build_report

    settings = _settings()
    checks = valid_checks(settings)
    study = _guided(tmp_path, settings, checks)
    study.set_user_attr("backend", {"name": "simulate", "reason": "test"})
    run_study(study, settings, SimulateBackend(), 30, checks=checks)
    truth = np.array([[simulate(c.candidate).time_s, simulate(c.candidate).energy_kj] for c in checks if c.valid])
    truth_front = truth[front_indices(truth)]
    evaluated = evaluated_trials(study)
    assert CONVERGED_ATTR in study.user_attrs and len(evaluated) <= len(truth_front) + 3
    found = np.array([t.values for t in evaluated.values()])
    assert _epsilon(found, truth_front) <= 1.01
    _, document = build_report(study)
    assert document["search"]["exhaustive"] is True and "exhaustive" in document["search"]["exhaustive_note"]
    assert document["predicted"] == []
    assert "unfinished" not in document["search"]  # it converged: nothing is left to ask for


def test_a_study_cut_short_lists_predicted_candidates_apart(tmp_path):
    from autotune.commands.finish import build_report
    from autotune.report.search import search_sentences

    settings = _settings()
    checks = valid_checks(settings)
    path, _ = _table(checks, tmp_path)
    study = _guided(tmp_path, settings, checks)
    study.set_user_attr("backend", {"name": "replay", "reason": "test"})
    study.set_user_attr("sampler", "guided")  # as `autotune run` records it
    run_study(study, settings, ReplayBackend(path), 2, checks=checks)  # the budget, not the model, stopped it
    view, document = build_report(study)
    assert document["search"]["converged"] is None and document["predicted"]
    # It says it did not converge, what the stop rule still asks for, and what it would probe next.
    unfinished = document["search"]["unfinished"]
    assert unfinished["probes"] == 2 and unfinished["reason"] == "fewer than 3 probes succeeded"
    probed = [dict(t.params) for t in study.trials]
    valid = [c.candidate.knobs.to_dict() for c in checks if c.valid]
    assert unfinished["next"] in valid and unfinished["next"] not in probed
    lines = search_sentences({**document["search"], "predicted": document["predicted"]})
    assert lines[0].startswith("not converged: stopped after 2 probes while fewer than 3 probes succeeded; next it would probe ZeRO-")
    assert "micro-batch" in lines[0]
    assert lines[0].endswith("The same command with a larger --trials resumes the study")
    front_params = [p["params"] for p in document["front"]]
    for p in document["predicted"]:
        assert p["source"] == "predicted" and p["chance_to_enter_front"] >= 0.05
        assert p["params"] not in front_params


def test_measurement_noise_alone_gives_no_reach_to_unprobed_pairs_beyond_the_floor(monkeypatch):
    import autotune.study.guided as guided
    from autotune.study.guided import MIN_PAIR_REACH, pair_reach

    rng = np.random.default_rng(0)
    noise = rng.normal(0, 0.02, (30, 2))  # 30 probes, 2% measurement noise, the model otherwise right
    # Only the floor: an interaction no probe has hit shows no error to scale from.
    assert pair_reach(noise, np.array([0.02, 0.02])) == pytest.approx([MIN_PAIR_REACH] * 2)
    monkeypatch.setattr(guided, "MIN_PAIR_REACH", 0.0)
    assert (pair_reach(noise, np.array([0.02, 0.02])) < 0.01).all()
    # Without the noise taken out, the largest of 30 noisy misses would read as a 6-9% error to fear.
    assert (pair_reach(noise, np.zeros(2)) > 0.06).all()
    # One probe the simulator missed by 30% (a pair it lacks) still counts, noise or not.
    noise[7, 0] += 0.3
    assert pair_reach(noise, np.array([0.02, 0.02]))[0] > 0.4


def test_a_value_pair_held_only_by_a_probe_that_ran_out_of_memory_is_still_owed(monkeypatch):
    """A probe that ran out of memory measured nothing: the value pairs it held are still owed a probe
    (benchmarks/search_efficiency.py, 72b/8 `combined` seed 0: the one probe holding "power limit 1.0
    with SP 4", a -29% interaction, ran out of memory, and the study stopped 19.5% short of the front)."""
    from autotune.study.guided import GuidedSampler

    checks = valid_checks(_settings("32b", "4"))
    sampler = make_sampler(0, 30, "guided", checks)
    pred = sampler.predictions
    pairs = pred.features.pairs
    # A value pair held by a few candidates whose other pairs the rest of the space also holds: once
    # every other candidate is probed, only this pair is left to cover.
    for x in np.argsort(pairs.sum(axis=0)):
        holders = np.flatnonzero(pairs[:, x])
        others = pairs[np.setdiff1d(np.arange(len(pred)), holders)].any(axis=0)
        # The one that ran out of memory needs the most: the others stay below the wall it shows.
        holders = holders[np.argsort(-pred.memory_gib[holders])]
        if (len(holders) >= 2 and pred.memory_gib[holders[1]] < pred.memory_gib[holders[0]]
                and all(others[pairs[i] > 0].sum() == pairs[i].sum() - 1 for i in holders)):
            break
    else:
        pytest.fail("no such value pair in this space")
    study = optuna.create_study(directions=["minimize", "minimize"], sampler=sampler)
    distributions = sampler.infer_relative_search_space(study, None)
    ok = {k: 0.0 for k in ("rule_violation", "memory_excess_gib", "probe_oom")}
    for i in range(len(pred)):
        if i not in holders:  # measured 10% slower than the simulator says: not its own figures
            values = list(np.exp(pred.log_values[i]) * [1.1, 1.0])
            study.add_trial(optuna.trial.create_trial(params=pred.params[i], distributions=distributions, values=values, constraints=ok,
                                                  user_attrs=_probed(pred.params[i])))
    study.add_trial(optuna.trial.create_trial(state=TrialState.PRUNED, params=pred.params[holders[0]], distributions=distributions,
                                              constraints={**ok, "probe_oom": 1.0},
                                              user_attrs=_probed(pred.params[holders[0]], "oom")))
    monkeypatch.setattr(GuidedSampler, "_share_of_reach_to_enter", lambda self, view: np.zeros(len(view.free)))
    view = sampler.outlook(study)
    owed = sampler._coverage(view)
    assert owed is not None and owed in holders[1:]


def _study_with_probes(sampler, probes: dict[int, tuple[float, float]]):
    """An in-memory study whose ok trials are the candidates given, measured at the factors of the
    simulator's time and energy given."""
    pred = sampler.predictions
    study = optuna.create_study(directions=["minimize", "minimize"], sampler=sampler)
    distributions = sampler.infer_relative_search_space(study, None)
    ok = {k: 0.0 for k in ("rule_violation", "memory_excess_gib", "probe_oom")}
    for i, factors in probes.items():
        values = list(np.exp(pred.log_values[i]) * factors)
        study.add_trial(optuna.trial.create_trial(params=pred.params[i], distributions=distributions, values=values, constraints=ok,
                                                  user_attrs=_probed(pred.params[i])))
    return study


def test_the_pairs_of_a_probe_measured_far_faster_than_simulated_stay_owed():
    """One probe 35% faster than the simulator says: one of its value pairs may hold an interaction, and
    one probe cannot tell which; the correction shares the miss among them, so a candidate holding that
    pair alone stays predicted near the simulator. Its pairs no other probe holds are owed a second
    probe where that would put a candidate on the front (benchmarks/search_efficiency.py: 32b 2-8
    `combined` stopped 11% short, the -29% pair probed once)."""
    checks = valid_checks(_settings("32b", "4"))
    sampler = make_sampler(0, 30, "guided", checks)
    pred = sampler.predictions
    values = np.exp(pred.log_values)
    front = front_indices(values)
    # The simulator right on its front and on a few others; one candidate off the front (SP 2) is the
    # suspect, measured 35% faster.
    suspect = next(i for i in np.argsort(values[:, 0]) if pred.params[i]["sp_degree"] == 2)
    others = [int(i) for i in front[:6]] + [int(i) for i in np.argsort(values[:, 0])[::97][:4]]
    study = _study_with_probes(sampler, {**{i: (1.0, 1.0) for i in others}, int(suspect): (0.65, 1.0)})
    view = sampler.outlook(study)
    runnable = view.free & (view.chance_to_run > 0.5)
    owed = sampler._suspect_pairs(view, runnable)
    pairs = pred.features.pairs
    assert owed.any() and (pairs[suspect][owed] > 0).all()
    assert not pairs[others][:, owed].any()
    # Measured as simulated, the same probe leaves nothing owed (the same sampler: its model is keyed by
    # the figures, not only by which candidates were probed).
    study = _study_with_probes(sampler, {i: (1.0, 1.0) for i in [*others, int(suspect)]})
    view = sampler.outlook(study)
    assert not sampler._suspect_pairs(view, view.free & (view.chance_to_run > 0.5)).any()


def test_values_no_candidate_near_the_front_holds_are_covered_after_the_near_front_pairs(monkeypatch):
    """Coverage goes where an error would move the front: a knob value that only candidates far from
    the front hold waits until the value pairs of the near-front candidates are covered, and is still
    owed before the study may stop (benchmarks/search_efficiency.py, 32b/4 `one_pair` seed 0: SP 2, 4
    and 8 first delayed a -25% pair by four probes)."""
    from autotune.study.guided import GuidedSampler

    checks = valid_checks(_settings("32b", "4"))
    sampler = make_sampler(0, 30, "guided", checks)
    pred = sampler.predictions
    values = pred.features.values
    far_value = int(np.argmin(values.sum(axis=0)))  # the value fewest candidates hold
    far = values[:, far_value] > 0
    # Probes (10% slower than simulated: not the simulator's own figures) holding every other value once.
    probes, seen = [], np.zeros(values.shape[1], dtype=bool)
    seen[far_value] = True
    for i in np.flatnonzero(~far):
        if (values[i] > 0)[~seen].any():
            probes.append(int(i))
            seen |= values[i] > 0
    study = _study_with_probes(sampler, {i: (1.1, 1.0) for i in probes})

    def share_with(far_share):  # candidates holding the far value are that far from the front, the rest near
        return lambda self, view: np.where(far, far_share, 0.0)

    monkeypatch.setattr(GuidedSampler, "_share_of_reach_to_enter", share_with(5.0))
    view = sampler.outlook(study)
    pick = sampler._coverage(view)
    assert pick is not None and not far[pick]  # a near-front pair first
    # Once the value is near the front, it comes first again.
    monkeypatch.setattr(GuidedSampler, "_share_of_reach_to_enter", share_with(0.0))
    assert far[sampler._coverage(sampler.outlook(study))]
    # Far, with every near-front pair covered: still owed, so the study may not stop before it is probed.
    monkeypatch.setattr(GuidedSampler, "_share_of_reach_to_enter", share_with(5.0))
    monkeypatch.setattr(GuidedSampler, "_suspect_pairs", lambda self, view, runnable: np.zeros(pred.features.pairs.shape[1], dtype=bool))
    near_all = _study_with_probes(sampler, {int(i): (1.1, 1.0) for i in np.flatnonzero(~far)})
    last = sampler._coverage(sampler.outlook(near_all))
    assert last is not None and far[last] and not sampler.converged(near_all)


def test_a_probe_alone_in_holding_a_knob_value_does_not_set_the_pair_reach():
    """The only SP 2 probe measured 40% slower than simulated: left out, the re-weighted simulator misses
    it by that value's own error, which no other probe can teach it; that miss says nothing of pairs no
    probe holds, so the reach stays what the probes that share their values give (here the floor)."""
    from autotune.study.guided import MIN_PAIR_REACH

    checks = valid_checks(_settings("32b", "4"))
    sampler = make_sampler(0, 30, "guided", checks)
    pred = sampler.predictions
    index = {params_key(p): i for i, p in enumerate(pred.params)}
    # Three SP 1 configurations, each at power limits 1.0 and 0.9: every value is held by two probes.
    configs = [p for p in pred.params if p["sp_degree"] == 1 and p["power_limit"] == 1.0][:3]
    sharing = [index[params_key({**p, "power_limit": limit})] for p in configs for limit in (1.0, 0.9)]
    alone = next(i for i, p in enumerate(pred.params) if p["sp_degree"] == 2 and p["power_limit"] == 1.0)
    probed = sorted([*sharing, alone])
    assert pred.features.shares_every_value(probed).tolist() == [i != alone for i in probed]
    study = _study_with_probes(sampler, {**{i: (1.0, 1.0) for i in sharing}, alone: (1.4, 1.0)})
    residual, reach = sampler._residual_and_reach(sampler.outlook(study))
    assert np.abs(residual[probed.index(alone), 0]) > 0.2  # the miss is there ...
    assert reach == pytest.approx([MIN_PAIR_REACH] * 2)  # ... and sets no reach


def test_a_converged_run_says_the_rule_in_short_and_pareto_json_keeps_it_whole(tmp_path):
    from autotune.study.stop_rule import STOP_RULE, STOP_RULE_SUMMARY

    run = autotune_main("run", "--model", "32b", "--nodes", "4", "--out", tmp_path / "run")
    assert run.returncode == 0, run.stderr
    said, report = " ".join(run.stderr.split()), " ".join(run.stdout.split())
    # Trial57 #10: the rule once, in the report's search line; the run's own line as the study stops points there,
    # and says its probes were simulated (nothing ran on hardware).
    assert re.search(r"converged after \d+ simulated probes; the report's `search:` line says why it stopped", said), said
    assert STOP_RULE_SUMMARY not in said
    assert re.search(rf"search: converged after \d+ simulated probes: {re.escape(STOP_RULE_SUMMARY)}", report), report
    assert report.count(STOP_RULE_SUMMARY) == 1
    assert "(the whole rule: \"early stop\" at the end of `autotune run --help`)" in STOP_RULE_SUMMARY
    assert " ".join(STOP_RULE.split()) not in said + report  # 11 terminal lines of it, twice, before
    assert json.loads((tmp_path / "run" / "pareto.json").read_text())["search"]["converged"]["rule"] == STOP_RULE
    # Trial 46: probes other workers had under way when one converged finish after it; the report counted them in
    # its trials and not in "converged after", and said nothing of the difference.
    from autotune.study import load_finished_study
    from autotune.study.loop import CONVERGED_ATTR

    study = load_finished_study(tmp_path / "run")
    probes = study.user_attrs[CONVERGED_ATTR]["probes"]
    assert json.loads((tmp_path / "run" / "pareto.json").read_text())["search"]["converged"]["finished_since"] == 0
    study.set_user_attr(CONVERGED_ATTR, {**study.user_attrs[CONVERGED_ATTR], "probes": probes - 2})
    report = autotune_main("report", tmp_path / "run")
    assert report.returncode == 0, report.stderr
    assert (f"converged after {probes - 2} simulated probes (2 more, under way on other workers then, finished since): "
            in " ".join(report.stdout.split()))
    assert json.loads((tmp_path / "run" / "pareto.json").read_text())["search"]["converged"]["finished_since"] == 2


def test_a_study_resumed_with_another_sampler_no_longer_says_it_converged_and_a_guided_resume_says_when(tmp_path):
    out = tmp_path / "run"
    common = ("run", "--model", "32b", "--nodes", "4", "--out", out)

    def search():
        return json.loads((out / "pareto.json").read_text())["search"]

    first = autotune_main(*common)
    assert first.returncode == 0, first.stderr
    converged_at = search()["converged"]["probes"]
    # random has no stop rule: it runs past the guided study's convergence, which then no longer holds
    more = autotune_main(*common, "--sampler", "random", "--trials", converged_at + 3)
    assert more.returncode == 0, more.stderr
    assert "converged after" not in more.stderr and search()["converged"] is None
    assert search()["sampler"] == "random"
    # guided again: converged on the probes the study now holds, with no further probe
    again = autotune_main(*common, "--trials", converged_at + 10)
    assert again.returncode == 0, again.stderr
    assert f"converged after {converged_at + 3} simulated probes" in " ".join(again.stderr.split())
    assert search()["converged"]["probes"] == converged_at + 3
    study = optuna.load_study(study_name=None, storage=f"sqlite:///{out / 'study.db'}")
    assert len(evaluated_trials(study)) == converged_at + 3


def test_the_stop_sentence_says_the_chance_is_the_models_and_what_it_assumes():
    # trial53 #3: "no unprobed valid candidate has a 5% chance" read as a fact about the cluster; a configuration
    # fast through six knob values together was missed at a stated chance of 0 in every study that stopped.
    from autotune.study.stop_rule import stop_rule_help, stop_rule_summary

    for said in (stop_rule_summary(2), stop_rule_summary(1), " ".join(stop_rule_help().split())):
        assert "the model (simulator x correction learnt from the probes)" in said or "is the model's" in said, said
        assert "shared along knob values and pairs of them" in said and "can be missed" in said, said


# Six CPU probes as `export --measurements` wrote them (trial60: ZeRO 0/1/2 at micro-batch 2 and 4, 2 ranks; energy
# estimated), which with the simulated records of every other candidate leave the simulator overrating ZeRO-2.
_CPU_PROBES = [((0, 4), 0.2803, 0.01706, 0.003488, 0.350), ((2, 4), 0.2262, 0.01302, 0.004477, 0.396),
               ((1, 4), 0.2942, 0.01703, 0.003360, 0.396), ((2, 2), 0.3569, 0.02020, 0.002774, 0.394),
               ((1, 2), 0.3689, 0.02127, 0.002710, 0.395), ((0, 2), 0.3281, 0.01900, 0.003332, 0.350)]


def test_a_suspect_pair_no_near_front_candidate_holds_is_probed_not_the_baseline_again(tmp_path):
    """Trial60 #1: measured probes among simulated records left a pair owed (_suspect_pairs: a holder enters by the
    probe's own miss) while no candidate could enter by `pair_reach`; the coverage step then chose among no
    candidates and named the baseline, already evaluated: ~300 duplicate trials, the study stopped short of its
    --trials, and the report said it would probe the baseline next."""
    shape = ("--model", "tiny", "--hardware", "cpu", "--gpus-per-node", "2", "--nodes", "1")
    space = autotune_main("space", *shape, "--simulate", "--json")
    assert space.returncode == 0, space.stderr
    records = {params_key(r["params"]): r for r in json.loads(space.stdout) if r.get("status", "ok") == "ok"}
    study = json.loads(space.stdout)[0].get("study")
    for (zero, micro_batch), time_s, energy_kj, tflops, peak_mem_gib in _CPU_PROBES:
        params = {"zero_stage": zero, "optimizer_offload": "none", "activation_checkpointing": "none", "sp_degree": 1,
                  "micro_batch": micro_batch, "nodes": 1, "power_limit": 1.0, "sm_clock_mhz": "max"}
        records[params_key(params)] = {"params": params, "status": "ok", "source": "estimated", "time_s": time_s,
                                       "energy_kj": energy_kj, "tflops": tflops, "peak_mem_gib": peak_mem_gib,
                                       **({"study": study} if study else {})}
    measurements = tmp_path / "mixed.jsonl"
    measurements.write_text("".join(json.dumps(r) + "\n" for r in records.values()))
    run = autotune_main("run", *shape, "--backend", "replay", "--measurements", measurements, "--trials", "12",
                        "--allow-estimated-energy", "--out", tmp_path / "run", "--quiet")
    assert run.returncode == 0, run.stderr
    trials = optuna.load_study(study_name=None, storage=f"sqlite:///{tmp_path / 'run' / 'study.db'}").trials
    assert [t for t in trials if "duplicate_of" in t.user_attrs] == [] and len(trials) == 12
    evaluated = {params_key(t.params) for t in trials}
    unfinished = json.loads((tmp_path / "run" / "pareto.json").read_text())["search"].get("unfinished") or {}
    assert not unfinished.get("next") or params_key(unfinished["next"]) not in evaluated


def test_a_random_worker_beside_a_guided_one_that_converged_says_its_budget_and_its_probes_since(tmp_path, monkeypatch):
    """Trial66 #13: a --sampler random worker ran on to its --trials budget after the guided worker beside it converged,
    and said "converged after N probes" with no budget line, its own later probes "under way on other workers then".
    Deterministic: the guided worker runs to its convergence while the random worker's first probe is under way."""
    from pathlib import Path

    space = Path(__file__).with_name("small_7b_space.toml")
    flags = ("--model", "7b", "--nodes", "1", "--space", space)
    out = tmp_path / "run"
    real_evaluate, guided_ran = SimulateBackend.evaluate, []

    def evaluate(self, candidate, trial_number):
        if not guided_ran:  # the guided worker, on the same study.db, converges meanwhile
            guided_ran.append(True)
            settings = settings_for(*map(str, flags))
            checks = valid_checks(settings)
            study = open_study(out, None, make_sampler(0, 12, "guided", checks), cheap_figures=True)
            run_study(study, settings, SimulateBackend(), 12, checks=checks, shared_storage=True,
                      proposed_by={"sampler": "guided", "seed": 0, "trials_budget": 12, "autotune_version": "0"})
            assert study.user_attrs[CONVERGED_ATTR]
        return real_evaluate(self, candidate, trial_number)

    monkeypatch.setattr(SimulateBackend, "evaluate", evaluate)
    run = autotune_main("run", *flags, "--trials", "12", "--sampler", "random", "--seed", "3", "--backend", "simulate",
                        "--out", out)
    assert run.returncode == 0, run.stderr
    said, report = " ".join(run.stderr.split()), " ".join(run.stdout.split())
    converged = json.loads((out / "pareto.json").read_text())["search"]["converged"]
    probes = converged["probes"]
    # Its stop is the budget's: said so, and not the guided worker's convergence.
    assert re.search(r"the --trials budget of 12 is spent: \d+ of them evaluated by this run, \d+ by other runs", said), said
    assert "the report's `search:` line says why it stopped" not in said
    # Its first probe was under way when the guided worker converged; the others it proposed since.
    assert converged["finished_since"] == 1 and converged["probed_since"] == 12 - probes - 1, converged
    assert converged["probed_since_by"] == ["random"]
    assert (f"converged after {probes} simulated probes (1 more, under way on other workers then, finished since; "
            f"{12 - probes - 1} more probed since by --sampler random): ") in report, report


@pytest.mark.parametrize("by, said", [
    (["queued"], "(1 more queued by hand since)"),
    (["queued", "random"], "(1 more probed since by --sampler random and trials queued by hand)"),
])
def test_a_trial_queued_by_hand_since_convergence_is_not_said_to_be_a_samplers(by, said):
    """trial68 #12: "1 more probed since by --sampler queued" named a --sampler value that does not exist."""
    from autotune.report.search import search_sentences
    from autotune.study.stop_rule import stop_rule

    converged = {"probes": 4, "rule": stop_rule(2), "finished_since": 0, "probed_since": 1, "probed_since_by": by}
    line = search_sentences({"converged": converged}, "simulate")[0]
    assert line.startswith(f"converged after 4 simulated probes {said}: "), line


def test_a_guided_resume_that_probes_past_an_earlier_convergence_drops_that_record(tmp_path):
    """Trial74 #3: a resumed guided study whose model no longer held it converged probed until its --trials budget,
    and run and report still said "converged after 4 simulated probes (26 more probed since by --sampler guided)"."""
    from autotune.study.stop_rule import STOP_RULE

    out = tmp_path / "run"
    assert autotune_main("run", "--model", "7b", "--nodes", "2", "--backend", "simulate", "-q", "--trials", "2", "--out", out).returncode == 0
    study = optuna.load_study(study_name="autotune", storage=f"sqlite:///{out / 'study.db'}")
    # An earlier run's record, as a guided run keeps it, of a study the model does not hold converged now.
    study.set_user_attr(CONVERGED_ATTR, {"probes": 2, "rule": STOP_RULE, "trials": 2})
    resumed = autotune_main("run", "--model", "7b", "--nodes", "2", "--backend", "simulate", "-q", "--trials", "4", "--out", out)
    assert resumed.returncode == 0, resumed.stderr
    probed = sum("result" in t.user_attrs for t in study.trials)
    assert probed > 2  # the guided run went on: the model did not hold the study converged
    record = study.user_attrs.get(CONVERGED_ATTR)
    assert record is None or record["probes"] == probed  # converged again at its end, or not at all
    search = json.loads((out / "pareto.json").read_text())["search"]
    assert not search["converged"] or search["converged"]["probes"] == probed
