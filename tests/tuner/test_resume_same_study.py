"""A resumed study is the same study: it keeps the hardware profile it began with (a calibrated copy or an
edited file of the same name must not mix figures computed from two sets of constants) and the backend
that evaluated it (measured and simulated figures are not one front)."""

from __future__ import annotations

import json

import optuna
import pytest

from autotune.hardware import figure_differences, hardware_to_dict, load_hardware, with_simulator_constants
from autotune.hardware.dump import dump_hardware
from tests.cli import autotune_main

RUN = ("run", "--model", "7b", "--nodes", "1", "--gpus-per-node", "2")


def _calibrated_copy(path, step_overhead_s=5e-10):
    """What `autotune calibrate -o` writes: other constants, a name of its own (its file's), its base kept."""
    from dataclasses import replace

    base = load_hardware("gh200")
    calibrated = replace(with_simulator_constants(base, {"step_overhead_s": step_overhead_s}), name=path.stem,
                         calibrated_from="gh200")
    path.write_text(dump_hardware(calibrated))
    return path


def _trials(out):
    storage = f"sqlite:///{out / 'study.db'}"
    return [(t.number, t.state, t.values) for t in optuna.load_study(study_name="autotune", storage=storage).trials]


def test_a_simulated_study_refuses_a_calibrated_copy_of_its_profile_and_keeps_its_trials(tmp_path):
    out = tmp_path / "r"
    assert autotune_main(*RUN, "--trials", "4", "--out", out).returncode == 0
    before = _trials(out)
    copy = _calibrated_copy(tmp_path / "my.toml")
    result = autotune_main(*RUN, "--trials", "8", "--out", out, "--hardware", copy)
    assert result.returncode == 2
    line = result.stderr.strip().splitlines()[-1]  # errors are one line, never folded
    assert "[simulator] step_overhead_s differs" in line and "--hardware gh200 to resume" in line and "--out NEW_DIR" in line
    assert "Traceback" not in result.stderr and _trials(out) == before
    resumed = autotune_main(*RUN, "--trials", "6", "--out", out, "--hardware", "gh200")
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming the study" in resumed.stderr and _trials(out)[:len(before)] == before


def test_an_edited_profile_file_is_refused_on_resume_of_a_simulated_study(tmp_path):
    profile = _calibrated_copy(tmp_path / "node.toml")
    out = tmp_path / "r"
    assert autotune_main(*RUN, "--trials", "3", "--out", out, "--hardware", profile).returncode == 0
    _calibrated_copy(profile, step_overhead_s=7e-10)
    result = autotune_main(*RUN, "--trials", "5", "--out", out, "--hardware", profile)
    # The flag just given is no fix: the file changed since the study began.
    said = " ".join(result.stderr.split())
    assert result.returncode == 2 and "put back the figures the file had when the study began to resume" in said
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr  # no "backend: ..." first (trial78 #3)
    assert f"--hardware {profile} to resume" not in said


def test_a_replayed_study_takes_the_new_profile_and_says_so(tmp_path):
    """Replayed measured figures do not come from the profile: it only guides the search, so a resume may bring a
    calibrated one; the study then keeps the new one for its report. (Simulated records are their profile's, and
    replay on it alone: tests/backends/test_replay_profile.py.)"""
    out, replay = _replay_study(tmp_path, measured=True)
    copy = _calibrated_copy(tmp_path / "my.toml")
    result = autotune_main(*replay, "--trials", "5", "--sampler", "random", "--hardware", copy)
    assert result.returncode == 0, result.stderr
    said = " ".join(result.stderr.split())  # rich folds long lines
    assert "the hardware profile differs from the one this study began with ([simulator] step_overhead_s)" in said
    storage = f"sqlite:///{out / 'study.db'}"
    kept = optuna.load_study(study_name="autotune", storage=storage).user_attrs["settings"]["hardware_profile"]
    assert kept["simulator"]["step_overhead_s"] == 5e-10


