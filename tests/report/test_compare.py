"""`autotune compare RUN_DIR RUN_DIR ...` (a newcomer's trial: comparing 4 against 8 nodes, or a study with and
without power limits, took a script, as `report` takes one directory and a pick names only its own trial).
Real simulated runs; every figure asserted is computed here again from the two pareto.json files."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from autotune.report.error_scope import outside_words
from autotune.report.outside_calibration import outside_calibration_line
from autotune.report.units import change_words
from autotune.space.files import DEFAULT_SPACE
from tests.cli import autotune, autotune_main

RUN = ("run", "--model", "7b", "--backend", "simulate")


def _run(out, *flags) -> None:
    done = autotune_main(*RUN, "--out", out, *flags)
    assert done.returncode == 0, done.stderr


def _pareto(run_dir) -> dict:
    return json.loads((run_dir / "pareto.json").read_text(encoding="utf-8"))


def _compare(*run_dirs) -> dict:
    done = autotune_main("compare", *run_dirs, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _pct(value: float, reference: float) -> float:
    return 100.0 * (value - reference) / reference


def _point(document: dict, trial: int) -> dict:
    return next(p for p in document["front"] + document["feasible"] if p["trial"] == trial)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict:
    """7b on 1 node; on 2 nodes; on 1 node without power limits (a --space file); on 1 node for twice the samples;
    the first replayed as if measured (its records relabelled); on 1 node of 2 GPUs (--gpus-per-node 2); on 1 and
    2 nodes (--nodes 1-2)."""
    root = tmp_path_factory.mktemp("compare")
    dirs = {name: root / name for name in ("one_node", "two_nodes", "no_power_limits", "more_samples", "measured",
                                           "two_gpus", "one_and_two_nodes")}
    _run(dirs["one_node"], "--nodes", "1")
    _run(dirs["one_and_two_nodes"], "--nodes", "1-2")
    _run(dirs["two_gpus"], "--nodes", "1", "--gpus-per-node", "2")
    _run(dirs["two_nodes"], "--nodes", "2")
    space = root / "no-power-limits.toml"
    space.write_text(DEFAULT_SPACE.read_text(encoding="utf-8").replace("power_limit = [1.0, 0.9, 0.8, 0.7]",
                                                                       "power_limit = [1.0]"), encoding="utf-8")
    _run(dirs["no_power_limits"], "--nodes", "1", "--space", space)
    _run(dirs["more_samples"], "--nodes", "1", "--samples", "4096")
    recorded = root / "recorded.jsonl"
    assert autotune_main("export", dirs["one_node"], "--measurements", recorded).returncode == 0
    measured = root / "measured.jsonl"
    measured.write_text(recorded.read_text(encoding="utf-8").replace('"source": "simulated"', '"source": "measured"'),
                        encoding="utf-8")
    _run(dirs["measured"], "--nodes", "1", "--backend", "replay", "--measurements", measured)
    return dirs


def test_one_node_against_two_matches_each_configuration_across_the_node_counts(runs):
    """A scaling comparison: no node count is in both studies, so front points match on every other knob, and
    each change is the second study's figure against the first's, from their own pareto.json."""
    a, b = _pareto(runs["one_node"]), _pareto(runs["two_nodes"])
    document = _compare(runs["one_node"], runs["two_nodes"])
    assert document["inputs"]["differ"] == {"node_counts": [[1], [2]], "gpu_counts": [[4], [8]]}
    assert document["inputs"]["same"]["model"] == "7b" and document["inputs"]["same"]["workload.samples"] == 2048
    assert document["inputs"]["same"]["space.power_limit"] == [1.0, 0.9, 0.8, 0.7]
    assert document["inputs"]["not_recorded"] == {}
    # The same job, simulated in both: like-for-like; but each study's picks lie where the simulator's error was not
    # measured, which each one's report says, and so does compare (trial75 #4).
    assert document["caveats"] == [f"Study {n}, as its report says: {outside_calibration_line(study)}"
                                   for n, study in enumerate((a, b), 1)]
    shared = document["shared_front"]
    for configuration in shared["configurations"]:
        assert configuration["matched_on"] == ["zero_stage", "optimizer_offload", "activation_checkpointing",
                                               "sp_degree", "micro_batch", "power_limit", "sm_clock_mhz"]
        assert (configuration["matched_to"], configuration["matched_without_nodes"]) == (1, [2])

    def knobs(point):
        return {k: v for k, v in point["params"].items() if k != "nodes"}

    expected = [knobs(p) for p in a["front"] if any(knobs(q) == knobs(p) for q in b["front"])]
    assert expected, "the two fronts share no configuration: the test's runs no longer show a match"
    assert sorted(map(json.dumps, (c["params"] for c in shared["configurations"]))) == sorted(map(json.dumps, expected))
    for configuration in shared["configurations"]:
        [first], [second] = configuration["studies"]
        p = next(p for p in a["front"] if knobs(p) == configuration["params"])
        q = next(q for q in b["front"] if knobs(q) == configuration["params"])
        assert (first["trial"], first["nodes"], second["trial"], second["nodes"]) == (p["trial"], 1, q["trial"], 2)
        assert second["time_change_pct"] == pytest.approx(_pct(q["time_s"], p["time_s"]))
        assert second["energy_change_pct"] == pytest.approx(_pct(q["energy_kj"], p["energy_kj"]))
        assert second["time_change_pct"] < -40  # twice the GPUs: about half the time
        assert "1/2 nodes" in configuration["configuration"]
    for row in document["picks"]:
        p, q = _point(a, a["recommendations"][row["pick"]]), _point(b, b["recommendations"][row["pick"]])
        first, second = row["studies"]
        assert (first["trial"], second["trial"]) == (p["trial"], q["trial"])
        assert second["time_change_pct"] == pytest.approx(_pct(q["time_s"], p["time_s"]))
        assert second["energy_change_pct"] == pytest.approx(_pct(q["energy_kj"], p["energy_kj"]))
        assert second["knobs_changed"]["nodes"] == [1, 2] and first["knobs_changed"] is None
    assert [row["pick"] for row in document["picks"]] == [n for n in ("fastest", "min_energy", "knee", "max_slowdown",
                                                                      "cost_weighted") if n in a["recommendations"]]


def test_the_table_says_the_differing_inputs_and_each_picks_change(runs):
    a, b = _pareto(runs["one_node"]), _pareto(runs["two_nodes"])
    done = autotune_main("compare", runs["one_node"], runs["two_nodes"])
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert f"  1: {runs['one_node']}: 7b on 1 node of gh200, backend simulate; time simulated, energy simulated" in out
    cells = [[cell.strip() for cell in line.split("│")[1:-1]] for line in out.splitlines() if line.startswith("│")]
    assert ["nodes", "1", "2"] in cells and ["GPUs", "4", "8"] in cells
    assert "Same in every study: model 7b; hardware gh200; hardware profile sha256 " in out
    fastest = next(i for i, row in enumerate(cells) if row[0] == "fastest")
    second = " ".join(next(row for row in cells[fastest + 1:] if row[1] == "2"))
    p, q = _point(a, a["recommendations"]["fastest"]), _point(b, b["recommendations"]["fastest"])
    assert change_words(_pct(q['time_s'], p['time_s'])) in second and change_words(_pct(q['energy_kj'], p['energy_kj'])) in second
    assert "nodes 1 -> 2" in second and "simulated" in second
    assert "matched on every knob but nodes (the studies share no node count)" in " ".join(out.split())
    assert [line for line in out.splitlines() if line.startswith("caveat:")] == [
        f"caveat: Study {n}, as its report says: {outside_calibration_line(study)}" for n, study in enumerate((a, b), 1)]


def test_without_power_limits_the_least_energy_pick_differs_by_its_power_limit(runs):
    """Trial 47's question: with and without power limits, which pick changes, and by how much."""
    a, c = _pareto(runs["one_node"]), _pareto(runs["no_power_limits"])
    document = _compare(runs["one_node"], runs["no_power_limits"])
    assert document["inputs"]["differ"] == {"space.power_limit": [[1.0, 0.9, 0.8, 0.7], [1.0]]}
    assert all("nodes" in c["matched_on"] and not c["matched_without_nodes"] for c in document["shared_front"]["configurations"])
    min_energy = next(row for row in document["picks"] if row["pick"] == "min_energy")
    p, q = _point(a, a["recommendations"]["min_energy"]), _point(c, c["recommendations"]["min_energy"])
    assert p["params"]["power_limit"] < 1.0 and q["params"]["power_limit"] == 1.0
    first, second = min_energy["studies"]
    assert second["knobs_changed"]["power_limit"] == [p["params"]["power_limit"], 1.0]
    assert second["energy_change_pct"] == pytest.approx(_pct(q["energy_kj"], p["energy_kj"])) and second["energy_change_pct"] > 0
    assert f"power limit {p['params']['power_limit']:g} x default" in first["configuration"]
    # Matched on every knob, the power limit included: only unlimited configurations can be on both fronts.
    shared = document["shared_front"]["configurations"]
    assert shared and all(conf["params"]["power_limit"] == 1.0 for conf in shared)
    for conf in shared:
        assert conf["why_absent"] == [None, None]
        [first], [second] = conf["studies"]
        assert second["time_change_pct"] == pytest.approx(_pct(second["time_s"], first["time_s"]))


