"""Opening a study's storage: workers that start together on a new SQLite file both get the study."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import re
from pathlib import Path

import optuna
import pytest

from autotune.errors import UserError
from autotune.study.storage import open_study

ROUNDS = 8


def _open_when_both_ready(run_dir, barrier, results) -> None:
    barrier.wait(timeout=60)
    try:
        open_study(run_dir, None, None)
        results.put("ok")
    except UserError as exc:
        results.put(str(exc))


def _two_workers_at_once(target, run_dir) -> list:
    """Two forked processes that run `target(run_dir, barrier, results)` past one barrier: what they put."""
    context = multiprocessing.get_context("fork")
    barrier, results = context.Barrier(2), context.Queue()
    workers = [context.Process(target=target, args=(run_dir, barrier, results)) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert [worker.exitcode for worker in workers] == [0, 0]
    return sorted(results.get(timeout=5) for _ in workers)


def test_workers_starting_together_on_a_new_sqlite_file_both_open_the_study(tmp_path):
    """Both create Optuna's tables at once (without the retry, a round fails about half the time:
    'table studies already exists', 'UNIQUE constraint failed: alembic_version.version_num')."""
    for round_ in range(ROUNDS):
        assert _two_workers_at_once(_open_when_both_ready, tmp_path / f"run{round_}") == ["ok", "ok"], f"round {round_}"


def _ask_when_both_ready(run_dir, barrier, results) -> None:
    study = open_study(run_dir, None, None)
    barrier.wait(timeout=60)
    results.put(study.ask().number)


def test_two_workers_never_pop_one_queued_trial_both(tmp_path):
    """Optuna reads a queued trial "for update" before it marks it running, which SQLite cannot lock:
    without BEGIN IMMEDIATE both workers got the queued trial in 17 of 20 rounds, and the slower one
    died on "Cannot tell a COMPLETE trial" (the baseline is queued so; optuna/optuna#4621)."""
    for round_ in range(ROUNDS):
        run_dir = tmp_path / f"run{round_}"
        study = open_study(run_dir, None, None)
        study.set_user_attr("settings", {})  # what autotune's own studies hold before their first trial
        study.enqueue_trial({"x": 1})
        assert _two_workers_at_once(_ask_when_both_ready, run_dir) == [0, 1], f"round {round_}: both ran trial 0"


def test_a_storage_that_cannot_be_opened_is_one_line_naming_the_url(tmp_path):
    with pytest.raises(UserError, match=r"--storage 'sqlite:////nonexistent-dir/x.db': the directory /nonexistent-dir does not exist"):
        open_study(tmp_path, "sqlite:////nonexistent-dir/x.db", None)
    with pytest.raises(UserError, match=r"cannot open study storage 'journal:log' \(Could not parse .*sqlite:///PATH, postgresql://"):
        open_study(tmp_path, "journal:log", None)


@pytest.mark.parametrize("url, blocked, said", [
    ("postgresql://u:pw@127.0.0.1:1/db", "psycopg", "--storage 'postgresql://u:***@127.0.0.1:1/db' needs the postgresql "
     'driver psycopg, which is not installed: pip install -e ".[postgres]" in autotune\'s source folder'),
    ("postgresql+psycopg2://u@h/db", "psycopg2", "--storage 'postgresql+psycopg2://u@h/db' needs the postgresql driver "
     "psycopg2, which is not installed: write the URL as postgresql+psycopg://u@h/db to use psycopg, which pip install "
     '-e ".[postgres]" installs, or pip install psycopg2-binary'),
    ("mysql+pymysql://u@h/db", "pymysql", "--storage 'mysql+pymysql://u@h/db' needs the mysql driver pymysql, which is "
     "not installed: pip install pymysql"),
    ("nosuch://u@h/db", None, "--storage 'nosuch://u@h/db': 'nosuch' is no database SQLAlchemy knows; write "
     "sqlite:///PATH or postgresql://USER@HOST/DB"),
])
def test_a_storage_whose_driver_is_missing_names_it_and_how_to_install_it(tmp_path, monkeypatch, url, blocked, said):
    """Optuna's "Failed to import DB access module for the specified storage URL. Please install appropriate one" came
    with "check the URL ..., the server and its driver": no module named, and not the project's extra that has it."""
    import sys

    if blocked:
        monkeypatch.setitem(sys.modules, blocked, None)  # as where it is not installed
    with pytest.raises(UserError) as refused:
        open_study(tmp_path, url, None)
    assert str(refused.value).startswith(said) and "\n" not in str(refused.value), str(refused.value)
    assert "pw" not in str(refused.value)


def test_a_storage_server_not_reached_is_said_as_such(tmp_path):
    pytest.importorskip("psycopg")
    with pytest.raises(UserError) as refused:
        open_study(tmp_path, "postgresql://u@127.0.0.1:1/db", None)  # nothing listens on port 1
    said = str(refused.value)
    assert said.startswith("cannot open study storage 'postgresql://u@127.0.0.1:1/db': its server was not reached or "
                           "turned the connection away (connection failed: ") and "\n" not in said, said
    assert said.endswith("Connection refused); start the server, or correct the URL's host, port, user, password or "
                         "database name"), said


def test_a_damaged_storage_file_is_said_damaged_not_a_url_to_check(tmp_path):
    (tmp_path / "junk.db").write_text("not a database, only text long enough for SQLite to read its header\n" * 2)
    url = f"sqlite:///{tmp_path / 'junk.db'}"
    with pytest.raises(UserError) as refused:
        open_study(tmp_path / "run", url, None)
    assert str(refused.value) == (f"cannot open study storage {url!r} ((sqlite3.DatabaseError) file is not a database); "
                                  "it is damaged or no study database: pass the URL the run used, or restore the file "
                                  "from a copy")


def test_a_read_only_study_db_is_said_read_only_not_damaged(tmp_path, monkeypatch):
    """SQLite's "attempt to write a readonly database" (a read-only mount, a file root alone may write) read "it is
    damaged or not a study: restore it from a copy" of a healthy file."""
    import sqlite3

    import sqlalchemy

    from autotune.study import storage

    assert open_study(tmp_path, None, None) is not None
    def read_only(*args, **kwargs):
        raise sqlalchemy.exc.OperationalError("INSERT ...", {}, sqlite3.OperationalError("attempt to write a readonly database"))

    monkeypatch.setattr(storage.optuna.storages, "RDBStorage", read_only)
    with pytest.raises(UserError) as refused:
        open_study(tmp_path, None, None)
    assert str(refused.value).startswith(f"the study database {tmp_path / 'study.db'} cannot be written (the file or its "
                                         "directory is read-only"), str(refused.value)
    assert "damaged" not in str(refused.value)


def test_a_storage_naming_a_directory_says_so_and_names_the_study_db_in_it(tmp_path):
    """"there is no database at RUN_DIR" (trial 58 F11), of a directory; a run's storage got SQLite's "unable to
    open database file"."""
    from autotune.study.storage import load_finished_study

    open_study(tmp_path / "run", None, None)
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError) as refused:
        load_finished_study(tmp_path / "run", f"sqlite:///{tmp_path / 'run'}")
    assert str(refused.value) == (f"--storage 'sqlite:///{tmp_path / 'run'}' names the directory {tmp_path / 'run'}, not "
                                  f"a database file; pass --storage sqlite:///{tmp_path / 'run' / 'study.db'}, the "
                                  "study.db in it, or leave out --storage if it is RUN_DIR's own")
    for read in (load_finished_study, lambda run_dir, url: open_study(run_dir, url, None)):
        with pytest.raises(UserError, match=f"names the directory {tmp_path / 'empty'}, not a database file; name a "
                                            f"database file in it \\(--storage sqlite:///{tmp_path / 'empty'}/NAME.db\\)"):
            read(tmp_path / "other", f"sqlite:///{tmp_path / 'empty'}")
    assert list((tmp_path / "empty").iterdir()) == []