def _replay_study(tmp_path, measured=False):
    """A replay study of 3 trials over `space --simulate --json`'s records, or (`measured`) the same figures recorded
    as measured ones: the node's, not the profile's."""
    measurements = tmp_path / "m.json"
    listed = autotune_main("space", "--model", "7b", "--nodes", "1", "--gpus-per-node", "2", "--simulate", "--json")
    assert listed.returncode == 0, listed.stderr
    records = json.loads(listed.stdout)
    for record in records if measured else []:
        record["source"] = "measured"
        record.get("study", {}).pop("profile", None)
    measurements.write_text(json.dumps(records))
    out = tmp_path / "r"
    replay = (*RUN, "--backend", "replay", "--measurements", measurements, "--out", out)
    first = autotune_main(*replay, "--trials", "3", "--sampler", "random")
    assert first.returncode == 0, first.stderr
    return out, replay


def test_a_study_resumes_only_with_the_backend_that_evaluated_it(tmp_path):
    out, replay = _replay_study(tmp_path)
    before = _trials(out)
    for other in (("--backend", "auto"), ("--backend", "simulate")):  # auto simulates on this machine
        result = autotune_main(*RUN, *other, "--trials", "5", "--out", out)
        assert result.returncode == 2
        (line,) = result.stderr.strip().splitlines()  # the refusal alone: no "backend: ..." line first (trial78 #3)
        assert line == (f"autotune run: error: {out} holds a study evaluated by the replay backend; resuming it with the "
                        "simulate backend would put simulated figures on one front with its replayed ones: pass --backend "
                        f"replay --measurements FILE to resume (`autotune report {out}` shows it as it is), or --out "
                        "NEW_DIR (in a shared --storage, --study-name NEW) to start a new study")
        assert _trials(out) == before
    resumed = autotune_main(*replay, "--trials", "5", "--sampler", "random")
    assert resumed.returncode == 0, resumed.stderr
    after = _trials(out)
    assert after[:len(before)] == before and sum(state == optuna.trial.TrialState.COMPLETE for _, state, _ in after) == 5


def test_a_replayed_study_resumes_only_with_the_figures_it_replayed(tmp_path):
    """Another file (another cluster's export, a re-measured one) would put two files' figures on one
    front; the same figures elsewhere (a copied file, its JSON-lines export) resume."""
    out, replay = _replay_study(tmp_path)
    before = _trials(out)
    listed = json.loads((tmp_path / "m.json").read_text())
    slower = tmp_path / "slower.json"
    slower.write_text(json.dumps([{**e, "time_s": e["time_s"] * 1.3} if e.get("valid") else e for e in listed]))
    result = autotune_main(*RUN, "--backend", "replay", "--measurements", slower, "--out", out, "--trials", "5")
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()  # the refusal alone: no "backend: replay (...)" first (trial78 #3)
    assert line.startswith(f"autotune run: error: measurements {slower} gives other figures than this study replayed (trial 0: time_s ")
    assert f" in measurements {tmp_path / 'm.json'} entry " in line and "3 of 3 evaluated trials differ" in line
    assert "resume with the file it was replayed from, or pass --out NEW_DIR" in line and _trials(out) == before
    fewer = tmp_path / "fewer.json"  # the records of the trials' candidates left out
    probed = [t.params for t in optuna.load_study(study_name="autotune", storage=f"sqlite:///{out / 'study.db'}").trials]
    fewer.write_text(json.dumps([e for e in listed if {k: e["params"][k] for k in probed[0]} not in probed]))
    result = autotune_main(*RUN, "--backend", "replay", "--measurements", fewer, "--out", out, "--trials", "5")
    assert result.returncode == 2 and "(trial 0: no record here, one in measurements" in result.stderr
    lines = tmp_path / "same.jsonl"  # the same figures as JSON lines, at other line numbers
    lines.write_text("\n".join(json.dumps(e) for e in reversed(listed) if e.get("valid")))
    resumed = autotune_main(*RUN, "--backend", "replay", "--measurements", lines, "--out", out, "--trials", "5", "--sampler", "random")
    assert resumed.returncode == 0, resumed.stderr
    assert _trials(out)[:len(before)] == before and len(_trials(out)) > len(before)