def test_a_configuration_missing_from_a_front_says_why(runs):
    """One on both fronts, against a third study's front that cannot hold a power-limited point."""
    a = _pareto(runs["one_node"])
    document = _compare(runs["one_node"], runs["measured"], runs["no_power_limits"])
    limited = [conf for conf in document["shared_front"]["configurations"] if conf["params"]["power_limit"] != 1.0]
    assert limited and len(limited) == sum(1 for p in a["front"] if p["params"]["power_limit"] != 1.0)
    for conf in limited:
        assert conf["studies"][2] == []
        assert conf["why_absent"][2] == f"not in its searched space (power_limit {conf['params']['power_limit']})"


def test_simulated_against_measured_is_compared_and_said_to_include_the_simulators_error(runs, tmp_path):
    document = _compare(runs["one_node"], runs["measured"])
    assert document["inputs"]["differ"]["time_source"] == ["simulated", "measured"]
    assert document["inputs"]["differ"]["backend"] == ["simulate", "replay"]
    assert document["inputs"]["differ"]["measurements"][0] is None
    assert document["inputs"]["differ"]["measurements"][1]["records"] == len(_pareto(runs["one_node"])["feasible"])
    # A replayed record need not name the parts no sensor saw: [] there is not "the sensors saw the whole node".
    assert document["inputs"]["differ"]["energy_not_measured"] == [None, "not recorded"]
    a = _pareto(runs["one_node"])
    error = a["simulator_error"]
    # The error at the picks' configurations, as study 1's report bars them: +- ?% where it was not measured
    # (every pick of these runs holds a knob value the shipped gh200 error was not measured on).
    assert all(str(trial) in error["extrapolated"] for trial in a["recommendations"].values())
    assert document["caveats"][0] == (
        "Simulated against measured: study 1 has simulated figures, study 2 figures from hardware; a difference between "
        "them includes the simulator's error (study 1: +- ?% at every pick, as its report says: the error was not "
        f"measured at {outside_words(error, a['recommendations'].values())}).")
    # Where some picks lie inside what was measured, they carry the stated error and the others +- ?%.
    inside = tmp_path / "inside"
    inside.mkdir()
    fastest = a["recommendations"]["fastest"]
    a["simulator_error"]["extrapolated"] = {t: w for t, w in error["extrapolated"].items() if t != str(fastest)}
    (inside / "pareto.json").write_text(json.dumps(a), encoding="utf-8")
    words = _compare(inside, runs["measured"])["caveats"][0]
    outside = [name for name, trial in a["recommendations"].items() if trial != fastest]
    assert f"(study 1: time +- {error['time_s_pct']:g}%, energy +- {error['energy_kj_pct']:g}% at fastest" in words
    assert words.split("; +- ?% at ")[1].startswith(", ".join(name.replace("_", "-") for name in outside)), words
    for row in document["picks"]:  # the same figures relabelled: every change 0, every label the study's own
        first, second = row["studies"]
        assert (first["time_source"], second["time_source"], second["energy_source"]) == ("simulated", "measured", "measured")
        assert second["time_change_pct"] == 0 and second["energy_change_pct"] == 0 and second["knobs_changed"] == {}
    out = autotune_main("compare", runs["one_node"], runs["measured"]).stdout
    assert "caveat: Simulated against measured" in " ".join(out.split())
    assert "same as study 1" in out


def _edited(run_dir, tmp_path, name: str, edit) -> object:
    """A copy of `run_dir`'s pareto.json in its own directory, `edit`ed as a hand (or another run) would."""
    copy = tmp_path / name
    copy.mkdir()
    document = _pareto(run_dir)
    edit(document)
    (copy / "pareto.json").write_text(json.dumps(document), encoding="utf-8")
    return copy


def test_a_launch_study_s_probe_settings_with_their_switch_are_compared(runs, tmp_path):
    """A launch study records --allow-estimated-energy as true or false beside its numbers: compare refused every
    such pareto.json ("is not a number")."""
    settings = {"--warmup-steps": 2, "--probe-steps": 5, "--probe-seconds": 0.0, "--repeats": 1, "--probe-timeout": 900.0}

    def launched(estimated: bool):
        return lambda document: document["inputs"].update(
            probe_settings={**settings, "--allow-estimated-energy": estimated})

    first = _edited(runs["one_node"], tmp_path, "estimated", launched(True))
    second = _edited(runs["one_node"], tmp_path, "measured_only", launched(False))
    differ = _compare(first, second)["inputs"]["differ"]
    assert [s["--allow-estimated-energy"] for s in differ["probe_settings"]] == [True, False]
    table = autotune_main("compare", first, second)
    assert table.returncode == 0, table.stderr
    assert "--probe-timeout 900 --allow-estimated-energy" in " ".join(table.stdout.split())


def test_other_gpus_per_node_are_said_though_the_node_count_is_the_same(runs):
    """--gpus-per-node 2 against whole nodes of 4: both read "1 node", and the times are of half the GPUs."""
    document = _compare(runs["one_node"], runs["two_gpus"])
    assert document["inputs"]["differ"]["gpus_per_node"] == [[4], [2]]
    assert any(c.startswith("Other GPU counts: the studies' nodes hold other numbers of GPUs (GPUs per node, study 1: "
                            "4; study 2: 2)") for c in document["caveats"]), document["caveats"]
    for row in document["picks"]:  # and each pick says it ran on other GPUs, as it says another node count
        assert row["studies"][1]["knobs_changed"]["gpus"] == [4, 2]
    assert "GPUs 4 -> 2" in autotune_main("compare", runs["one_node"], runs["two_gpus"]).stdout