def test_a_storage_given_as_a_path_is_said_to_be_one_with_its_url(tmp_path):
    """SQLAlchemy's "Could not parse SQLAlchemy URL from given URL string" (trial 58 F11)."""
    from autotune.study.storage import load_finished_study

    open_study(tmp_path / "run", None, None)
    database = tmp_path / "run" / "study.db"
    with pytest.raises(UserError) as refused:
        load_finished_study(tmp_path / "run", str(database))
    assert str(refused.value) == (f"--storage '{database}' is a path, not a database URL; pass --storage "
                                  f"sqlite:///{database}, the URL of that file")
    with pytest.raises(UserError, match=f"--storage '{tmp_path / 'run'}' is a path, not a database URL; pass --storage "
                                        f"sqlite:///{database}, the study.db in it"):
        load_finished_study(tmp_path / "run", str(tmp_path / "run"))
    with pytest.raises(UserError, match=f"--storage '{tmp_path / 'new.db'}' is a path, not a database URL; pass "
                                        f"--storage sqlite:///{tmp_path / 'new.db'}, the URL of that file"):
        open_study(tmp_path / "other", str(tmp_path / "new.db"), None)
    assert not (tmp_path / "new.db").exists() and not (tmp_path / "other").exists()


def test_a_storage_whose_file_cannot_be_looked_up_is_one_line(tmp_path):
    """A name longer than the file system takes ended report and run in an OSError traceback."""
    from autotune.study.storage import load_finished_study

    long = "x" * 5000
    for read in (load_finished_study, lambda run_dir, url: open_study(run_dir, url, None)):
        with pytest.raises(UserError, match=r"^--storage 'sqlite:///x{90}\.\.\.x{12}': its file cannot be looked up "
                                            r"\(File name too long\); name another$"):
            read(tmp_path / "run", f"sqlite:///{long}")
        with pytest.raises(UserError, match=r"^--storage 'x{100}\.\.\.x{12}' is a path, not a database URL; pass "):
            read(tmp_path / "run", long)
    assert list(tmp_path.iterdir()) == []


def test_a_storage_password_is_never_said_in_the_terminal(tmp_path):
    """Trial 37 F2: pareto.json hid it as ***, while the error, the resume line and the suggested flags said it
    in clear, into job and CI logs."""
    from autotune.study.storage import storage_flags

    url = "postgresql://tuner:s3cr3t@127.0.0.1:1/db"  # nothing listens on port 1
    with pytest.raises(UserError) as refused:
        open_study(tmp_path, url, None)
    assert "s3cr3t" not in str(refused.value) and "cannot open study storage 'postgresql://tuner:***@127.0.0.1:1/db'" in str(refused.value)
    flags = storage_flags(url, "w2")
    assert flags == " --storage 'postgresql://tuner:***@127.0.0.1:1/db' --study-name w2 (its password where it says ***)"
    assert storage_flags("sqlite:////data/study.db") == " --storage sqlite:////data/study.db"  # nothing to hide


@pytest.mark.parametrize("name, value", [("AUTOTUNE_HEARTBEAT_INTERVAL_S", "abc"), ("AUTOTUNE_HEARTBEAT_INTERVAL_S", "1.5"),
                                         ("AUTOTUNE_HEARTBEAT_GRACE_S", "0"), ("AUTOTUNE_HEARTBEAT_GRACE_S", "-5"),
                                         ("AUTOTUNE_HEARTBEAT_INTERVAL_S", "60s"),
                                         # trial 41: a traceback in the heartbeat thread (no beat again), and int("²")
                                         ("AUTOTUNE_HEARTBEAT_INTERVAL_S", "10000000000"), ("AUTOTUNE_HEARTBEAT_GRACE_S", "²")])