def test_a_refused_run_says_the_refusal_alone_and_a_resume_still_says_its_backend_first(tmp_path):
    """trial78 #3: "backend: replay (...)" and "searching the 3 of 196 valid candidates ..." came before the refusal
    of a replay resume of a simulated study, "studying 1 node: what this machine holds" before a launcher's: lines of
    a search that never started. They are held until the checks pass, then said in their order."""
    out = tmp_path / "r"
    assert autotune_main(*RUN, "--trials", "3", "--out", out).returncode == 0
    measurements = tmp_path / "r.jsonl"
    assert autotune_main("export", out, "--measurements", measurements).returncode == 0
    refused = autotune_main(*RUN, "--backend", "replay", "--measurements", measurements, "--trials", "5", "--out", out)
    assert refused.returncode == 2
    (line,) = refused.stderr.strip().splitlines()
    assert line.startswith(f"autotune run: error: {out} holds a study evaluated by the simulate backend")
    launch = autotune_main("run", "--model", "tiny", "--hardware", "cpu", "--backend", "launch", "--trials", "2",
                           "--allow-estimated-energy", "--launcher", "srun", "--out", tmp_path / "l")
    assert launch.returncode == 2
    assert launch.stderr.strip().splitlines() == [
        "autotune run: error: the srun launcher runs inside a SLURM allocation: start autotune from sbatch or salloc"]
    resumed = autotune_main(*RUN, "--trials", "4", "--out", out)
    assert resumed.returncode == 0, resumed.stderr
    said = resumed.stderr.splitlines()
    backend = next(i for i, text in enumerate(said) if text.startswith("backend: simulate"))
    assert said[backend + 1].startswith(f"resuming the study in {out}"), said


def test_a_study_with_nothing_evaluated_yet_takes_any_backend(tmp_path):
    """A first run stopped before its first probe finished left a study with nothing to mix yet."""
    first = tmp_path / "first"
    assert autotune_main(*RUN, "--backend", "simulate", "--trials", "1", "--out", first).returncode == 0
    held = optuna.load_study(study_name="autotune", storage=f"sqlite:///{first / 'study.db'}")
    out = tmp_path / "r"
    out.mkdir()
    empty = optuna.create_study(study_name="autotune", storage=f"sqlite:///{out / 'study.db'}", directions=held.directions)
    for key, value in {**held.user_attrs, "backend": {"name": "launch", "reason": ""}}.items():
        empty.set_user_attr(key, value)
    result = autotune_main(*RUN, "--backend", "simulate", "--trials", "2", "--out", out)
    assert result.returncode == 0, result.stderr
    assert len(_trials(out)) == 2
    assert f"taking up the study in {out}, begun by an earlier or concurrent run (no candidate evaluated yet)" in result.stderr


def test_a_resume_with_other_options_names_each_one_to_repeat(tmp_path):
    from autotune.space.files import DEFAULT_SPACE

    out = tmp_path / "r"
    assert autotune_main(*RUN, "--trials", "2", "--out", out).returncode == 0
    before = _trials(out)
    space = tmp_path / "space.toml"
    space.write_text(DEFAULT_SPACE.read_text().replace("zero_stage = [0, 1, 2, 3]", "zero_stage = [2, 3]"))
    for options, said in [
        (("--model", "tiny", "--nodes", "1-2", "--gpus-per-node", "2"), "--model 7b, not tiny; --frames 60, not 2;"),
        ((*RUN[1:3], "--nodes", "1-2", *RUN[5:]), "--nodes 1, not 1-2"),
        ((*RUN[1:], "--hardware", "h100-sxm"), "--hardware gh200, not h100-sxm"),
        ((*RUN[1:], "--frames", "30", "--precision", "fp32"), "--frames 60, not 30; --precision bf16, not fp32"),
        ((*RUN[1:], "--space", space), "--space zero_stage = [0, 1, 2, 3], not [2, 3]"),
    ]:
        result = autotune_main("run", *options, "--trials", "3", "--out", out)
        assert result.returncode == 2
        line = result.stderr.strip().splitlines()[-1]
        assert line.startswith(f"autotune run: error: {out} holds a study of {said}") and line.endswith(
            "; pass --out NEW_DIR (in a shared --storage, --study-name NEW) to start a new study, or repeat the original "
            "options to resume"), line
    assert _trials(out) == before
    # The precision it ran at, named: a GPU study begun without --precision is a bf16 one (a newcomer's trial: it was
    # refused as "--precision default, not bf16").
    resumed = autotune_main(*RUN, "--precision", "bf16", "--trials", "3", "--out", out)
    assert resumed.returncode == 0, resumed.stderr