def test_a_configuration_that_cannot_be_valid_in_a_study_is_not_called_unevaluated(runs):
    """At 8 GPUs micro-batch 4 cannot divide a global batch of 16: no search of that study could evaluate it."""
    from autotune.report.compare import why_absent
    from autotune.report.compare_study import ComparedStudy

    document = _pareto(runs["two_nodes"])
    study = ComparedStudy(runs["two_nodes"], {**document, "workload": {**document["workload"], "global_batch": 16},
                                              "inputs": None})
    params = {**document["front"][0]["params"], "micro_batch": 4, "sp_degree": 1, "power_limit": 0.123}
    assert why_absent(study, params) == "not valid there (micro-batch 4 x data-parallel size 8 does not divide global batch 16)"
    del params["nodes"]  # matched without the node count: invalid at every count of the study
    assert why_absent(study, params).startswith("not valid there")
    assert why_absent(ComparedStudy(runs["two_nodes"], {**document, "inputs": None}), {**params, "micro_batch": 2}) == \
        "not evaluated (or not valid there)"  # valid by the rules pareto.json lets us check: the memory estimate may not


def test_a_power_limit_written_as_a_whole_number_is_compared_as_the_fraction_it_is(runs, tmp_path):
    def whole(d):
        for point in d["front"] + d["feasible"]:
            if point["params"]["power_limit"] == 1.0:
                point["params"]["power_limit"] = 1

    document = _compare(runs["one_node"], _edited(runs["one_node"], tmp_path, "whole", whole))
    limits = [e["params"]["power_limit"] for row in document["picks"] for e in row["studies"]]
    assert 1.0 in limits and all(isinstance(limit, float) for limit in limits)


def test_simulated_studies_on_other_profiles_say_each_ones_error(runs, tmp_path):
    """An uncalibrated profile's figures carry an unknown error (+- ?%): a change against them is said to include it."""
    def uncalibrated(d):
        d.update(hardware="h100-sxm", simulator_error={})
        d["inputs"]["hardware_sha256"] = "0" * 64

    other = _edited(runs["one_node"], tmp_path, "h100", uncalibrated)
    caveat = next(c for c in _compare(runs["one_node"], other)["caveats"] if c.startswith("Simulated on different"))
    assert "study 2: +- ?%: the hardware profile was not calibrated" in caveat
    assert "study 1: +- ?% at every pick" in caveat  # the shipped error was not measured at these picks
    assert not any(c.startswith("Simulated on different") for c in _compare(runs["one_node"], runs["two_nodes"])["caveats"])
    # Three studies of one unknown error: said once, for all three (not "both profiles'", three times over).
    third = _edited(runs["one_node"], tmp_path, "h100-b", lambda d: (uncalibrated(d), d["inputs"].update(hardware_sha256="1" * 64)))
    caveat = next(c for c in _compare(runs["one_node"], other, third)["caveats"] if c.startswith("Simulated on different"))
    assert "each profile's error" in caveat and "studies 2, 3: +- ?%: the hardware profile was not calibrated" in caveat


def test_an_edited_profile_is_said_for_each_pair_of_studies(runs, tmp_path):
    """A third study on another profile hid the edit between the first two (the check was made over all at once)."""
    edited = _edited(runs["one_node"], tmp_path, "edited", lambda d: d["inputs"].update(hardware_sha256="a" * 64))
    other = _edited(runs["one_node"], tmp_path, "other", lambda d: d.update(hardware="h100-sxm"))
    caveats = _compare(runs["one_node"], edited, other)["caveats"]
    assert ("The hardware profiles of studies 1 and 2 share a name but not their content (sha256 differs): one was "
            "edited or calibrated, and simulated figures follow its constants.") in caveats


def _made_by(version: str, sha256: str | None = "keep"):
    """An edit making a pareto.json one that autotune `version` wrote (its built-in profile's sha256 `sha256`)."""
    def edit(d):
        for who in d["inputs"]["proposed_by"]:
            who["autotune_version"] = version
        if sha256 != "keep":
            d["inputs"]["hardware_sha256"] = sha256
    return edit


def test_a_built_in_profile_of_another_autotune_version_is_not_called_edited(runs, tmp_path):
    """Each study used the built-in gh200 of its autotune version, which changed between versions: "one was edited or
    calibrated" sent the user looking for an edit never made (trial73 #2); and a study whose sha256 is not recorded
    was listed among those on "different hardware profiles" as if known to differ."""
    older = _edited(runs["one_node"], tmp_path, "older", _made_by("0.0.9+gold", "b" * 64))
    unpinned = _edited(runs["one_node"], tmp_path, "unpinned", lambda d: d["inputs"].update(hardware_sha256=None))
    caveats = _compare(unpinned, older, runs["one_node"])["caveats"]
    assert not any("edited or calibrated, and" in c for c in caveats), caveats
    versions = next(c for c in caveats if c.startswith("Simulated by different autotune versions"))
    assert ("The built-in gh200 profile of studies 2 and 3 differs in content (sha256) because their versions shipped "
            "other ones, not because it was edited or calibrated.") in versions
    profiles = next(c for c in caveats if c.startswith("Simulated on different hardware profiles"))
    assert profiles.startswith("Simulated on different hardware profiles: the simulated figures of studies 2, 3 are")
    # One version, two contents: the built-in was edited in place (or the file is a copy), as said before.
    edited = _edited(runs["one_node"], tmp_path, "edited", lambda d: d["inputs"].update(hardware_sha256="a" * 64))
    assert any("one was edited or calibrated" in c for c in _compare(runs["one_node"], edited)["caveats"])


def test_simulated_studies_of_other_autotune_versions_say_the_simulator_may_have_changed(runs, tmp_path):
    """The same configuration was 8.86 min in an older autotune's study and 6.86 in today's; compare said nothing, and
    "23.1% less" read as a better pick (trial73 #6). The versions are recorded in `inputs.proposed_by`; a study older
    than that record is said to be an unrecorded one's."""
    current = _pareto(runs["one_node"])["inputs"]["proposed_by"][0]["autotune_version"]
    older = _edited(runs["one_node"], tmp_path, "older", _made_by("0.0.9+gold"))
    caveat = next(c for c in _compare(older, runs["one_node"])["caveats"] if "autotune versions" in c)
    assert caveat.startswith(f"Simulated by different autotune versions (study 1: 0.0.9+gold; study 2: {current}): ")
    assert "may be the simulator's own, not the configurations'" in caveat and "built-in" in caveat
    unrecorded = _edited(runs["one_node"], tmp_path, "unrecorded", lambda d: d.pop("inputs"))
    caveat = next(c for c in _compare(unrecorded, runs["one_node"])["caveats"] if "autotune versions" in c)
    assert f"(study 1: not recorded (an older autotune); study 2: {current})" in caveat
    # Two studies of one version, or neither recorded: nothing known to differ.
    assert not any("autotune versions" in c for c in _compare(runs["one_node"], runs["two_nodes"])["caveats"])
    assert not any("autotune versions" in c for c in _compare(unrecorded, _edited(
        runs["one_node"], tmp_path, "unrecorded2", lambda d: d.pop("inputs")))["caveats"])