def test_a_heartbeat_setting_that_is_no_whole_number_of_seconds_is_named(tmp_path, monkeypatch, name, value):
    """Trial 37 F3: a traceback (int('abc')), or Optuna's complaint blamed on the --storage URL."""
    monkeypatch.setenv(name, value)
    with pytest.raises(UserError, match=rf"^{name}='{re.escape(value)}' in the environment is not a whole number of "
                                        r"seconds from 1 to 86400; set it to one \(default \d+\) or unset it$"):
        open_study(tmp_path, f"sqlite:///{tmp_path / 'shared.db'}", None)


def test_a_heartbeat_grace_no_longer_than_its_interval_is_refused(tmp_path, monkeypatch):
    """Trial 41: a grace of 1 s against beats every 30 s took a live worker's trial for dead between beats."""
    monkeypatch.setenv("AUTOTUNE_HEARTBEAT_GRACE_S", "30")
    with pytest.raises(UserError, match=r"^AUTOTUNE_HEARTBEAT_GRACE_S=30 is not longer than the heartbeat interval of "
                                        r"30 s \(AUTOTUNE_HEARTBEAT_INTERVAL_S\)"):
        open_study(tmp_path, f"sqlite:///{tmp_path / 'shared.db'}", None)


@pytest.mark.parametrize("lock", ["EXCLUSIVE", "IMMEDIATE"])
def test_a_locked_study_database_is_said_to_be_locked_not_damaged(tmp_path, monkeypatch, capsys, lock):
    """Trial 37 F7: a healthy study.db another process held was called damaged, with "restore it from a copy"
    (EXCLUSIVE: no reader either), or ended in Optuna's "exceeding max length" traceback (IMMEDIATE: a writer)."""
    import sqlite3

    from autotune.cli import main
    from autotune.study import storage

    assert main(["run", "--model", "7b", "--nodes", "1", "--trials", "2", "--out", str(tmp_path)]) == 0
    monkeypatch.setattr(storage, "CREATE_ATTEMPTS", 1)  # one wait, not the retries for a racing worker
    connect = sqlite3.connect
    for module in (sqlite3, sqlite3.dbapi2):  # SQLAlchemy connects through sqlite3.dbapi2
        monkeypatch.setattr(module, "connect", lambda *args, **kwargs: connect(*args, **{**kwargs, "timeout": 0.2}))
    holder = connect(tmp_path / "study.db", isolation_level=None)
    holder.execute(f"BEGIN {lock}")
    capsys.readouterr()
    try:
        assert main(["report", str(tmp_path)]) == 2
    finally:
        holder.close()
    said = capsys.readouterr().err
    assert "locked by another process" in said and "damaged" not in said and len(said.strip().splitlines()) == 1, said


def test_reading_a_storage_creates_no_database_where_the_url_is_wrong(tmp_path):
    from autotune.study.storage import load_finished_study

    url = f"sqlite:///{tmp_path / 'typo.db'}"
    with pytest.raises(UserError, match=f"there is no database at {tmp_path / 'typo.db'}; pass the URL the run used"):
        load_finished_study(tmp_path, url)
    assert not (tmp_path / "typo.db").exists()


def test_reading_a_storage_writes_no_optuna_tables_into_another_sqlite_file(tmp_path):
    """A read (report, export) of an SQLite file without Optuna's tables used to create them there."""
    import sqlite3

    from autotune.study.storage import load_finished_study

    foreign = tmp_path / "notes.db"
    with sqlite3.connect(foreign) as connection:
        connection.execute("CREATE TABLE notes (text TEXT)")
    before = foreign.read_bytes()
    with pytest.raises(UserError, match=r"--storage 'sqlite:///.*notes.db' holds no Optuna study \(an empty or foreign "
                                        r"SQLite file; left as it was\); pass the URL the run used"):
        load_finished_study(tmp_path, f"sqlite:///{foreign}")
    assert foreign.read_bytes() == before


def test_somebody_else_s_optuna_study_of_the_same_name_is_refused_and_left_as_it_was(tmp_path):
    """`autotune` is the default name, so a shared database may hold another tool's study under it."""
    import optuna

    from autotune.study.storage import load_finished_study

    url = f"sqlite:///{tmp_path / 'shared.db'}"
    theirs = optuna.create_study(study_name="autotune", storage=url)
    theirs.optimize(lambda t: t.suggest_float("x", 0, 1), n_trials=2)
    with pytest.raises(UserError, match=r"the study 'autotune' in .*shared.db was not made by autotune \(2 trials of "
                                        r"parameters x\); pass --study-name NEW"):
        open_study(tmp_path / "run", url, None)
    with pytest.raises(UserError, match="was not made by autotune; pass the --study-name of an autotune study"):
        load_finished_study(tmp_path / "run", url)
    again = optuna.load_study(study_name="autotune", storage=url)
    assert len(again.trials) == 2 and again.user_attrs == {} and again.metric_names is None  # nothing written


def test_other_objectives_in_a_shared_storage_ask_for_another_study_name(tmp_path):
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    open_study(tmp_path / "a", url, None, objectives=2)
    with pytest.raises(UserError, match=r"has 2 objectives, this run asks for 1; repeat its --objectives or pass "
                                        r"--study-name NEW"):
        open_study(tmp_path / "b", url, None, objectives=1)


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///", "sqlite:///:memory:", "sqlite+pysqlite:///"])
def test_an_in_memory_sqlite_storage_is_refused_not_a_traceback(tmp_path, url):
    # Optuna's tables vanish between connections there: it crashed with StorageInternalError.
    with pytest.raises(UserError, match="is an in-memory SQLite database: the study and its probes would be lost"):
        open_study(tmp_path, url, None)


def test_a_file_storage_is_named_where_the_run_ends(tmp_path):
    from tests.cli import autotune_main

    url = f"sqlite:///{tmp_path / 'shared.db'}"
    done = autotune_main("run", "--model", "7b", "--nodes", "1", "--storage", url, "--out", tmp_path / "run")
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "run" / "study.db").exists() and (tmp_path / "shared.db").is_file()
    expected = f"run directory: {tmp_path / 'run'} (pareto.json, report.html, configs/); the study: --storage {url}"
    assert "".join(expected.split()) in "".join(done.stderr.split())  # rich wraps at 80 columns, inside a path too
    # The report of that run directory needs the storage: said, rather than "not a run directory".
    report = autotune_main("report", tmp_path / "run")
    assert report.returncode == 2 and report.stderr.strip().endswith(f"pass --storage {url} --study-name autotune"), report.stderr
    assert autotune_main("report", tmp_path / "run", "--storage", url).returncode == 0