def test_only_what_a_figure_depends_on_counts_as_a_difference():
    base = hardware_to_dict(load_hardware("gh200"))
    reworded = {**base, "description": "our racks", "simulator_error": {"time_s_pct": 9.0}}
    assert figure_differences(base, reworded) == []
    last_digit = json.loads(json.dumps(base))
    last_digit["simulator"]["cpu_adam_params_per_s"] *= 1 + 1e-15  # calibrate's write-back of an unfitted constant
    assert figure_differences(base, last_digit) == []
    other = json.loads(json.dumps(base))
    other["gpu"]["memory_gib"] = 80.0
    other["simulator"]["step_overhead_s"] = 1e-9
    assert figure_differences(base, other) == ["[gpu] memory_gib", "[simulator] step_overhead_s"]


@pytest.mark.parametrize("damage", [[], "gh200", {"name": "gh200"}, {**hardware_to_dict(load_hardware("gh200")), "gpus_per_node": 0}])
def test_a_damaged_kept_profile_is_one_line(make_candidate, damage):
    from autotune.candidate import candidate_from_dict
    from autotune.errors import UserError

    data = {**make_candidate().to_file(), "hardware_profile": damage}
    with pytest.raises(UserError) as raised:
        candidate_from_dict(data)
    assert "hardware profile" in str(raised.value) and "\n" not in str(raised.value)


def test_a_candidate_file_without_a_kept_profile_loads_it_by_name(make_candidate):
    """Candidate files and studies written before profiles were kept in them name the profile only."""
    from autotune.candidate import candidate_from_dict

    data = make_candidate().to_dict()
    assert candidate_from_dict(data).hardware == load_hardware("gh200")


def test_a_study_from_before_profiles_were_kept_is_compared_by_the_profiles_name():
    from autotune.commands.options import settings_for
    from autotune.errors import UserError

    settings = settings_for("--model", "7b", "--nodes", "1")
    older = settings.to_dict()
    del older["hardware_profile"]
    assert "made by an older autotune, which did not record its hardware profile" in settings.check_same_as(
        older, "r", figures_use_profile=True)
    with pytest.raises(UserError, match="--hardware gh200, not h100-sxm"):
        settings_for("--model", "7b", "--nodes", "1", "--hardware", "h100-sxm").check_same_as(older, "r", True)


def test_a_resume_with_another_seed_or_sampler_says_so_and_draws_with_it(tmp_path):
    """They choose which candidates come next, not what a figure means (which the refused options do): the
    resume goes on, and says the study is no longer the one its seed alone gives."""
    out = tmp_path / "r"
    assert autotune_main(*RUN, "--trials", "2", "--out", out).returncode == 0
    same = autotune_main(*RUN, "--trials", "3", "--out", out)
    assert same.returncode == 0 and "--seed" not in same.stderr
    for flags, said in [(("--seed", "7"), "resuming with --seed 7, not the --seed 0 of this study's earlier runs"),
                        (("--seed", "7", "--sampler", "random"), "resuming with --sampler random, not the --sampler guided")]:
        other = autotune_main(*RUN, "--trials", "4", "--out", out, *flags)
        assert other.returncode == 0, other.stderr
        line = " ".join(other.stderr.split())
        assert said in line and "its trials are kept" in line and "pass --out NEW_DIR to start a study with" in line, line
    kept = optuna.load_study(study_name="autotune", storage=f"sqlite:///{out / 'study.db'}").user_attrs
    assert (kept["seed"], kept["sampler"]) == (7, "random")
    # In a --storage database another --out resumes the same study: the new study is another --study-name.
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    assert autotune_main(*RUN, "--trials", "2", "--storage", url, "--out", tmp_path / "s1").returncode == 0
    other = autotune_main(*RUN, "--trials", "3", "--storage", url, "--out", tmp_path / "s2", "--seed", "7")
    line = " ".join(other.stderr.split())
    assert other.returncode == 0 and "pass --study-name NEW to start a study with --seed 7" in line, line