def test_a_search_still_running_or_stopped_before_converging_is_said(runs, tmp_path):
    def unfinished(running: int):
        return lambda d: d.update(search={"sampler": "guided", "converged": None, "unfinished": {
            "probes": 3, "reason": "fewer than 3 probes succeeded", "next": None, "running_elsewhere": running,
            "succeeded": 2}})

    running = _edited(runs["one_node"], tmp_path, "running", unfinished(1))
    stopped = _edited(runs["one_node"], tmp_path, "stopped", unfinished(0))
    caveats = _compare(runs["one_node"], running, stopped)["caveats"]
    assert (f"Study 2 was still running elsewhere when its pareto.json was written (1 probe under way on other "
            f"workers): its front and picks are partial; `autotune report {running}` again once it ends.") in caveats
    assert ("Study 3 stopped before its search converged after 3 probes while fewer than 3 probes succeeded: a resumed "
            "run may still change its front and picks.") in caveats
    assert not any("converged" in c for c in _compare(runs["one_node"], runs["two_nodes"])["caveats"])


def test_a_replay_that_ended_among_its_partial_recording_is_said(runs, tmp_path):
    """A replay that stopped at the end of its file's records, or converged among them, has its report say that its
    front is the recorded candidates' only: compare said nothing, and the study read as a converged search of the
    whole space."""
    recorded = runs["one_node"].parent / "recorded.jsonl"
    count = len(recorded.read_text(encoding="utf-8").splitlines())
    _run(tmp_path / "ended", "--nodes", "1", "--backend", "replay", "--measurements", recorded, "--trials", str(count))
    converged = _pareto(tmp_path / "ended")["search"]["converged"]
    assert converged["at_end_of_recording"] is True  # the study this caveat is for
    valid = converged["recorded"] + converged["unrecorded"]
    caveats = _compare(runs["one_node"], tmp_path / "ended")["caveats"]
    assert (f"Study 2 stopped after {count} probes with no recorded candidate left to replay, before its search "
            f"converged ({count} of the {valid} valid candidates were recorded; the other {valid - count} were not "
            "measured): its front is the recorded candidates' front only, and may lack points only a measured probe "
            "(--backend launch) would find.") in caveats
    among = _edited(runs["one_node"], tmp_path, "among", lambda d: d["search"].update(
        converged={"probes": 3, "rule": "...", "recorded": 1, "unrecorded": 979}))
    assert ("Study 2 converged among the candidates its replayed file records, after 3 probes (1 of the 980 valid "
            "candidates was recorded; the other 979 were not measured): its front is the recorded candidates' front "
            "only, and may lack points only a measured probe (--backend launch) would find.") in _compare(
        runs["one_node"], among)["caveats"]


def test_a_replayed_front_the_search_did_not_wholly_probe_is_not_called_simulated(runs, tmp_path):
    """trial70 #2: a measured replay whose search missed points of its recorded front was said to miss its "whole
    simulated front (18 points of the recorded front ...)"; the note says whose front it is."""
    def missed(figures: str):
        note = f"18 points of the {figures} front over all 980 valid candidates were not probed"
        return lambda d: d["search"].update(converged=None, unfinished=None, exhaustive=False, exhaustive_note=note)

    replayed = _edited(runs["measured"], tmp_path, "replayed", missed("recorded"))
    simulated = _edited(runs["one_node"], tmp_path, "simulated", missed("simulated"))
    caveats = _compare(runs["one_node"], replayed, simulated)["caveats"]
    assert ("Study 2's search did not probe its whole front (18 points of the recorded front over all 980 valid "
            "candidates were not probed): its front may lack them.") in caveats
    assert ("Study 3's search did not probe its whole front (18 points of the simulated front over all 980 valid "
            "candidates were not probed): its front may lack them.") in caveats
    assert not any("simulated front (18 points of the recorded" in c for c in caveats)


def test_a_first_study_without_picks_says_to_put_one_with_picks_first(runs, tmp_path):
    empty = _edited(runs["one_node"], tmp_path, "empty", lambda d: d.update(
        recommendations={}, picks=[], objectives=["time"], note="No feasible configuration: no trial ran to completion."))
    caveats = _compare(empty, runs["one_node"])["caveats"]
    assert "Study 1 has no picks: no feasible configuration: no trial ran to completion." in caveats
    assert (f"Every change is against study 1, which has no picks: put a study with picks first (`autotune compare "
            f"{runs['one_node']} {empty}`).") in caveats
    assert not any("ranked by time only" in c for c in caveats)  # it has no picks to hold the fastest alone


def test_a_time_only_study_uses_no_max_slowdown_or_eta(runs, tmp_path):
    def time_only(d):
        d["objectives"] = ["time"]
        d["recommendations"] = {"fastest": d["recommendations"]["fastest"]}
        d["picks"] = [row for row in d["picks"] if row["name"] == "fastest"]  # as a time-only study writes them

    timed = _edited(runs["one_node"], tmp_path, "timed", time_only)
    document = _compare(runs["one_node"], timed)
    assert document["inputs"]["differ"]["eta"] == [0.5, "unused: ranked by time only"]
    assert not any("follows a different rule" in c for c in document["caveats"])
    both = _compare(timed, _edited(runs["one_node"], tmp_path, "timed2", time_only))
    assert both["inputs"]["same"]["max_slowdown"] == "unused: ranked by time only"
    assert not any("put a study" in c for c in both["caveats"] + document["caveats"])
    # First, it leaves every other pick's change n/a: the caveat says which order computes them.
    first = _compare(timed, runs["two_nodes"], runs["one_node"])
    assert all(e["time_change_pct"] is None for row in first["picks"] if row["pick"] != "fastest" for e in row["studies"][1:])
    assert ("The other picks' changes are against study 1, which has only the fastest: put a study ranked by time and "
            f"energy first (`autotune compare {runs['two_nodes']} {runs['one_node']} {timed}`).") in first["caveats"]


def test_another_workload_is_compared_and_said_not_to_be_like_for_like(runs):
    a, d = _pareto(runs["one_node"]), _pareto(runs["more_samples"])
    document = _compare(runs["one_node"], runs["more_samples"])
    assert document["inputs"]["differ"] == {"workload.samples": [2048, 4096]}
    assert document["caveats"][0].startswith("Not like-for-like: the studies train different jobs (they differ in workload samples)")
    fastest = document["picks"][0]["studies"][1]
    p, q = _point(a, a["recommendations"]["fastest"]), _point(d, d["recommendations"]["fastest"])
    assert fastest["time_change_pct"] == pytest.approx(_pct(q["time_s"], p["time_s"])) and fastest["time_change_pct"] > 90