def test_studies_of_two_models_share_one_storage_under_their_names(tmp_path):
    """Optuna's way: one database, one study per name (`--study-name`); report and export find each."""
    import json

    from tests.cli import autotune_main

    url = f"sqlite:///{tmp_path / 'shared.db'}"
    first = autotune_main("run", "--model", "7b", "--nodes", "1", "--storage", url, "--out", tmp_path / "7b", "--trials", "3")
    assert first.returncode == 0, first.stderr
    other = autotune_main("run", "--model", "32b", "--nodes", "4", "--storage", url, "--out", tmp_path / "32b", "--trials", "3")
    assert other.returncode == 2 and "(in a shared --storage, --study-name NEW)" in other.stderr
    named = autotune_main("run", "--model", "32b", "--nodes", "4", "--storage", url, "--out", tmp_path / "32b", "--trials", "3",
                     "--study-name", "32b on 4")
    assert named.returncode == 0, named.stderr
    assert "".join(f"the study: --storage {url} --study-name '32b on 4'".split()) in "".join(named.stderr.split())
    for flags, model in ((("--study-name", "32b on 4"), "32b"), ((), "7b")):
        report = autotune_main("report", tmp_path / model, "--storage", url, "--format", "json", *flags)
        assert report.returncode == 0, report.stderr
        assert json.loads(report.stdout)["model"] == model
    exported = autotune_main("export", tmp_path / "32b", "--storage", url, "--study-name", "32b on 4", "--measurements", tmp_path / "m.jsonl")
    assert exported.returncode == 0, exported.stderr
    missing = autotune_main("report", tmp_path / "32b", "--storage", url, "--study-name", "32b")
    assert missing.returncode == 2
    assert "no autotune study named '32b' in" in missing.stderr and "it holds '32b on 4', autotune: pass --study-name with the one" in missing.stderr


