"""A run directory whose study is in a --storage database names that database (trial 32's #10):
pareto.json keeps the URL (password hidden), and `autotune report RUN_DIR` says the flags to pass."""

from __future__ import annotations

import json
import shlex
import shutil

from autotune.study.storage import recorded_storage
from tests.cli import autotune_main


def test_report_of_a_storage_run_names_its_url_and_study(tmp_path):
    url = f"sqlite:///{tmp_path / 'shared db.db'}"
    out = tmp_path / "s1"
    done = autotune_main("run", "--model", "tiny", "--nodes", "1", "--trials", "3", "--storage", url,
                         "--study-name", "s1", "--out", out)
    assert done.returncode == 0, done.stderr
    document = json.loads((out / "pareto.json").read_text())
    assert (document["storage"], document["study_name"]) == (url, "s1")
    refused = autotune_main("report", out)
    lines = refused.stderr.strip().splitlines()
    assert refused.returncode == 2 and len(lines) == 1, refused.stderr
    assert lines[0].endswith(f"pass --storage {shlex.quote(url)} --study-name s1"), lines[0]
    again = autotune_main("report", out, "--storage", url, "--study-name", "s1")  # what it says works
    assert again.returncode == 0, again.stderr
    # The report it writes keeps the URL: a later bare `report RUN_DIR` still names it.
    assert json.loads((out / "pareto.json").read_text())["storage"] == url
    assert autotune_main("report", out).stderr.strip().endswith(f"pass --storage {shlex.quote(url)} --study-name s1")


def test_a_relative_sqlite_url_is_recorded_absolute_so_its_hint_works_from_anywhere(tmp_path):
    """Trial 66 #7: `--storage sqlite:///shared.db` was recorded as given, and the hint `report` printed from another
    directory named a database that is not there."""
    (tmp_path / "sub").mkdir()
    done = autotune_main("run", "--model", "tiny", "--nodes", "1", "--trials", "3", "--storage", "sqlite:///shared.db",
                         "--study-name", "s1", "--out", "s1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    assert json.loads((tmp_path / "s1" / "pareto.json").read_text())["storage"] == url
    refused = autotune_main("report", "../s1", cwd=tmp_path / "sub")
    assert refused.stderr.strip().endswith(f"pass --storage {shlex.quote(url)} --study-name s1"), refused.stderr
    again = autotune_main("report", "../s1", "--storage", url, "--study-name", "s1", cwd=tmp_path / "sub")
    assert again.returncode == 0 and "were of" not in again.stderr, again.stderr  # the same database: not repointed


def test_a_run_directory_study_records_no_storage(tmp_path):
    done = autotune_main("run", "--model", "tiny", "--nodes", "1", "--trials", "3", "--out", tmp_path / "own")
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "own" / "pareto.json").read_text())["storage"] is None  # the key in every pareto.json


def test_a_recorded_url_hides_its_password():
    assert recorded_storage("postgresql://tuner:s3cret@db.example/autotune") == "postgresql://tuner:***@db.example/autotune"
    assert recorded_storage("sqlite:////runs/shared.db") == "sqlite:////runs/shared.db"


def _files(run_dir) -> dict:
    return {p.relative_to(run_dir): p.read_bytes() for p in run_dir.rglob("*") if p.is_file()}


def test_a_report_of_another_database_is_refused_in_a_run_directory_with_its_own_study_db(tmp_path):
    """`report RUN_DIR --storage COPY` pointed the pareto.json of a directory with a study.db at the copy, and the next
    bare report pointed it back, each time rewriting the reports from another database (trial 45's defect 2)."""
    out = tmp_path / "own"
    assert autotune_main("run", "--model", "tiny", "--nodes", "1", "--trials", "3", "--out", out).returncode == 0
    (tmp_path / "elsewhere").mkdir()
    shutil.copy(out / "study.db", tmp_path / "elsewhere" / "study.db")
    before = _files(out)
    copy = f"sqlite:///{tmp_path / 'elsewhere' / 'study.db'}"
    refused = autotune_main("report", out, "--storage", copy)
    lines = refused.stderr.strip().splitlines()
    assert refused.returncode == 2 and len(lines) == 1 and refused.stdout == "", refused.stderr
    assert lines[0].startswith(f"autotune report: error: RUN_DIR {out} keeps its study in its own study.db")
    assert f"--storage {copy} is another database" in lines[0] and f"move {out / 'study.db'} out of {out}" in lines[0]
    assert _files(out) == before
    # Its own study.db by a URL is the directory's study: reported, and recorded as without --storage.
    same = autotune_main("report", out, "--storage", f"sqlite:///{out / 'study.db'}")
    assert same.returncode == 0 and same.stderr == "", same.stderr
    assert json.loads((out / "pareto.json").read_text())["storage"] is None