def test_an_older_pareto_json_without_inputs_is_compared_on_what_it_records(runs, tmp_path):
    old = tmp_path / "old"
    old.mkdir()
    document = _pareto(runs["two_nodes"])
    for key in ("inputs", "node_counts", "gpu_counts", "schema_version", "objectives", "recommendation_parameters"):
        del document[key]
    for point in document["front"] + document["feasible"]:  # recorded before the device knobs
        assert point["params"].pop("sm_clock_mhz") == "max"
        if point["params"]["power_limit"] == 1.0:
            del point["params"]["power_limit"]
    (old / "pareto.json").write_text(json.dumps(document), encoding="utf-8")
    compared = _compare(runs["one_node"], old)
    assert compared["inputs"]["differ"] == {"node_counts": [[1], [2]], "gpu_counts": [[4], [8]]}
    assert compared["inputs"]["not_recorded"]["space.power_limit"] == [2]
    assert compared["inputs"]["not_recorded"]["proposed_by"] == [2]
    assert compared["shared_front"]["configurations"], "points without device knobs ran them untouched: they match"
    out = " ".join(autotune_main("compare", runs["one_node"], old).stdout.split())
    assert f"`autotune report {old}` writes it again with them" in out


def test_a_study_older_than_profile_pinning_is_compared_with_its_profile_not_recorded(runs, tmp_path):
    """`autotune report` on a study older than profile pinning writes `hardware_sha256: null`; compare refused that
    and told the user to run `autotune report`, which wrote the null again (a loop). Null is "not recorded": no
    "different hardware profiles" caveat; and an old [] of energy no sensor saw in a simulated study is n/a."""
    def unpinned(d):
        d["inputs"]["hardware_sha256"] = None
        d["energy_not_measured"] = []  # as autotune wrote it for a simulated study before it wrote null

    old = _edited(runs["one_node"], tmp_path, "unpinned", unpinned)
    compared = _compare(old, runs["one_node"])
    assert compared["inputs"]["not_recorded"]["hardware_sha256"] == [1]
    assert "energy_not_measured" not in compared["inputs"]["differ"]
    assert not any(c.startswith("Simulated on different") for c in compared["caveats"]), compared["caveats"]
    out = " ".join(autotune_main("compare", old, runs["one_node"]).stdout.split())
    assert ("Not compared, as the study of study 1 does not record it (made by an older autotune, before studies "
            "pinned their profile): hardware profile sha256.") in out
    assert f"`autotune report {old}`" not in out and "nothing (the sensors saw the whole node)" not in out
    # Without the key at all (a pareto.json older than `inputs.hardware_sha256`): no caveat either.
    older = _edited(runs["one_node"], tmp_path, "older", lambda d: d["inputs"].pop("hardware_sha256"))
    assert not any(c.startswith("Simulated on different") for c in _compare(older, runs["one_node"])["caveats"])


def test_an_older_estimated_energy_study_s_empty_parts_not_measured_is_no_sensor_not_the_whole_node(runs, tmp_path):
    """An older autotune wrote `energy_not_measured: []` for a study whose energy was estimated from a power model
    (trial73 #9): read at today's meaning, compare said the sensors saw the whole node, an input the studies differ
    in, beside the caveat that no sensor measured it. An estimate saw no sensor: n/a, as report rewrites it."""
    def estimated(old: bool):
        def edit(d):
            d.update(backend="launch", source="measured", energy_source="estimated", energy_not_measured=[] if old else None)
            for point in d["front"] + d["feasible"]:
                point.update(source="measured", energy_source="estimated")
        return edit

    old = _edited(runs["one_node"], tmp_path, "estimated-old", estimated(True))
    now = _edited(runs["one_node"], tmp_path, "estimated-now", estimated(False))
    compared = _compare(old, now)
    assert "energy_not_measured" not in compared["inputs"]["differ"]
    assert compared["inputs"]["same"]["energy_not_measured"] is None
    out = " ".join(autotune_main("compare", old, now).stdout.split())
    assert "nothing (the sensors saw the whole node)" not in out and "Energy of studies 1, 2 is estimated" in out


def _one_line_refusal(done, *said: str) -> None:
    assert done.returncode == 2, done.stdout
    assert done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert done.stderr.startswith("autotune compare: error: ")
    for words in said:
        assert words in done.stderr, done.stderr


def test_bad_run_directories_are_one_line_naming_the_fix(runs, tmp_path):
    one = runs["one_node"]
    _one_line_refusal(autotune_main("compare", one), "compare takes two or more run directories, and got one",
                      f"`autotune report {one}`")
    _one_line_refusal(autotune_main("compare"), "the following arguments are required: RUN_DIR")
    _one_line_refusal(autotune_main("compare", one, runs["two_nodes"], one),
                      f"{one} is given twice; pass each run directory (or pareto.json) once")
    link = tmp_path / "link"
    link.symlink_to(one)
    _one_line_refusal(autotune_main("compare", one, link), f"{link} is given twice (also as {one})")
    _one_line_refusal(autotune_main("compare", one, one / "pareto.json"),
                      f"{one / 'pareto.json'} is given twice (also as {one})")
    _one_line_refusal(autotune_main("compare", one, one / "study.db"), f"{one / 'study.db'} is not a pareto.json")
    _one_line_refusal(autotune_main("compare", one, tmp_path / "nowhere"), "does not exist")
    empty = tmp_path / "empty"
    empty.mkdir()
    # No study.db either: `autotune report` has nothing to read there, and was named as the fix.
    _one_line_refusal(autotune_main("compare", empty, one), f"{empty} holds no pareto.json, nor a study.db: pass the "
                      "--out directory of an `autotune run`, or its pareto.json")
    assert "first" not in autotune_main("compare", empty, one).stderr
    shutil.copytree(one, empty / "run")  # the folder above the run directories: they are named
    held = autotune_main("compare", empty, one)
    _one_line_refusal(held, f"(it holds the run directories {empty / 'run'}): pass one of them")
    assert "--storage" not in held.stderr  # a report of the folder above them is no fix (trial 56 #10)
    no_report = tmp_path / "no-report"
    shutil.copytree(one, no_report)
    (no_report / "pareto.json").unlink()
    done = autotune_main("compare", one, no_report)
    _one_line_refusal(done, f"{no_report} holds no pareto.json; run `autotune report {no_report}` first")
    assert autotune_main("report", no_report).returncode == 0  # the fix it names works
    assert _compare(one, no_report)["caveats"][-1].startswith("Study 2 holds the same pareto.json as study 1")


def test_a_pareto_json_file_is_compared_as_its_run_directory_is(runs, tmp_path):
    """The file alone, as a team lead hands it over: compare reads nothing else."""
    handed = tmp_path / "from-a-colleague.json"
    shutil.copyfile(runs["two_nodes"] / "pareto.json", handed)
    by_file = _compare(runs["one_node"], handed)
    by_dir = _compare(runs["one_node"], runs["two_nodes"])
    assert by_file["studies"][1]["run_dir"] == str(handed)
    assert {k: v for k, v in by_file.items() if k != "studies"} == {k: v for k, v in by_dir.items() if k != "studies"}
    handed.write_text("{", encoding="utf-8")
    _one_line_refusal(autotune_main("compare", runs["one_node"], handed), f"{handed} cannot be read: damaged",
                      "no study.db is beside it: run `autotune report RUN_DIR` on its run's --out directory (or with "
                      "the --storage and --study-name its run was given)")
    # ...not `autotune report {tmp_path}`, which report refuses: no study.db there (trial 58 F6)
    assert f"autotune report {tmp_path}`" not in autotune_main("compare", runs["one_node"], handed).stderr