def test_a_study_never_writes_its_reports_over_another_studys(tmp_path):
    """Studies of one shared --storage are told apart by name: each keeps a run directory of its own,
    by default too (runs/<model>-<nodes>n-<name>), and report, export and run refuse another's."""
    import json

    from tests.cli import autotune_main

    url = f"sqlite:///{tmp_path / 'shared.db'}"
    for name in ("a", "b/c"):
        done = autotune_main("run", "--model", "7b", "--nodes", "1", "--storage", url, "--study-name", name, "--trials", "3",
                        cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    # 'b/c' made safe is 'b_c', with a hash of the name given: a study named 'b_c' has a directory of its own.
    a, b = tmp_path / "runs" / "7b-1n-a", tmp_path / "runs" / f"7b-1n-b_c+{hashlib.sha256(b'b/c').hexdigest()[:10]}"
    assert json.loads((a / "pareto.json").read_text())["study_name"] == "a"
    before = (a / "pareto.json").read_text()
    for command in (("report", a), ("export", a, "--pick", "knee"), ("run", "--model", "7b", "--nodes", "1", "--out", a)):
        refused = autotune_main(*command, "--storage", url, "--study-name", "b/c")
        assert refused.returncode == 2, refused.stderr
        said = " ".join(refused.stderr.split())
        assert f"{a} holds the reports of another study than 'b/c' in {url} (its pareto.json reports study 'a'); " in said
        assert ("pass --out NEW_DIR for this study" if command[0] == "run" else "pass that study's run directory") in said
    assert (a / "pareto.json").read_text() == before
    assert autotune_main("report", b, "--storage", url, "--study-name", "b/c").returncode == 0


def test_the_default_run_directory_names_the_node_counts_of_the_space(tmp_path):
    from autotune.space.files import DEFAULT_SPACE
    from tests.cli import autotune_main

    text = DEFAULT_SPACE.read_text()
    for nodes, directory in (("[1, 2]", "7b-1to2n"), ("[2, 1, 8]", "7b-1_2_8n")):
        space = tmp_path / "space.toml"
        space.write_text(text + f"\nnodes = {nodes}\n")
        done = autotune_main("run", "--model", "7b", "--space", space, "--trials", "2", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert (tmp_path / "runs" / directory / "pareto.json").is_file()


@pytest.mark.parametrize("name", ["", " ", "x" * 513, "tab\there", "new\nline", " spaced ", "trailing "])
def test_a_study_name_optuna_cannot_keep_is_refused(tmp_path, name):
    from tests.cli import autotune_main

    for command in (("run", "--out", tmp_path / "run"), ("report", tmp_path)):
        done = autotune_main(*command, "--study-name", name)
        assert done.returncode == 2 and "--study-name" in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (tmp_path / "run").exists()


def test_a_run_directorys_own_study_is_found_whatever_its_name(tmp_path):
    from autotune.study.storage import load_finished_study
    from tests.cli import autotune_main

    done = autotune_main("run", "--model", "7b", "--nodes", "1", "--trials", "3", "--study-name", "mine", "--out", tmp_path / "run")
    assert done.returncode == 0, done.stderr
    assert load_finished_study(tmp_path / "run").study_name == "mine"  # calibrate reads run directories so
    assert autotune_main("report", tmp_path / "run").returncode == 0


def test_a_second_study_in_a_run_directory_is_refused_before_any_probe(tmp_path):
    """Without --storage, a run directory's study.db holds one study: `run --study-name B` there wrote B's
    pareto.json, configs/ and report.html over A's, and `report --study-name A` then refused A."""
    import json

    from tests.cli import autotune_main

    same = tmp_path / "same"
    done = autotune_main("run", "--model", "7b", "--nodes", "1", "--trials", "3", "--out", same, "--study-name", "A")
    assert done.returncode == 0, done.stderr
    before = {p.relative_to(same): p.read_bytes() for p in same.rglob("*") if p.is_file() and p.name != "study.db"}
    for other in (("--study-name", "B"), ()):  # another name, and the default name, which is another too
        refused = autotune_main("run", "--model", "7b", "--nodes", "1", "--trials", "3", "--out", same, *other)
        assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
        said = " ".join(refused.stderr.split())
        assert f"--out {same} holds study 'A'" in said and "pass another --out" in said and "--study-name A to resume" in said
        assert "backend:" not in said  # refused before the study opened a probe
    assert {p.relative_to(same): p.read_bytes() for p in same.rglob("*") if p.is_file() and p.name != "study.db"} == before
    assert optuna.get_all_study_names(f"sqlite:///{same / 'study.db'}") == ["A"]
    assert json.loads((same / "pareto.json").read_text())["study_name"] == "A"
    assert autotune_main("report", same, "--study-name", "A").returncode == 0
    resumed = autotune_main("run", "--model", "7b", "--nodes", "1", "--trials", "4", "--out", same, "--study-name", "A")
    assert resumed.returncode == 0, resumed.stderr


def test_distinct_study_names_get_distinct_default_run_directories(tmp_path):
    """The default directory's suffix is the study name made safe; names that cleaning maps to one ('a/b'
    and 'a_b', any two non-ASCII names, two alike in their first 64 characters) each get their own."""
    import argparse
    import json

    from autotune.commands.run import default_run_dir
    from autotune.models import PRESETS
    from tests.cli import autotune_main

    names = ["a/b", "a_b", "😀", "é", "x" * 64 + "1", "x" * 64 + "2"]
    directories = {name: default_run_dir(argparse.Namespace(study_name=name), PRESETS["7b"], (1,)) for name in names}
    assert len(set(directories.values())) == len(names)
    assert all(d.parent == Path("runs") and d.name.startswith("7b-1n-") for d in directories.values())
    assert directories["a_b"].name.endswith("-a_b")  # a name safe as it is stays as it is
    assert directories["a/b"].name.endswith("-a_b+" + hashlib.sha256(b"a/b").hexdigest()[:10])
    done = autotune_main("run", "--model", "7b", "--nodes", "1", "--trials", "2", "--study-name", "a/b", cwd=tmp_path)
    assert done.returncode == 0, done.stderr  # the command takes the same directory
    assert json.loads((tmp_path / directories["a/b"] / "pareto.json").read_text())["study_name"] == "a/b"


def test_distinct_model_names_get_distinct_default_run_directories():
    """Two model names of letters beyond ASCII were one directory ('模型' and '模子' both runs/_-1n, 'Qwén' and 'Qwèn'
    both Qw_n): a digest of the name keeps them apart. An ASCII name keeps the directory it had, where its earlier
    runs resume."""
    import argparse
    from types import SimpleNamespace

    from autotune.commands.run import default_run_dir

    def directory(name: str) -> str:
        return default_run_dir(argparse.Namespace(study_name="autotune"), SimpleNamespace(name=name), (1,)).name

    names = ["模型", "模子", "Qwén-7B", "Qwèn-7B", "Qw_n-7B"]
    assert len({directory(name) for name in names}) == len(names)
    assert directory("模型") == "_+" + hashlib.sha256("模型".encode()).hexdigest()[:10] + "-1n"
    assert [directory(name) for name in ("Qw_n-7B", "32b")] == ["Qw_n-7B-1n", "32b-1n"]


def test_model_names_that_clean_to_one_get_distinct_default_run_directories():
    """'a/b' (a model file's name, say Qwen/Qwen2.5-7B), 'a b' and 'a_b' were all runs/a_b-1n: the second study
    resumed, or was refused, in the first's directory. Where cleaning changed the name, a digest of it follows; a name
    safe as it is (every preset's, a checkpoint's such as Qwen2.5-7B-Instruct) keeps its directory."""
    import argparse
    from types import SimpleNamespace

    from autotune.commands.run import default_run_dir
    from autotune.models import PRESETS

    def directory(name: str) -> str:
        return default_run_dir(argparse.Namespace(study_name="autotune"), SimpleNamespace(name=name), (1,)).name

    names = ["a/b", "a b", "a_b", "a:b", "-a_b", "..", "model", "x" * 64, "x" * 64 + "1", "x" * 64 + "2"]
    assert len({directory(name) for name in names}) == len(names)
    assert directory("a/b") == "a_b+" + hashlib.sha256(b"a/b").hexdigest()[:10] + "-1n"
    assert [directory(name) for name in ("a_b", "model", "x" * 64, "Qwen2.5-7B-Instruct")] == \
        ["a_b-1n", "model-1n", "x" * 64 + "-1n", "Qwen2.5-7B-Instruct-1n"]
    assert {name: directory(spec.name) for name, spec in PRESETS.items()} == {name: f"{name}-1n" for name in PRESETS}


def test_a_study_made_before_the_digest_resumes_in_its_directory(tmp_path, monkeypatch):
    """README's "Upgrading": the same command resumes an older study. A model named 'a b' ran in runs/a_b-1n before
    the digest; its run goes on there (its pareto.json names the model), and no other model's does."""
    import argparse
    from types import SimpleNamespace

    from autotune.commands.run import default_run_dir

    def directory(name: str) -> Path:
        return default_run_dir(argparse.Namespace(study_name="autotune"), SimpleNamespace(name=name), (1,))

    monkeypatch.chdir(tmp_path)
    digest = "a_b+" + hashlib.sha256(b"a b").hexdigest()[:10] + "-1n"
    assert directory("a b").name == digest  # nothing older here
    older = tmp_path / "runs" / "a_b-1n"
    older.mkdir(parents=True)
    (older / "pareto.json").write_text(json.dumps({"model": "a_b"}))
    assert directory("a b").name == digest  # another model's study
    (older / "pareto.json").write_text(json.dumps({"model": "a b"}))
    assert directory("a b") == Path("runs") / "a_b-1n" and directory("a/b").name.startswith("a_b+")
    (tmp_path / "runs" / digest).mkdir()  # a study begun since in the new directory goes on there
    assert directory("a b").name == digest
    (tmp_path / "runs" / digest).rmdir()
    (older / "pareto.json").write_text("{not json")
    assert directory("a b").name == digest


def test_a_query_string_in_an_sqlite_storage_url_is_refused_not_taken_as_the_file(tmp_path):
    """`sqlite:///.../st?x=1.db` wrote the file `st` (SQLAlchemy reads the rest as options it then drops),
    while every message named the URL given."""
    from tests.cli import autotune_main

    url = f"sqlite:///{tmp_path}/st?x=1.db"
    for command in (("run", "--model", "7b", "--nodes", "1", "--trials", "2", "--out", tmp_path / "run"), ("report", tmp_path)):
        refused = autotune_main(*command, "--storage", url)
        assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
        said = " ".join(refused.stderr.split())
        assert "'?x=1.db' as connection options" in said and f"{tmp_path}/st%3Fx=1.db" in said
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    with pytest.raises(UserError, match="connection options"):
        open_study(tmp_path / "run", url, None)
    # The name written with %3F is that file; options SQLite's driver takes still pass.
    open_study(tmp_path / "run", f"sqlite:///{tmp_path}/st%3Fx=1.db", None)
    open_study(tmp_path / "run", f"sqlite:///{tmp_path}/other.db?timeout=30", None)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.db", "st?x=1.db"]


def test_a_query_part_without_an_equals_sign_is_refused_too(tmp_path):
    """Trial 66 #8: SQLAlchemy drops a query part without '=', so `sqlite:///q?x.db` kept the study in the file `q`
    without a word."""
    with pytest.raises(UserError, match=r"'\?x\.db' as connection options \(x\.db unknown to it\).*%3F"):
        open_study(tmp_path / "run", f"sqlite:///{tmp_path}/q?x.db", None)
    assert not (tmp_path / "q").exists()


@pytest.mark.parametrize("query", ["?", "?&"])
def test_an_empty_query_is_refused_as_a_question_mark_of_the_file_name(tmp_path, query):
    """trial68 #14: `sqlite:///q?` (nothing after the '?') kept the study in the file `q` without a word."""
    with pytest.raises(UserError, match=r"reads the '\?' as the start of connection options \(none follow\).*"
                                        r"keep the study in .*/q; write a '\?' of the file name as %3F"):
        open_study(tmp_path / "run", f"sqlite:///{tmp_path}/q{query}", None)
    assert not (tmp_path / "q").exists()


@pytest.mark.parametrize("query, said", [
    ("timeout=abc", "the SQLite option timeout = 'abc' is not a number of seconds; correct it in the URL"),
    ("timeout=nan", "the SQLite option timeout = 'nan' is not a number of seconds; correct it in the URL"),
    ("timeout=5&timeout=6", "the SQLite option timeout is given 2 times; give it once"),
    ("cached_statements=1.5", "the SQLite option cached_statements = '1.5' is not a whole number; correct it in the URL"),
    ("check_same_thread=maybe", "the SQLite option check_same_thread = 'maybe' is not true or false; correct it in the URL"),
])
def test_a_wrong_or_repeated_sqlite_option_is_said_in_the_projects_words(tmp_path, query, said):
    """trial68 #14: Python's words ("could not convert string to float: 'abc'", "not 'tuple'") named the value."""
    url = f"sqlite:///{tmp_path}/s.db?{query}"
    with pytest.raises(UserError) as refused:
        open_study(tmp_path / "run", url, None)
    assert str(refused.value) == f"--storage {url!r}: {said}"
    assert not (tmp_path / "s.db").exists()


def test_a_run_directory_named_with_a_question_mark_keeps_its_study_in_it(tmp_path):
    """The default URL was sqlite:///RUN_DIR/study.db unescaped: `--out 'q?x'` kept its study in the file `q`."""
    from autotune.study.storage import load_finished_study

    run_dir = tmp_path / "q?x 100%25"
    open_study(run_dir, None, None).set_user_attr("settings", {})
    assert sorted(p.name for p in tmp_path.iterdir()) == [run_dir.name]
    assert (run_dir / "study.db").is_file()
    assert load_finished_study(run_dir).study_name == "autotune"


def test_a_new_study_writes_no_reports_over_those_of_a_study_kept_elsewhere(tmp_path):
    """A run directory whose run kept its study in a --storage database has pareto.json and configs/ but no
    study.db: a run there without --storage started a new study and wrote its reports over them."""
    from tests.cli import autotune_main

    url, run_dir = f"sqlite:///{tmp_path / 'shared.db'}", tmp_path / "run"
    done = autotune_main("run", "--model", "7b", "--nodes", "1", "--trials", "3", "--storage", url, "--out", run_dir)
    assert done.returncode == 0, done.stderr
    before = (run_dir / "pareto.json").read_text()
    refused = autotune_main("run", "--model", "7b", "--nodes", "1", "--trials", "3", "--out", run_dir)
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    said = " ".join(refused.stderr.split())
    assert f"--out {run_dir} holds the reports of a study its study.db does not hold" in said and "--storage URL" in said
    assert not (run_dir / "study.db").exists() and (run_dir / "pareto.json").read_text() == before
    assert autotune_main("report", run_dir, "--storage", url).returncode == 0


def test_a_storage_the_study_cannot_write_is_one_line_before_anything_runs(tmp_path, capsys):
    """A read-only mount or file failed in Optuna's first commit with a traceback blaming "invalid data ...
    exceeding max length" (a newcomer's trial); the study writes every trial, so it is refused up front,
    while `autotune report` still reads the database as it is."""
    from autotune.cli import main
    from tests.read_only import read_only_view

    folder = tmp_path / "shared"
    folder.mkdir()
    url = f"sqlite:///{folder}/study.db"
    assert main(["run", "--model", "7b", "--nodes", "1", "--backend", "simulate", "--trials", "2", "--storage", url,
                 "--study-name", "s", "--out", str(tmp_path / "a")]) == 0
    before = (folder / "study.db").read_bytes()
    capsys.readouterr()
    with read_only_view(folder, tmp_path) as view:
        for name in ("study.db", "new.db"):  # the study's own database, and a new one in that folder
            code = main(["run", "--model", "7b", "--nodes", "1", "--backend", "simulate", "--trials", "4", "--storage",
                         f"sqlite:///{view}/{name}", "--study-name", "s", "--out", str(tmp_path / "b")])
            err = capsys.readouterr().err.strip()
            assert code == 2 and len(err.splitlines()) == 1, err
            assert "cannot be written" in err and "the study writes every trial there" in err
        assert main(["report", str(tmp_path / "a"), "--storage", f"sqlite:///{view}/study.db", "--study-name", "s"]) == 0
    assert (folder / "study.db").read_bytes() == before and not (folder / "new.db").exists()


def _run_with_a_queued_trial(tmp_path, capsys, model_nodes: tuple[str, str], queued: dict, first: int):
    """A simulated study of `first` trials in a --storage database, a trial queued with Optuna's enqueue_trial
    (`queued` over a ZeRO-3 baseline-like candidate), then a resume with two trials more: (url, the queued
    trial's number, the resume's stderr)."""
    from autotune.cli import main

    model, nodes = model_nodes
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    flags = ["run", "--model", model, "--nodes", nodes, "--backend", "simulate", "--sampler", "random", "--storage", url,
             "--study-name", "s", "--out", str(tmp_path / "run")]
    assert main([*flags, "--trials", str(first)]) == 0
    study = optuna.load_study(study_name="s", storage=url)
    study.enqueue_trial({"zero_stage": 3, "optimizer_offload": "none", "activation_checkpointing": "recompute", "sp_degree": 1,
                         "micro_batch": 1, "nodes": int(nodes), "power_limit": 1.0, "sm_clock_mhz": "max", **queued})
    number = study.trials[-1].number
    capsys.readouterr()
    assert main([*flags, "--trials", str(first + 2)]) == 0
    return url, number, capsys.readouterr().err


def test_a_trial_queued_outside_the_space_is_one_line_and_the_study_goes_on(tmp_path, capsys):
    """Optuna users queue known configurations (study.enqueue_trial); one with a value the space lacks ended
    the run in Optuna's traceback ("'0.5' not in (1.0, 0.9, 0.8, 0.7)")."""
    from autotune.study.retries import evaluated_count

    url, number, err = _run_with_a_queued_trial(tmp_path, capsys, ("7b", "1"), {"zero_stage": 3, "power_limit": 0.5}, 2)
    said = [line for line in err.splitlines() if "was queued with" in line]
    assert said == [f"warning: trial {number} was queued with power_limit 0.5, which this study's space does "
                    "not hold (1.0, 0.9, 0.8, 0.7); it is left unprobed: queue one of those values, or start a new study "
                    "(--out NEW_DIR) whose --space holds it"], err
    study = optuna.load_study(study_name="s", storage=url)
    queued = [t for t in study.trials if "was queued with" in t.user_attrs.get("reason", "")]
    assert len(queued) == 1 and queued[0].state == optuna.trial.TrialState.PRUNED
    assert evaluated_count(study) == 4  # the budget went to candidates of the space


def test_a_stored_study_refused_for_another_model_leaves_no_empty_run_directory(tmp_path):
    from tests.cli import autotune_main

    url = f"sqlite:///{tmp_path / 'shared.db'}"
    assert autotune_main("run", "--model", "7b", "--nodes", "1", "--backend", "simulate", "--trials", "2", "--storage", url,
                         "--study-name", "s", "--out", tmp_path / "first").returncode == 0
    refused = autotune_main("run", "--model", "32b", "--nodes", "4", "--backend", "simulate", "--trials", "2",
                            "--storage", url, "--study-name", "s", cwd=tmp_path)
    assert refused.returncode == 2 and "holds a study of --model 7b, not 32b" in refused.stderr
    assert not (tmp_path / "runs").exists()  # its default run directory (runs/32b-4n-s) was made, and is gone again


def test_a_study_db_that_could_not_be_set_up_leaves_no_run_directory(tmp_path):
    """A file-size limit (EFBIG: Python ignores SIGXFSZ) hit while SQLite wrote Optuna's tables: the command failed
    before any study was made, yet --out nd/a stayed, with a study.db of no study (trial69 #11; docs/commands.md:
    missing folders are removed again if the command fails)."""
    import resource
    import subprocess
    import sys

    limit_bytes = 60 * 1024  # below the ~112 KiB of Optuna's schema
    done = subprocess.run(
        [sys.executable, "-m", "autotune.cli", "run", "--model", "7b", "--nodes", "1", "--backend", "simulate",
         "--trials", "3", "--out", tmp_path / "nd" / "a"], capture_output=True, text=True, timeout=120,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes)))
    assert done.returncode == 2 and "the study database" in done.stderr, done.stderr
    assert not (tmp_path / "nd").exists()