def test_a_resume_whose_budget_the_study_already_spent_says_so(tmp_path, capsys):
    """Trial 37 F14: `--trials 5` on a study of 12 probed nothing and said nothing of why."""
    from autotune.cli import main

    out = tmp_path / "run"
    assert main(["run", "--model", "32b", "--nodes", "4", "--sampler", "random", "--trials", "12", "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["run", "--model", "32b", "--nodes", "4", "--sampler", "random", "--trials", "5", "--out", str(out)]) == 0
    said = capsys.readouterr()
    assert ("the --trials budget of 5 is spent: the study already holds 12 evaluated candidates, so this run probed none"
            in " ".join((said.out + said.err).split()))


def test_a_sigterm_while_the_reports_are_written_says_what_to_run(tmp_path, capsys, monkeypatch):
    """Trial 37 F13: a job's time limit just after its last trial killed the run by SIGTERM's default action, exit
    143 and no word of the reports it had not written."""
    import os
    import signal

    from autotune.cli import main
    from autotune.commands import finish
    from autotune.errors import Terminated

    def terminated(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGTERM)

    def unhandled(signum, frame):  # what the default action would do, without ending pytest
        raise RuntimeError("SIGTERM reached the process's own handler: the run left it unhandled")

    monkeypatch.setattr(finish, "finish_run", terminated)
    previous = signal.signal(signal.SIGTERM, unhandled)
    try:
        out = tmp_path / "run"
        with pytest.raises(Terminated):
            main(["run", "--model", "7b", "--nodes", "1", "--trials", "3", "--out", str(out)])
    finally:
        signal.signal(signal.SIGTERM, previous)
    said = capsys.readouterr()
    assert f"stopped while writing the reports of {out}: `autotune report {out} --html` writes them" in said.out + said.err


def _unpinned(out) -> None:
    """The study in `out` as an autotune older than profile pinning left it: its settings without the profile."""
    import sqlite3

    with sqlite3.connect(out / "study.db") as db:
        (value,) = db.execute("SELECT value_json FROM study_user_attributes WHERE key = 'settings'").fetchone()
        settings = json.loads(value)
        del settings["hardware_profile"]
        db.execute("UPDATE study_user_attributes SET value_json = ? WHERE key = 'settings'", (json.dumps(settings),))


def _stored_settings(out) -> dict:
    return optuna.load_study(study_name="autotune", storage=f"sqlite:///{out / 'study.db'}").user_attrs["settings"]


def test_a_study_older_than_profile_pinning_says_so_on_resume_and_is_pinned_from_then_on(tmp_path):
    """Such a study resumed on whatever profile was at its path, old and new figures mixing silently (trial52 #3):
    it is said in one line, and the profile is kept in the study, so a later edit of the file is refused."""
    profile = tmp_path / "mine.toml"
    profile.write_text(dump_hardware(load_hardware("gh200")), encoding="utf-8")
    out = tmp_path / "r"
    assert autotune_main(*RUN, "--hardware", profile, "--trials", "3", "--out", out).returncode == 0
    _unpinned(out)
    done = autotune_main(*RUN, "--hardware", profile, "--trials", "4", "--out", out, "-q")
    assert done.returncode == 0, done.stderr
    assert "made by an older autotune, which did not record its hardware profile" in " ".join((done.stdout + done.stderr).split())
    assert "hardware_profile" in _stored_settings(out)
    profile.write_text(profile.read_text(encoding="utf-8").replace("peak_bf16_tflops", "peak_bf16_tflops = 400.0\n#", 1),
                       encoding="utf-8")
    refused = autotune_main(*RUN, "--hardware", profile, "--trials", "5", "--out", out, "-q")
    assert refused.returncode == 2 and "figures came from another" in refused.stderr, refused.stderr


def test_an_unpinned_study_is_pinned_only_where_the_profile_gives_an_old_trials_figures_again(tmp_path):
    from autotune.commands.options import settings_for
    from autotune.errors import UserError
    from autotune.study.retries import is_evaluated

    out = tmp_path / "r"
    assert autotune_main(*RUN, "--trials", "3", "--out", out).returncode == 0
    study = optuna.load_study(study_name="autotune", storage=f"sqlite:///{out / 'study.db'}")
    evaluated = [t for t in study.get_trials() if is_evaluated(t)]
    older = {k: v for k, v in study.user_attrs["settings"].items() if k != "hardware_profile"}
    same = settings_for(*RUN[1:])
    said = same.check_same_as(older, "r", True, evaluated)
    assert "gives trial" in said and "figures again, and is kept in the study from now on" in said
    other = _calibrated_copy(tmp_path / "gh200.toml", step_overhead_s=0.5)
    edited = settings_for(*RUN[1:], "--hardware", str(other))
    with pytest.raises(UserError, match="does not give its figures again .*pass --out NEW_DIR"):
        edited.check_same_as({**older, "hardware_name": edited.hardware.name}, "r", True, evaluated)


def test_run_refuses_to_resume_an_unpinned_study_on_a_profile_edited_since(tmp_path):
    """`autotune run` hands the evaluated trials to the pinning check: an unpinned study whose profile file was
    edited since would mix old and new simulated figures on one front (trial52 #3), and is refused."""
    profile = tmp_path / "mine.toml"
    profile.write_text(dump_hardware(load_hardware("gh200")), encoding="utf-8")
    out = tmp_path / "r"
    assert autotune_main(*RUN, "--hardware", profile, "--trials", "3", "--out", out).returncode == 0
    _unpinned(out)
    before = _trials(out)
    profile.write_text(profile.read_text(encoding="utf-8").replace("peak_bf16_tflops", "peak_bf16_tflops = 400.0\n#", 1),
                       encoding="utf-8")
    refused = autotune_main(*RUN, "--hardware", profile, "--trials", "5", "--out", out, "-q")
    assert refused.returncode == 2, refused.stderr
    assert "does not give its figures again" in refused.stderr and "pass --out NEW_DIR" in refused.stderr
    assert _trials(out) == before


def test_a_refused_resume_names_the_model_and_profile_as_the_flags_take_them(tmp_path):
    """Trial 61 #15: "holds a study of --model Meta-Llama-3-8B + SigLIP so400m/14, not 7b": the model's name, which
    --model does not take (the study was begun with --model llama3-8b, a checkpoint's directory)."""
    from autotune.hardware import PROFILE_DIR

    (tmp_path / "llama").mkdir()
    config = {"_name_or_path": "meta-llama/Meta-Llama-3-8B", "model_type": "llama", "hidden_size": 1024,
              "intermediate_size": 2048, "num_attention_heads": 8, "num_hidden_layers": 2, "num_key_value_heads": 2,
              "vocab_size": 1000, "tie_word_embeddings": False}
    (tmp_path / "llama" / "config.json").write_text(json.dumps(config))
    (tmp_path / "node.toml").write_text((PROFILE_DIR / "h100-sxm.toml").read_text().replace('name = "h100-sxm"', 'name = "my-node"', 1))
    begun = autotune_main("run", "--model", "llama", "--hardware", "node.toml", "--nodes", "1", "--trials", "1",
                          "--out", "r", "-q", cwd=tmp_path)
    assert begun.returncode == 0, begun.stderr
    refused = autotune_main("run", "--model", "7b", "--hardware", "gh200", "--nodes", "1", "--trials", "2", "--out", "r",
                            cwd=tmp_path)
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines()[-1].startswith(
        "autotune run: error: r holds a study of --model llama (Meta-Llama-3-8B + SigLIP so400m/14), not 7b; "
        "--hardware node.toml (my-node), not gh200;"), refused.stderr
    elsewhere = tmp_path / "elsewhere"  # from another directory: the path to type from there, whole
    elsewhere.mkdir()
    refused = autotune_main("run", "--model", "tiny", "--nodes", "1", "--trials", "2", "--out", tmp_path / "r", cwd=elsewhere)
    assert f"holds a study of --model {tmp_path / 'llama'} (Meta-Llama-3-8B + SigLIP so400m/14), not tiny;" in refused.stderr


def test_a_resume_with_another_model_is_refused_as_another_study_before_its_space_is_judged(tmp_path):
    """Trial 61 #8: --out of a study of tiny on cpu, with --model of a 14B file: "nothing in the space fits in memory
    ... more --nodes", about a study that was never the question; with --hardware a100: "every candidate breaks a
    rule". The directory holding another study is said first."""
    from autotune.models import PRESETS

    out = tmp_path / "r"
    assert autotune_main("run", "--model", "tiny", "--hardware", "cpu", "--nodes", "1", "--trials", "1", "--out", out,
                         "-q").returncode == 0
    big = tmp_path / "big.json"
    big.write_text(json.dumps({**PRESETS["32b"].to_json(), "name": "big"}))
    for options, said in [(("--model", big, "--hardware", "cpu"), f"--model tiny, not {big} (big)"),
                          (("--model", "tiny", "--hardware", "h100-sxm"), "--hardware cpu, not h100-sxm")]:
        refused = autotune_main("run", *options, "--nodes", "1", "--trials", "2", "--out", out)
        assert refused.returncode == 2
        line = refused.stderr.strip().splitlines()[-1]
        assert line.startswith(f"autotune run: error: {out} holds a study of ") and said in line, line


def test_a_checkpoint_moved_or_copied_resumes_its_study(tmp_path):
    """Trial 63 #9: a checkpoint's directory moved (or copied) was "another --model": its name is its directory's, and
    the model is the same by its sizes, as a model file moved is."""
    (tmp_path / "ckpt").mkdir()
    config = {"model_type": "qwen2", "hidden_size": 896, "intermediate_size": 4864, "num_attention_heads": 14,
              "num_hidden_layers": 2, "num_key_value_heads": 2, "vocab_size": 1000, "tie_word_embeddings": True}
    (tmp_path / "ckpt" / "config.json").write_text(json.dumps(config))
    options = ("run", "--hardware", "h100-sxm", "--nodes", "1", "--out", "r", "-q")
    assert autotune_main(*options, "--model", "ckpt", "--trials", "1", cwd=tmp_path).returncode == 0
    (tmp_path / "ckpt").rename(tmp_path / "moved")
    resumed = autotune_main(*options, "--model", "moved", "--trials", "2", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    (tmp_path / "other").mkdir()  # other sizes in another directory: still another study
    (tmp_path / "other" / "config.json").write_text(json.dumps({**config, "num_hidden_layers": 3}))
    refused = autotune_main(*options, "--model", "other", "--trials", "3", cwd=tmp_path)
    assert refused.returncode == 2 and "r holds a study of --model" in refused.stderr, refused.stderr


def test_a_gpus_per_node_the_user_never_passed_is_not_listed_as_an_option_to_repeat(tmp_path):
    """Trial 63 #21: "--hardware h100-sxm, not cpu; --gpus-per-node 8, not 2": both the profiles' own, no flag gave them."""
    out = tmp_path / "r"
    assert autotune_main("run", "--model", "7b", "--hardware", "h100-sxm", "--nodes", "1", "--trials", "1", "--out", out,
                         "-q").returncode == 0
    for options, said in [(("--hardware", "cpu"), "--hardware h100-sxm, not cpu; pass --out"),
                          (("--hardware", "h100-sxm", "--gpus-per-node", "4"), "--gpus-per-node 8 (the profile's), not 4;")]:
        refused = autotune_main("run", "--model", "7b", *options, "--nodes", "1", "--trials", "2", "--out", out)
        assert refused.returncode == 2
        assert f"{out} holds a study of {said}" in refused.stderr, refused.stderr


def test_a_refusal_says_the_study_s_model_file_is_gone_rather_than_to_repeat_it(tmp_path):
    """Trial 63 #20: "holds a study of --model m2/my7.json (my7), not 7b ... or repeat the original options": m2 moved."""
    from autotune.models import PRESETS

    (tmp_path / "m2").mkdir()
    (tmp_path / "m2" / "my7.json").write_text(json.dumps({**PRESETS["tiny"].to_json(), "name": "my7"}))
    options = ("run", "--hardware", "cpu", "--nodes", "1", "--out", "r", "-q")
    assert autotune_main(*options, "--model", "m2/my7.json", "--trials", "1", cwd=tmp_path).returncode == 0
    (tmp_path / "m2").rename(tmp_path / "m2gone")
    refused = autotune_main(*options, "--model", "7b", "--trials", "2", cwd=tmp_path)
    assert refused.returncode == 2
    assert ("r holds a study of --model m2/my7.json (my7, 156.0K parameters; that file is no longer there: pass a model "
            "file of the same sizes), not 7b;") in refused.stderr, refused.stderr


def test_a_model_file_named_like_the_study_s_preset_is_said_to_be_a_file_of_other_sizes(tmp_path):
    """Trial 63 #14: "holds a study of another --model 7b (its sizes differ)" read as if --model 7b was passed."""
    from autotune.models import PRESETS

    fake = {**PRESETS["tiny"].to_json(), "name": "tiny"}
    fake["llm"] = {**fake["llm"], "layers": fake["llm"]["layers"] + 1}
    (tmp_path / "fake.json").write_text(json.dumps(fake))
    options = ("run", "--hardware", "cpu", "--nodes", "1", "--out", "r", "-q")
    assert autotune_main(*options, "--model", "tiny", "--trials", "1", cwd=tmp_path).returncode == 0
    refused = autotune_main(*options, "--model", "fake.json", "--trials", "2", cwd=tmp_path)
    assert refused.returncode == 2
    layers = PRESETS["tiny"].llm.layers
    assert (f"r holds a study of --model tiny (the preset), not fake.json (named tiny, other sizes: llm.layers "
            f"{layers + 1}, not {layers}); pass --out") in refused.stderr, refused.stderr


def test_a_refusal_quotes_a_model_path_holding_a_newline_so_that_bash_gives_it_back(tmp_path):
    """Trial 63 #23: the study's --model 'ev ...q"<newline>Z.json' was shown shlex-quoted, the newline a space on the
    terminal, and the option pasted back named no file: control characters are written as bash's $'...\\x0a...'."""
    import subprocess

    from autotune.models import PRESETS
    from autotune.shell import shell_path
    from autotune.study.storage import storage_flags

    name = "ev $(touch pwned)`touch pwned2`'q\"\nZ.json"
    (tmp_path / name).write_text(json.dumps({**PRESETS["tiny"].to_json(), "name": "evil"}))
    options = ("run", "--hardware", "cpu", "--nodes", "1", "--out", "r", "-q")
    assert autotune_main(*options, "--model", name, "--trials", "1", cwd=tmp_path).returncode == 0
    refused = autotune_main(*options, "--model", "7b", "--trials", "2", cwd=tmp_path)
    assert refused.returncode == 2
    line = refused.stderr.strip().splitlines()[-1]
    typed = line.partition("holds a study of --model ")[2].partition(" (evil), not 7b;")[0]
    assert typed.startswith("$'") and "\\x0a" in typed, line
    url = f"sqlite:///{tmp_path}/a\nb.db"  # a --storage said back to paste, as the --model is
    stored = storage_flags(url).removeprefix(" --storage ")
    for word, path in [(typed, name), (shell_path("-a\tb"), "./-a\tb"), (shell_path("x\x7fy"), "x\x7fy"), (stored, url)]:
        given_back = subprocess.run(["bash", "-c", f"printf %s {word}"], capture_output=True, check=True, cwd=tmp_path)
        assert given_back.stdout.decode() == path, word
    assert not (tmp_path / "pwned").exists() and not (tmp_path / "pwned2").exists()


def test_a_changed_sampler_names_every_earlier_run_s_as_proposed_by_lists_them(tmp_path):
    """Trial74 #8: the line named the last run's sampler and seed only ("not the --sampler tpe --seed 0 of this study's
    earlier runs ... the study --sampler tpe --seed 0 alone gives") for a study of guided, then tpe trials, and said
    back a sampler and seed edited by hand in the study's attributes ('foo', 'abc') that no trial was proposed by."""
    out = tmp_path / "r"
    assert autotune_main(*RUN, "--trials", "2", "--out", out).returncode == 0
    assert autotune_main(*RUN, "--trials", "4", "--sampler", "tpe", "--out", out).returncode == 0
    other = autotune_main(*RUN, "--trials", "6", "--sampler", "guided", "--seed", "7", "--out", out)
    line = " ".join(other.stderr.split())
    assert other.returncode == 0 and ("resuming with --sampler guided --seed 7, not the --sampler guided, then tpe, "
                                      "--seed 0 of this study's earlier runs") in line, line
    assert "so it is no longer the study --sampler guided, then tpe, --seed 0 gives" in line, line
    study = optuna.load_study(study_name="autotune", storage=f"sqlite:///{out / 'study.db'}")
    assert any((t.user_attrs.get("proposed_by") or {}).get("seed") == 7 for t in study.trials)  # the last run's
    study.set_user_attr("sampler", "foo")
    study.set_user_attr("seed", "abc")
    same = autotune_main(*RUN, "--trials", "7", "--sampler", "guided", "--seed", "7", "--out", out)
    assert same.returncode == 0 and "resuming with" not in same.stderr and "foo" not in same.stderr, same.stderr