@pytest.mark.parametrize("content, said", [
    ("{", "cannot be read: damaged (JSONDecodeError"),
    ("", "cannot be read: damaged (JSONDecodeError"),
    ("[1, 2]", "it holds a JSON list, not an object"),
    ("[" * 5000 + "]" * 5000, "cannot be read: damaged (RecursionError"),
])
def test_a_damaged_pareto_json_is_one_line_naming_the_report_that_rebuilds_it(runs, tmp_path, content, said):
    run_dir = tmp_path / "run"
    shutil.copytree(runs["one_node"], run_dir)
    (run_dir / "pareto.json").write_text(content, encoding="utf-8")
    _one_line_refusal(autotune_main("compare", runs["two_nodes"], run_dir), f"pareto.json in {run_dir}", said,
                      f"run `autotune report {run_dir}`, which writes it again from the study")


@pytest.mark.parametrize("damage, said", [
    (lambda d: d["front"][0].pop("time_s"), "front[0] (trial"),
    (lambda d: d.pop("recommendations"), "`recommendations` is missing"),
    (lambda d: d.pop("nodes"), "`nodes` is missing"),
    (lambda d: d.update(workload=[64]), "`workload` = [64] is not an object"),  # JSON's word, not Python's "dict"
    (lambda d: d.update(model=32), "`model` = 32 is not a string"),
    (lambda d: d.update(feasible={}), "`feasible` = {} is not a list"),
    (lambda d: d.update(front={str(p["trial"]): p for p in d["front"]}), '`front` = {"'),
    (lambda d: d.update(node_counts=[0]), "`node_counts` is not a node count or a list of them"),
    (lambda d: d["front"][0]["params"].pop("zero_stage"), "does not name every knob in `params`"),
    (lambda d: d["recommendations"].update(knee=999), "the knee pick names trial 999"),
    (lambda d: d.update(schema_version=99), "has schema_version 99, written by a newer autotune"),
    # Every number read is checked for its range too, not only its type (a newcomer's hand-edited file, trial 50):
    (lambda d: d["front"][0].update(time_s=-106.0), "`time_s` = -106.0 is out of range; it must be a number >= 1e-12"),
    (lambda d: d["front"][0].update(time_s=0.0), "`time_s` = 0.0 is out of range"),
    # A subnormal passed `> 0`, and a change in percent against it was +inf% (--json died of it: trial 58 F4):
    (lambda d: d["front"][0].update(time_s=1e-320), "`time_s` = 1e-320 is out of range"),
    (lambda d: d["front"][0].update(energy_kj=1e-320), "`energy_kj` = 1e-320 is out of range"),
    (lambda d: d["front"][0].update(time_s=1e20), "`time_s` = 1e+20 is out of range"),
    (lambda d: d["front"][0].update(energy_kj=-2051.0), "`energy_kj` = -2051.0 is out of range"),
    (lambda d: d["front"][0].update(energy_kj=1e308), "`energy_kj` = 1e+308 is out of range"),
    (lambda d: d["front"][0]["params"].update(zero_stage=7), "`params.zero_stage` = 7 is not one of the allowed values"),
    (lambda d: d["front"][0]["params"].update(power_limit=1.5), "`params.power_limit` = 1.5 is not a fraction"),
    (lambda d: d["front"][0].update(source="guessed"), '`source` = "guessed" is not one of simulated, measured'),
    (lambda d: d["workload"].update(samples=-5), "`workload.samples` = -5 is out of range"),
    (lambda d: d.update(gpu_counts=[0]), "`gpu_counts` is not a GPU count"),
    # ...and every field of `inputs` for its type: a damaged one is refused, not taken for an older autotune's.
    (lambda d: d["inputs"].update(hardware_sha256=12345), "`inputs.hardware_sha256` = 12345 is not a sha256"),
    (lambda d: d["inputs"].update(proposer_not_recorded=-1), "`inputs.proposer_not_recorded` = -1 is out of range"),
    (lambda d: d["inputs"].update(proposer_not_recorded=1.5), "`inputs.proposer_not_recorded` = 1.5 is not a whole"),
    (lambda d: d["inputs"].update(proposer_not_recorded="2"), '`inputs.proposer_not_recorded` = "2" is not a whole'),
    (lambda d: d["inputs"].update(proposer_not_recorded=True), "`inputs.proposer_not_recorded` = true is not a whole"),
    (lambda d: d["inputs"].update(proposer_not_recorded=[]), "`inputs.proposer_not_recorded` = [] is not a whole"),
    (lambda d: d["inputs"].update(proposer_not_recorded=1e30), "`inputs.proposer_not_recorded` = 1e+30 is"),
    (lambda d: d["inputs"].update(hardware_sha256="95407BCED9" + "A" * 54), "is not a sha256 (64 lowercase hexadecimal"),
    (lambda d: d["inputs"].update(space="default"), '`inputs.space` = "default" is not an object'),
    (lambda d: d["inputs"]["space"].pop("zero_stage"), "`inputs.space` lacks zero_stage"),
    (lambda d: d["inputs"]["space"].update(micro_batch=["4"]), '`inputs.space.micro_batch` holds "4"'),
    (lambda d: d["inputs"].update(proposed_by=[{"sampler": "tpe"}]), "`inputs.proposed_by[0]` lacks seed"),
    (lambda d: d["inputs"].update(measurements="x.jsonl"), '`inputs.measurements` = "x.jsonl" is not an object'),
    (lambda d: d["inputs"].update(measurements={"file": "m.jsonl", "records": 2, "sha256": "ab", "not_replayed": 5}),
     "`inputs.measurements.not_replayed` = 5 is not an object (records, why) or null"),
    (lambda d: d["inputs"].update(measurements={"file": "m.jsonl", "records": 2, "sha256": "ab",
                                                "not_replayed": {"records": 0, "why": "they hold ..."}}),
     "`inputs.measurements.not_replayed.records` = 0 is out of range"),
    (lambda d: d["workload"].update(samples="2048"), '`workload.samples` = "2048" is not a whole number'),
    (lambda d: d["recommendation_parameters"].update(eta="0.5"), '`recommendation_parameters.eta` = "0.5" is not a number'),
    (lambda d: d.update(objectives=["speed"]), '`objectives` = ["speed"] is not a list of "time" and "energy"'),
    (lambda d: d.update(search={"unfinished": {"running_elsewhere": -1}}), "`search.unfinished.running_elsewhere` = -1"),
    (lambda d: d.update(search={"unfinished": {"reason": 5}}), "`search.unfinished.reason` = 5 is not a string"),
    (lambda d: d.update(search={"converged": {"probes": 3, "unrecorded": "975"}}),
     '`search.converged.unrecorded` = "975" is not a whole number'),
    # A section a later autotune added that is not an object says what it holds, as every other value does:
    (lambda d: d.update(search=[1]), "`search` = [1] is not an object or null"),
    (lambda d: d.update(simulator_error="3%"), '`simulator_error` = "3%" is not an object or null'),
    (lambda d: d.update(recommendation_parameters=1.05), "`recommendation_parameters` = 1.05 is not an object or null"),
    (lambda d: d.update(inputs=[]), "`inputs` = [] is not an object or null"),
    (lambda d: d["front"][0].update(trial=-1), "front[0] `trial` = -1 is out of range"),
    # The parts a sensor may miss, each once: "" showed as an empty cell (trial 58 F13).
    (lambda d: d.update(energy_not_measured=[""]), '`energy_not_measured` = [""] is not a list of the parts '
                                                   'no sensor saw, each once ("gpu", "cpu", "memory_interconnect"), or null'),
    (lambda d: d.update(energy_not_measured=["gpu", "gpu"]), '`energy_not_measured` = ["gpu", "gpu"] is not a list'),
    (lambda d: d.update(energy_not_measured=["x" * 5000]), '`energy_not_measured` = ["xxxx'),
    (lambda d: d.update(energy_not_measured=[" cpu"]), '`energy_not_measured` = [" cpu"] is not a list'),
    (lambda d: d["recommendations"].update(fastest=True), "the fastest pick names trial true"),
    # `picks`, whose rows compare reads by name and trial: "knee" and [5] were a traceback, the others taken (trial78 #2).
    (lambda d: d.update(picks="knee"), '`picks` = "knee" is not a list of pick objects or null'),
    (lambda d: d.update(picks=[5]), "`picks[0]` = 5 is not an object"),
    (lambda d: d["picks"][0].update(trial=999), "`picks[0].trial` = 999 is not trial "),
    (lambda d: d["picks"][0].update(trial=str(d["picks"][0]["trial"])), "`picks[0].trial` = \""),
    (lambda d: d["picks"][0].update(name="bogus"), '`picks[0].name` = "bogus" is not a pick of `recommendations`'),
])
def test_a_pareto_json_missing_what_compare_reads_is_refused(runs, tmp_path, damage, said):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    document = _pareto(runs["one_node"])
    damage(document)
    (run_dir / "pareto.json").write_text(json.dumps(document), encoding="utf-8")
    _one_line_refusal(autotune_main("compare", runs["one_node"], run_dir), f"pareto.json in {run_dir}")
    refused = autotune_main("compare", runs["one_node"], run_dir).stderr
    assert said in refused and len(refused) < 400 + 2 * len(str(run_dir)), refused