def test_a_trial_queued_with_a_value_no_valid_candidate_has_is_not_sent_to_widen_the_space(tmp_path, capsys):
    _, _, err = _run_with_a_queued_trial(tmp_path, capsys, ("32b", "4"), {"zero_stage": 0, "power_limit": 1.0}, 1)
    said = [line for line in err.splitlines() if "was queued with" in line]
    assert len(said) == 1 and "zero_stage 0, which no valid candidate of this study has" in said[0], said
    assert "widen --space" not in said[0] and "queue one of 3" in said[0]


def test_a_page_of_study_db_damaged_after_the_run_is_one_line_for_report_and_export(tmp_path, capsys):
    """Trial 43 F5: only a damaged header was caught; a torn page further in was Optuna's "invalid data in the
    commit, e.g. exceeding max length" traceback, exit 1."""
    import os

    from autotune.cli import main

    assert main(["run", "--model", "7b", "--nodes", "1", "--trials", "4", "--out", str(tmp_path)]) == 0
    size = os.path.getsize(tmp_path / "study.db")
    with open(tmp_path / "study.db", "r+b") as db:
        db.seek(size - 4096)
        db.write(b"\xde\xad\xbe\xef" * 1024)
    capsys.readouterr()
    for command in (["report", str(tmp_path)], ["export", str(tmp_path), "--measurements", str(tmp_path / "m.json")]):
        assert main(command) == 2
        said = capsys.readouterr().err
        assert said.startswith(f"autotune {command[0]}: error: the study's database is damaged (disk image is malformed")
        assert "start the study over in a new --out" in said and len(said.strip().splitlines()) == 1, said


