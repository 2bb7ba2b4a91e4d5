"""`export -o knee` and `export -o knee.json` name their candidate file and launch.sh alike (knee.candidate.json,
knee.launch.sh): a newcomer's trial exported both, and the second launch.sh, over the first, trained the other config.
The second is refused in one line, and the first export stays whole."""

import json

import pytest

from tests.cli import autotune, autotune_main, simulated_run


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    return simulated_run(tmp_path_factory, nodes=1, trials=3)


@pytest.mark.parametrize("first, second", [("knee", "knee.json"), ("knee.json", "knee"), ("knee", "knee.JSON"),
                                           ("a.b.json", "a.b"), ("x.json.json", "x.json.JSON")])
def test_the_other_spelling_of_an_exported_config_is_refused(finished, tmp_path, first, second):
    assert autotune_main("export", finished, "-o", first, cwd=tmp_path).returncode == 0
    before = {path.name: path.read_bytes() for path in tmp_path.iterdir()}
    refused = autotune("export", finished, "--pick", "fastest", "-o", second, cwd=tmp_path)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    stem = first[:-len(".json")] if first.endswith(".json") else first
    assert (f"autotune export: error: -o {second}: {first} is a config an earlier export wrote, and both would have "
            f"{stem}.candidate.json and {stem}.launch.sh beside them") in refused.stderr
    assert f"pass -o {first} to replace that export, or another name" in refused.stderr
    assert {path.name: path.read_bytes() for path in tmp_path.iterdir()} == before
    launch = (tmp_path / f"{stem}.launch.sh").read_text()
    assert f"--deepspeed-config {first} " in launch  # the first export's script still trains its own config


def test_the_same_spelling_again_replaces_its_own_export(finished, tmp_path):
    for _ in range(2):
        assert autotune_main("export", finished, "-o", "knee", cwd=tmp_path).returncode == 0
    assert sorted(path.name for path in tmp_path.iterdir()) == ["knee", "knee.candidate.json", "knee.launch.sh"]


def test_a_file_of_the_other_spelling_that_no_export_wrote_is_no_namesake(finished, tmp_path):
    (tmp_path / "knee").write_text(json.dumps({"mine": True}))  # a user's own file: export's files are not its
    done = autotune_main("export", finished, "-o", "knee.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "knee").read_text()) == {"mine": True}
