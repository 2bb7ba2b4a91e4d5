"""What `autotune export` writes never replaces a file it did not write itself: a probe's measured
result.json, a run's pareto.json, a user's own file or a measurements file (the only copy of probes
measured elsewhere) is one line and exit 2, and stays as it was."""

import json
import os
import shutil

import pytest

from tests.cli import autotune_main, simulated_run


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    return simulated_run(tmp_path_factory, nodes=2, trials=5)


@pytest.fixture
def run_dir(finished_run, tmp_path):
    """A copy with a probe's trial directory, as the launch backend leaves it."""
    run = tmp_path / "run"
    shutil.copytree(finished_run, run)
    trial = run / "trials" / "0002"
    trial.mkdir(parents=True)
    (trial / "result.json").write_text(json.dumps({"status": "ok", "time_s": 12.5, "energy_kj": 3.2}) + "\n")
    return run


def _refused(result, *words):
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr and all(word in lines[0] for word in words), (words, lines[0])


def test_export_never_replaces_a_file_it_did_not_write(run_dir, tmp_path):
    result_json = run_dir / "trials" / "0002" / "result.json"
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    link = tmp_path / "link.json"
    link.symlink_to(result_json)
    targets = {
        result_json: "is a probe's measured result",
        run_dir / "pareto.json": "is a run's pareto.json",
        notes: "is an existing file",
        link: f"names a probe's measured result ({result_json})",
    }
    before = {path: path.read_bytes() for path in (result_json, run_dir / "pareto.json", notes)}
    for target, what in targets.items():
        _refused(autotune_main("export", run_dir, "--trial", "2", "-o", target), f"-o {target} {what}",
                 "not a config an earlier `autotune export` wrote", "move it away or give another file name")
    assert {path: path.read_bytes() for path in before} == before
    assert sorted(p.name for p in result_json.parent.iterdir()) == ["result.json"]  # nothing written beside it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.json", "notes.txt", "run"]


def test_an_earlier_export_is_replaced_and_a_file_beside_it_that_is_not_one_is_kept(run_dir, tmp_path):
    config = tmp_path / "mine.json"
    assert autotune_main("export", run_dir, "--pick", "fastest", "-o", config).returncode == 0
    again = autotune_main("export", run_dir, "--pick", "knee", "-o", config)
    assert again.returncode == 0, again.stderr
    assert json.loads(config.read_text())["autotune"]["trial"] == json.loads((run_dir / "pareto.json").read_text())["recommendations"]["knee"]
    (tmp_path / "mine.launch.sh").write_text("#!/bin/bash\nmy own job script\n")
    _refused(autotune_main("export", run_dir, "--pick", "knee", "-o", config),
             f"beside it, {tmp_path / 'mine.launch.sh'} is an existing file", "not a launch script")
    assert (tmp_path / "mine.launch.sh").read_text() == "#!/bin/bash\nmy own job script\n"
    # A config file of the run's own configs/ that export did not write: the default output is refused too.
    (run_dir / "configs" / "knee.json").write_text('{"my": "config"}\n')
    _refused(autotune_main("export", run_dir, "--pick", "knee"), "-o's default", "move it away or pass -o FILE")
    # Read-only: protected on purpose (a rename would replace it even so, and root ignores the bits).
    config.chmod(0o444)
    _refused(autotune_main("export", run_dir, "--pick", "knee", "-o", config), "is a read-only file")


def test_an_empty_file_is_no_loss(run_dir, tmp_path):
    """`f=$(mktemp); autotune export ... -o $f` holds nothing yet."""
    empty = tmp_path / "tmp.x1y2"
    empty.write_text("")
    assert autotune_main("export", run_dir, "-o", empty).returncode == 0
    assert "autotune" in json.loads(empty.read_text())
    # Its files beside it take its whole name: a second mktemp's export wrote tmp.launch.sh over the first's.
    assert (tmp_path / "tmp.x1y2.launch.sh").is_file() and (tmp_path / "tmp.x1y2.candidate.json").is_file()
    again = tmp_path / "tmp.z3w4"
    again.write_text("")
    assert autotune_main("export", run_dir, "--pick", "fastest", "-o", again).returncode == 0
    assert "tmp.x1y2" in (tmp_path / "tmp.x1y2.launch.sh").read_text() and "tmp.z3w4" in (tmp_path / "tmp.z3w4.launch.sh").read_text()
    assert not (tmp_path / "tmp.launch.sh").exists()


def test_a_measurements_file_is_replaced_only_with_force_and_nothing_else_ever(run_dir, tmp_path):
    measurements = tmp_path / "m.jsonl"
    first = autotune_main("export", run_dir, "--measurements", measurements)
    assert first.returncode == 0, first.stderr
    kept = measurements.read_text()
    _refused(autotune_main("export", run_dir, "--measurements", measurements),
             f"--measurements {measurements} already holds 5 simulated results;", f"such as {tmp_path / 'm-2.jsonl'}",
             "or pass --force to replace it")
    assert measurements.read_text() == kept
    forced = autotune_main("export", run_dir, "--measurements", measurements, "--force")
    assert forced.returncode == 0, forced.stderr
    result_json = run_dir / "trials" / "0002" / "result.json"
    before = result_json.read_text()
    for target in (result_json, run_dir / "pareto.json", run_dir / "configs" / "knee.json"):
        _refused(autotune_main("export", run_dir, "--measurements", target, "--force"),
                 "not a measurements file an earlier export wrote")
    assert result_json.read_text() == before
    _refused(autotune_main("export", run_dir, "-o", tmp_path / "x.json", "--force"), "--force", "drop --force")
    assert not (tmp_path / "x.json").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes in a read-only directory")
def test_a_read_only_directory_is_one_line(run_dir, tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    _refused(autotune_main("export", run_dir, "--measurements", locked / "m.jsonl"), "cannot write in")