def _failed_commit(message: str) -> BaseException:
    """The chain Optuna raises when SQLite refuses a commit: its StorageInternalError from SQLAlchemy's from sqlite3's."""
    import sqlite3

    import sqlalchemy.exc

    try:
        try:
            try:
                raise sqlite3.OperationalError(message)
            except sqlite3.OperationalError as driver:
                raise sqlalchemy.exc.OperationalError("INSERT ...", {}, driver) from driver
        except sqlalchemy.exc.OperationalError as orm:
            raise optuna.exceptions.StorageInternalError(
                "An exception is raised during the commit. This typically happens due to invalid data in the commit, "
                "e.g. exceeding max length.") from orm
    except optuna.exceptions.StorageInternalError as commit:
        try:
            raise AssertionError("Should not reach.")  # what Optuna's next call may end in
        except AssertionError as later:
            assert later.__context__ is commit
            return later


@pytest.mark.parametrize("message, words", [
    ("database or disk is full", "cannot grow: its disk is full (or over quota); what was evaluated before is kept in "
                                 "it: free space, then run the same command again"),
    ("attempt to write a readonly database", "cannot be written (the file or its directory is read-only, or the run directory was moved"),
    ("disk I/O error", "failed to read or write (disk I/O error"),
    ("something new", "failed mid-command (OperationalError: something new); what was evaluated before is kept"),
])
def test_a_database_failing_mid_command_says_what_happened_not_optunas_guess(message, words):
    from autotune.study.storage_failure import storage_failure_line

    line = storage_failure_line(_failed_commit(message))
    assert line.startswith("the study's database ") and words in line and "exceeding max length" not in line, line
    assert storage_failure_line(ValueError("a bug")) is None  # any other error stays a traceback