def test_a_run_of_another_database_is_refused_in_a_run_directory_with_its_own_study_db(tmp_path):
    """Trial74 #9: `run --storage COPY --out RUN_DIR`, where RUN_DIR's own study.db holds the original, was taken: it
    probed into the copy and wrote the copy's reports over RUN_DIR's, which the next bare report flipped back. Refused
    now, before any probe, as `report` refuses the same."""
    import optuna

    out = tmp_path / "own"
    assert autotune_main("run", "--model", "tiny", "--nodes", "1", "--trials", "2", "--out", out).returncode == 0
    copy = f"sqlite:///{tmp_path / 'copy.db'}"
    optuna.copy_study(from_study_name="autotune", from_storage=f"sqlite:///{out / 'study.db'}", to_storage=copy)
    before = _files(out)
    refused = autotune_main("run", "--model", "tiny", "--nodes", "1", "--trials", "4", "--storage", copy, "--out", out)
    lines = refused.stderr.strip().splitlines()
    assert refused.returncode == 2 and lines[-1].startswith(
        f"autotune run: error: --out {out} keeps its study in its own study.db, and its reports (pareto.json, configs/) "
        f"are of that one; --storage {copy} is another database"), refused.stderr
    assert f"run it into a directory of its own (--out NEW_DIR), drop --storage to resume {out / 'study.db'}" in lines[-1]
    assert _files(out) == before
    assert len(optuna.load_study(study_name="autotune", storage=copy).trials) == 2  # nothing probed into the copy


def test_a_run_directory_s_own_study_db_is_said_before_another_storage_is_opened(tmp_path):
    """`report RUN_DIR --storage OTHER` opened OTHER first: one without the study was refused as "no autotune study
    named ... in OTHER", one of another study by its reports, and a URL of a driver not installed by that, as if
    RUN_DIR kept no study of its own."""
    out = tmp_path / "own"
    assert autotune_main("run", "--model", "tiny", "--nodes", "1", "--trials", "2", "--out", out).returncode == 0
    other = tmp_path / "other"
    assert autotune_main("run", "--model", "tiny", "--nodes", "1", "--trials", "2", "--out", other, "--storage",
                         f"sqlite:///{tmp_path / 'shared.db'}", "--study-name", "alpha").returncode == 0
    for flags in (("--storage", f"sqlite:///{tmp_path / 'shared.db'}"),
                  ("--storage", f"sqlite:///{tmp_path / 'shared.db'}", "--study-name", "alpha"),
                  ("--storage", "nosuchdriver://u@h/db")):
        refused = autotune_main("report", out, *flags)
        lines = refused.stderr.strip().splitlines()
        assert refused.returncode == 2 and len(lines) == 1, (flags, refused.stderr)
        assert lines[0].startswith(f"autotune report: error: RUN_DIR {out} keeps its study in its own study.db"), lines
    missing = autotune_main("report", other, "--storage", f"sqlite:///{tmp_path / 'shared.db'}", "--study-name", "beta")
    assert missing.returncode == 2 and missing.stderr.strip().splitlines() == [
        f"autotune report: error: no autotune study named 'beta' in sqlite:///{tmp_path / 'shared.db'}; it holds alpha: "
        "pass --study-name alpha"]
    gone = autotune_main("report", tmp_path / "gone", "--storage", f"sqlite:///{tmp_path / 'new.db'}")
    assert gone.returncode == 2 and gone.stderr.strip().splitlines() == [
        f"autotune report: error: --storage 'sqlite:///{tmp_path / 'new.db'}': there is no database at "
        f"{tmp_path / 'new.db'}; pass the URL the run used (a relative sqlite:///PATH is read from the current directory)"]
    assert not (tmp_path / "new.db").exists() and not (tmp_path / "gone").exists()  # the RUN_DIR made for it removed