def test_the_totals_of_a_study_of_up_to_1e12_samples_are_compared(runs, tmp_path):
    """A study's time_s and energy_kj are to process its --samples (up to 1e12): a simulated 32b study of 1e12
    samples on 4 nodes took 3.7e12 kJ, which replay reads (as its `export --measurements` writes it) and compare
    refused at 1e12, its pareto.json called damaged."""
    from autotune.backends.replay import MAX_SOLUTION_FIGURE

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    document = _pareto(runs["one_node"])
    for point in document["front"] + document["feasible"]:
        point.update(time_s=point["time_s"] * 1e10, energy_kj=point["energy_kj"] * 1e10)
    assert max(p["energy_kj"] for p in document["front"]) > 1e12
    (run_dir / "pareto.json").write_text(json.dumps(document), encoding="utf-8")
    fastest = next(pick for pick in _compare(run_dir, runs["one_node"])["picks"] if pick["pick"] == "fastest")
    trial = document["recommendations"]["fastest"]
    assert fastest["studies"][0]["energy_kj"] == _point(document, trial)["energy_kj"]
    document["front"][0].update(energy_kj=MAX_SOLUTION_FIGURE * 10)  # past it, still refused
    (run_dir / "pareto.json").write_text(json.dumps(document), encoding="utf-8")
    assert "`energy_kj` = " in autotune_main("compare", run_dir, runs["one_node"]).stderr


def test_a_change_in_percent_that_overflows_is_none_not_inf():
    from autotune.report.picks import change_pct

    assert change_pct(1e18, 1e-320) is None and change_pct(1e308, 1e-10) is None
    assert change_pct(2.0, 1.0) == pytest.approx(100.0)


def test_json_never_prints_infinity_or_nan(runs, monkeypatch, tmp_path):
    """A figure that slipped past the checks fails the JSON dump, not prints JSON's invalid `Infinity`."""
    import io

    from autotune.commands import compare as command
    from autotune.report import compare as document_module

    monkeypatch.setattr(document_module, "change_pct", lambda value, reference: float("inf"))
    monkeypatch.setattr("sys.stdout", io.StringIO())
    args = type("Args", (), {"run_dirs": [runs["one_node"], runs["two_nodes"]], "json": True})()
    with pytest.raises(ValueError, match="not JSON compliant"):
        command._run(args)


def test_studies_that_share_a_node_count_match_on_it_beside_one_that_does_not(runs):
    """Trial 50: studies of 4, 4 and 8 nodes were matched on the knobs common to all three, so the two of 4 nodes
    not on their count. Each pair is matched as exactly as it can be: study 2 on every knob, study 3 (of 2 nodes,
    no count in common with study 1) on every knob but nodes, at its own count."""
    a, c = _pareto(runs["one_node"]), _pareto(runs["two_nodes"])
    document = _compare(runs["one_node"], runs["measured"], runs["two_nodes"])
    configurations = document["shared_front"]["configurations"]
    assert configurations
    for configuration in configurations:
        assert configuration["matched_to"] == 1 and configuration["matched_without_nodes"] == [3]
        assert "nodes" in configuration["matched_on"] and configuration["params"]["nodes"] == 1
        first, second, third = configuration["studies"]
        [p] = [p for p in a["front"] if p["params"] == configuration["params"]]
        assert first[0]["trial"] == p["trial"] and [e["nodes"] for e in second] == [1]
        expected = [q["trial"] for q in c["front"] if {**q["params"], "nodes": 1} == p["params"]]
        assert [e["trial"] for e in third] == expected and all(e["nodes"] == 2 for e in third)
        if third:
            assert third[0]["time_change_pct"] == pytest.approx(_pct(third[0]["time_s"], p["time_s"]))
        else:
            assert configuration["why_absent"][2].startswith(("evaluated", "not"))
    assert any(c["studies"][2] for c in configurations), "no configuration on all three fronts: the runs show no match"
    out = " ".join(autotune_main("compare", runs["one_node"], runs["measured"], runs["two_nodes"]).stdout.split())
    assert "matched on every knob, nodes too between studies that share a node count" in out
    assert "(2 nodes)" in out and "(1 node)" not in out


def test_a_study_of_two_node_counts_matches_each_against_the_study_of_that_count(runs):
    """A study of 1 and 2 nodes against one of 1 and one of 2: no count is in all three, and matching without the
    node count put both of its points of a configuration in one row, against which no change could be computed.
    Each of its points is matched with the study that ran its count."""
    both, one, two = (_pareto(runs[name]) for name in ("one_and_two_nodes", "one_node", "two_nodes"))
    document = _compare(runs["one_and_two_nodes"], runs["one_node"], runs["two_nodes"])
    rows = {c["studies"][0][0]["trial"]: c for c in document["shared_front"]["configurations"] if c["matched_to"] == 1}
    matched = 0
    for p in both["front"]:
        same = [[q for q in other["front"] if q["params"] == p["params"]] for other in (one, two)]
        if not any(same):
            assert p["trial"] not in rows
            continue
        row = rows[p["trial"]]
        assert row["params"] == p["params"] and row["matched_without_nodes"] == []
        for number, points in enumerate(same, 2):
            entries = row["studies"][number - 1]
            assert [e["trial"] for e in entries] == [q["trial"] for q in points]
            for entry, q in zip(entries, points):
                matched += 1
                assert entry["time_change_pct"] == pytest.approx(_pct(q["time_s"], p["time_s"]))
            if not points and p["params"]["nodes"] != number - 1:
                assert row["why_absent"][number - 1] == f"not in its searched space (nodes {p['params']['nodes']})"
    assert matched >= 2 and {e["nodes"] for c in rows.values() for e in c["studies"][0]} == {1, 2}, rows