def test_a_study_in_an_older_autotunes_run_directory_resumes_with_the_same_command(tmp_path):
    """trial73 #11: a study name cleaned for its directory ('cap 1') had runs/7b-1n-cap_1 before the study name's digest,
    and a model file named 'me/7b' had runs/me_7b-1n before the model name's: the same command went on in a new
    directory and probed every candidate again. It resumes there now, found by its study.db (an interrupted run
    has no pareto.json), and says so; another study of that directory is not taken for it."""
    from autotune.models import PRESETS
    from tests.cli import autotune_main

    (tmp_path / "me7b.json").write_text(json.dumps({**PRESETS["7b"].to_json(), "name": "me/7b"}))
    for older, study_name, model in (("7b-1n-cap_1", "cap 1", "7b"), ("me_7b-1n", "autotune", "me7b.json")):
        command = ("run", "--model", model, "--study-name", study_name, "--nodes", "1", "--trials", "2")
        made = autotune_main(*command, "--out", Path("runs") / older, cwd=tmp_path)  # as the older autotune named it
        assert made.returncode == 0, made.stderr
        (tmp_path / "runs" / older / "pareto.json").unlink()  # stopped before its first report
        resumed = autotune_main(*command[:-1], "3", cwd=tmp_path)
        assert resumed.returncode == 0, resumed.stderr
        said = " ".join(resumed.stderr.split())
        assert f"runs/{older} holds this study, as an older autotune named its run directory" in said
        assert "resuming the study in runs/" + older in said
        assert not [p for p in (tmp_path / "runs").iterdir() if "+" in p.name]  # no new directory beside it
        storage = f"sqlite:///{tmp_path / 'runs' / older / 'study.db'}"
        assert len(optuna.load_study(study_name=study_name, storage=storage).trials) == 3
    other = autotune_main("run", "--model", "7b", "--study-name", "cap:1", "--nodes", "1", "--trials", "2", cwd=tmp_path)
    assert other.returncode == 0 and "older autotune" not in other.stderr  # cleans to cap_1 too: its own directory
    assert (tmp_path / "runs" / ("7b-1n-cap_1+" + hashlib.sha256(b"cap:1").hexdigest()[:10])).is_dir()


@pytest.mark.parametrize("directions, maximized", [(["minimize", "maximize"], "energy_to_solution_kj"),
                                                   (["maximize", "maximize"], "time_to_solution_s and energy_to_solution_kj")])
def test_a_study_created_beforehand_that_maximizes_an_objective_is_refused(tmp_path, directions, maximized):
    """`optuna create-study --directions minimize maximize` beforehand: the run went on, and Optuna's samplers and best
    trials steered to the most energy (trial74 #11). Refused as a study of another number of objectives is."""
    import optuna

    url = f"sqlite:///{tmp_path / 'shared.db'}"
    optuna.create_study(study_name="autotune", storage=url, directions=directions)
    with pytest.raises(UserError, match=rf"the study in .*shared.db maximizes {maximized}; autotune minimizes "
                                        r"time_to_solution_s and energy_to_solution_kj: pass --study-name NEW"):
        open_study(tmp_path / "run", url, None)
    (tmp_path / "own").mkdir()
    optuna.create_study(study_name="autotune", storage=f"sqlite:///{tmp_path / 'own' / 'study.db'}", directions=directions)
    with pytest.raises(UserError, match=r"maximizes .*: pass --out NEW_DIR"):
        open_study(tmp_path / "own", None, None)