def test_a_storage_study_is_reported_into_a_run_directory_made_for_it(tmp_path):
    """A second machine reading a shared --storage study has no run directory for it: `report NEW_DIR --storage URL`
    said "NEW_DIR does not exist; pass the --out directory of an `autotune run`", which is on another machine
    (trial 66 §12). NEW_DIR is created, as --out and -o paths are, and said so; without --storage it is still refused."""
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    assert autotune_main("run", "--model", "tiny", "--nodes", "1", "--trials", "2", "--storage", url, "--study-name",
                         "s1", "--out", tmp_path / "worker").returncode == 0
    new = tmp_path / "here" / "s1"
    made = autotune_main("report", new, "--storage", url, "--study-name", "s1", "--json")
    assert made.returncode == 0, made.stderr
    assert made.stderr.strip().splitlines() == [f"created {new} for the reports of the study in {url}: wrote pareto.json, "
                                                "configs/"]
    assert json.loads(made.stdout) == json.loads((new / "pareto.json").read_text())
    assert autotune_main("report", new, "--storage", url, "--study-name", "s1").stderr == ""  # made once: nothing said
    refused = autotune_main("report", tmp_path / "gone")
    assert refused.returncode == 2 and refused.stderr.strip().splitlines() == [
        f"autotune report: error: {tmp_path / 'gone'} does not exist; pass the --out directory of an `autotune run`"]
    # export reads the study into a run directory's configs/: it names the report that makes one, which then exports.
    elsewhere = tmp_path / "there"
    refused = autotune_main("export", elsewhere, "--storage", url, "--study-name", "s1", "--pick", "fastest")
    said = f"`autotune report {elsewhere} --storage {url} --study-name s1` creates it with the study's reports"
    assert refused.returncode == 2 and said in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    assert not elsewhere.exists()
    assert autotune_main("report", elsewhere, "--storage", url, "--study-name", "s1").returncode == 0
    exported = autotune_main("export", elsewhere, "--storage", url, "--study-name", "s1", "--pick", "fastest")
    assert exported.returncode == 0 and (elsewhere / "configs" / "fastest.json").is_file(), exported.stderr


def test_a_storage_study_is_not_reported_into_a_folder_of_other_files(tmp_path):
    """trial68 #11: `report . --storage URL` in a working folder wrote pareto.json and configs/ among its files without
    a word, and every later `run --out SUBDIR` there was refused as inside a run directory. An empty folder (mkdir
    NEW_DIR, as other lines advise) still takes the reports."""
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    assert autotune_main("run", "--model", "tiny", "--nodes", "1", "--trials", "2", "--storage", url, "--study-name",
                         "s1", "--out", tmp_path / "worker").returncode == 0
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("mine\n")
    refused = autotune_main("report", work, "--storage", url, "--study-name", "s1")
    assert refused.returncode == 2 and refused.stderr.strip().splitlines() == [
        f"autotune report: error: RUN_DIR {work} holds no run, but other files (notes.txt): the reports (pareto.json, "
        "configs/) would be written among them, and every `autotune run --out` below it then refused as inside a run "
        "directory; report into a directory of its own: autotune report NEW_DIR --storage URL (NEW_DIR is created)"]
    assert sorted(p.name for p in work.iterdir()) == ["notes.txt"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert autotune_main("report", empty, "--storage", url, "--study-name", "s1").returncode == 0
    assert autotune_main("report", empty, "--storage", url, "--study-name", "s1").returncode == 0  # its own reports: again


def test_a_report_of_a_copy_of_a_storage_study_says_its_reports_now_describe_the_copy(tmp_path):
    url, copy = f"sqlite:///{tmp_path / 'shared.db'}", f"sqlite:///{tmp_path / 'moved.db'}"
    out = tmp_path / "s"
    assert autotune_main("run", "--model", "tiny", "--nodes", "1", "--trials", "3", "--storage", url, "--out", out).returncode == 0
    shutil.copy(tmp_path / "shared.db", tmp_path / "moved.db")
    moved = autotune_main("report", out, "--storage", copy)
    assert moved.returncode == 0, moved.stderr
    assert (f"RUN_DIR {out}: its reports (pareto.json, configs/) were of --storage {url} and are now of --storage {copy} "
            f"(the same study by the trials its pareto.json listed: a copy or a move of it), which `autotune report {out}` "
            "names from now on") in moved.stderr.splitlines()
    assert json.loads((out / "pareto.json").read_text())["storage"] == copy
    assert autotune_main("report", out).stderr.strip().endswith(f"pass --storage {copy} --study-name autotune")
    again = autotune_main("report", out, "--storage", copy)  # nothing changes: nothing said
    assert again.returncode == 0 and "were of" not in again.stderr, again.stderr