def test_each_part_of_a_table_split_at_80_columns_keeps_its_study_and_trial(runs):
    """At 80 columns a table too wide for the terminal is split: each part repeats the columns that say which row it is."""
    import io

    from rich.console import Console

    from autotune.report.compare import compare_document
    from autotune.report.compare_study import read_study
    from autotune.report.compare_table import print_comparison

    studies = [read_study(runs[name]) for name in ("one_node", "measured", "two_nodes")]
    console = Console(file=io.StringIO(), width=80, force_terminal=True, color_system=None)
    print_comparison(studies, compare_document(studies), console)
    headers = [[cell.strip() for cell in line.split("┃")[1:-1]] for line in console.file.getvalue().splitlines()
               if line.startswith("┃")]
    parts = [cells for cells in headers if "time vs 1" in cells or "configuration" in cells]
    assert len(parts) >= 3, headers  # the picks split in two or more, and the shared front
    for cells in parts:
        assert cells[cells.index("study") + 1] == "trial", cells


def test_a_study_absent_at_its_own_node_count_says_the_count(runs):
    """Under a configuration of 2 nodes, study 1 (of 1 node, matched at its own count) read "not evaluated" as if
    of 2 nodes; its trial cell says its count, as a point matched at its own count does."""
    names = ("one_node", "two_nodes", "one_and_two_nodes")
    document = _compare(*(runs[name] for name in names))
    absent = [c for c in document["shared_front"]["configurations"]
              if not c["studies"][0] and 1 in c["matched_without_nodes"]]
    assert absent, "no configuration lacks study 1 at its own count: the runs no longer show one"
    out = autotune_main("compare", *(runs[name] for name in names)).stdout
    cells = [[cell.strip() for cell in line.split("│")[1:-1]] for line in out.splitlines() if line.startswith("│")]
    rows = [row for row in cells if row[:2] == ["1", "(1 node)"]]
    assert len(rows) == len(absent) and all(row[5] for row in rows), rows  # each with its why


@pytest.mark.parametrize("names, said", [
    (("one_node", "two_gpus"), "matched on every knob)."),
    (("one_node", "two_nodes"), "matched on every knob but nodes (the studies share no node count))."),
    (("one_node", "measured", "two_nodes"), "matched on every knob, nodes too between studies that share a node count)."),
])
def test_no_shared_configuration_says_the_rule_these_studies_were_matched_by(runs, names, said):
    """Two studies of 1 node with no configuration in common read "matched on every knob, and on nodes between studies
    that share a node count (a trial at another count says it)": no trial said anything, and no pair differed."""
    import io

    from rich.console import Console

    from autotune.report.compare import compare_document
    from autotune.report.compare_study import read_study
    from autotune.report.compare_table import print_comparison

    studies = [read_study(runs[name]) for name in names]
    document = compare_document(studies)
    document["shared_front"]["configurations"] = []
    console = Console(file=io.StringIO(), width=200, color_system=None)
    print_comparison(studies, document, console)
    assert f"No configuration is on more than one study's front ({said}" in console.file.getvalue()


def test_a_study_without_figures_says_so_in_its_header():
    from autotune.report.compare_table import study_header

    document = {"model": "tiny", "nodes": 1, "hardware": "cpu", "backend": "launch", "source": "none",
                "energy_source": "none"}
    assert study_header(document) == "tiny on 1 node of cpu, backend launch; no figures"


def test_help_lists_compare_and_what_it_prints():
    top = autotune("--help")
    assert "compare the picks and fronts of two or more run directories" in top.stdout
    done = autotune("compare", "--help")
    assert done.returncode == 0
    help_text = " ".join(done.stdout.split())
    assert "usage: autotune compare [-h] [--json] RUN_DIR [RUN_DIR ...]" in help_text
    assert "the first is the reference every change is against" in help_text
    assert "simulated against measured figures, whose difference includes the simulator's error" in help_text


def test_power_limits_and_changes_read_as_the_reports_write_them(runs):
    """trial59 #10: "power limit 1 -> 0.9", no watts, and signed "+0.0%" where the reports say "1.0", the watts and
    changes in words."""
    from autotune.report.compare_table import knobs_changed_text

    assert knobs_changed_text({"nodes": [1, 2], "power_limit": [1.0, 0.9]}) == "nodes 1 -> 2, power limit 1.0 -> 0.9"
    assert [change_words(v) for v in (-49.84, 0.2, 0.04, -0.04, None)] == [
        "49.8% less", "0.2% more", "the same", "the same", "n/a"]
    document = _compare(runs["one_node"], runs["no_power_limits"])
    min_energy = next(row for row in document["picks"] if row["pick"] == "min_energy")["studies"][0]
    limit = min_energy["params"]["power_limit"]
    assert f"power limit {limit:g} x default ({limit * 680:.0f} W per module on the gh200 profile)" in min_energy["configuration"]
    out = " ".join(autotune_main("compare", runs["one_node"], runs["one_and_two_nodes"]).stdout.split())
    assert "the same" in out and "% less" in out and "+0.0%" not in out and not re.search(r"[+-]\d+\.\d%", out)


def test_an_edited_profile_gives_no_watts(runs, tmp_path):
    """The watts are of the profile the study recorded: a pareto.json whose profile hash is another's names none."""
    copy = tmp_path / "edited"
    shutil.copytree(runs["one_node"], copy)
    document = _pareto(copy)
    document["inputs"]["hardware_sha256"] = "0" * 64
    (copy / "pareto.json").write_text(json.dumps(document), encoding="utf-8")
    compared = _compare(copy, runs["one_node"])
    limited = [e for row in compared["picks"] for e in row["studies"] if e and e["params"]["power_limit"] < 1.0]
    assert limited and all((" W per " in e["configuration"]) == (n % 2 == 1)
                           for row in compared["picks"] for n, e in enumerate(row["studies"]) if e and e["params"]["power_limit"] < 1.0)


def test_picks_whose_simulated_error_is_unknown_keep_their_reports_caveat(runs):
    """Trial75 #4: with and without power limits, both simulated on one profile, compare showed the power-limited
    picks' "23.0% less" energy clean: no "+- ?%" and no caveat, where each study's own report said their error is
    unknown and to probe them before deploying."""
    limited = _pareto(runs["one_node"])
    document = _compare(runs["no_power_limits"], runs["one_node"])
    line = outside_calibration_line(limited)
    assert line and "probe them before deploying" in line
    assert f"Study 2, as its report says: {line}" in document["caveats"]
    outside = limited["simulator_error"]["extrapolated"]
    entries = [row["studies"][1] for row in document["picks"]]
    assert entries and all(e["error_unknown"] == (["time_s", "energy_kj"] if str(e["trial"]) in outside else [])
                           for e in entries)
    done = autotune_main("compare", runs["no_power_limits"], runs["one_node"])
    assert done.returncode == 0, done.stderr
    cells = [[cell.strip() for cell in row.split("│")[1:-1]] for row in done.stdout.splitlines() if row.startswith("│")]
    marked = [row for row in cells if len(row) > 5 and row[1] == "2" and row[4].endswith("+- ?%")]
    assert marked and all(row[5].endswith("+- ?%") for row in marked)
