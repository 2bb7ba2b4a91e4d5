"""docs/run-directory.md says "what each file in it holds": every file a run writes there is named on it (trial67
#13: `.workers.lock` and `.reports.lock` were not, and a user cleaning a run directory could not tell whether
deleting them was safe)."""

from pathlib import Path

from autotune.commands.run import RUN_DIR_FILES

PAGE = (Path(__file__).resolve().parents[2] / "docs" / "run-directory.md").read_text(encoding="utf-8")


def test_every_file_a_run_writes_is_named_on_the_run_directory_page():
    assert [name for name in RUN_DIR_FILES if f"`{name}" not in PAGE] == []
