"""What `--help` says, checked against the constants and the behaviour it describes (a newcomer's trial 48: defaults
left out, metavars argparse made up, exit statuses and environment variables written nowhere in one place)."""

import pytest

from tests.cli import autotune_main


def help_of(monkeypatch, *command: str) -> str:
    """`autotune COMMAND --help` on one line: a wide terminal, so that argparse breaks no name at its hyphen."""
    monkeypatch.setenv("COLUMNS", "1000")
    done = autotune_main(*command, "--help")
    assert done.returncode == 0, done.stderr
    return " ".join(done.stdout.split())


@pytest.mark.parametrize("command", ["run", "space"])
def test_the_workload_flags_show_their_defaults_and_tinys_own(command, monkeypatch):
    from autotune.models import PRESETS
    from autotune.workload import DEFAULT_WORKLOAD

    text = help_of(monkeypatch, command)
    for key, value in DEFAULT_WORKLOAD.items():
        tiny = PRESETS["tiny"].default_workload[key]
        assert f"(default: {value}, unless the model names its own default_workload: tiny {tiny})" in text, key
    assert "a Hugging Face checkpoint's directory or its config.json (default: 32b)" in text


def test_the_default_run_directory_of_a_node_range_is_the_one_help_names(monkeypatch, tmp_path):
    assert "runs/7b-1to2n for --nodes 1-2" in help_of(monkeypatch, "run")
    done = autotune_main("run", "--model", "7b", "--nodes", "1-2", "--trials", "2", "--backend", "simulate", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "runs" / "7b-1to2n" / "pareto.json").is_file()


# The commands whose options this file holds to one style (calibrate's parser is checked where it lives).
STYLED = ("run", "space", "report", "export", "sensors")


def _subparsers():
    from autotune.cli import build_parser

    return build_parser().parse_args([]).command_parsers


@pytest.mark.parametrize("command", STYLED)
def test_every_option_names_its_value_and_every_command_says_what_it_does(command):
    """argparse's own metavar is the flag's dest in capitals (`--out OUT`, `--probe-timeout PROBE_TIMEOUT`): a name
    for the value (DIR, URL, N, SECONDS, FILE) or its choices instead, as the README writes them."""
    parser = _subparsers()[command]
    assert parser.description, command
    made_up = [action.option_strings[-1] for action in parser._actions
               if action.option_strings and action.nargs != 0 and action.metavar is None and action.choices is None]
    assert made_up == [], command


def test_the_readme_names_each_options_value_as_help_does():
    import re
    from pathlib import Path

    root = Path(__file__).parents[2]
    readme = (root / "README.md").read_text(encoding="utf-8")
    # The option details moved from the README's Commands table to docs/ (trial57 #18): they name values too.
    reference = "".join((root / "docs" / page).read_text(encoding="utf-8")
                        for page in ("commands.md", "run-directory.md", "search.md"))
    metavars = {}
    for parser in _subparsers().values():
        for action in parser._actions:
            for flag in action.option_strings:
                if action.metavar:
                    metavars.setdefault(flag, set()).add(action.metavar)
    written = set(re.findall(r"`(--?[a-z][a-z-]*) ([A-Z][A-Z_]*)`", readme))
    assert {("--out", "DIR"), ("--storage", "URL"), ("--trials", "N"), ("-o", "FILE")} <= written
    written |= set(re.findall(r"`(--?[a-z][a-z-]*) ([A-Z][A-Z_]*)`", reference))
    assert [(flag, value) for flag, value in sorted(written) if value not in metavars.get(flag, ())] == []


def test_sensors_period_says_its_default_as_every_flag_does(monkeypatch):
    import re

    from autotune.commands.sensors import _DEFAULT_PERIOD_S

    assert f"sampling period for --sample (default: {_DEFAULT_PERIOD_S:g})" in help_of(monkeypatch, "sensors")
    for command in STYLED:
        assert not re.search(r"\(default [^:]", help_of(monkeypatch, command)), command


def test_autotune_without_a_command_is_a_usage_error_on_stderr():
    """Trial 48 #11: the whole help went to stdout with status 2; a usage error is one line, on stderr (trial71 #6: a
    usage line came first)."""
    from tests.cli import autotune

    done = autotune()
    assert (done.returncode, done.stdout) == (2, "")
    (error,) = done.stderr.splitlines()
    assert error == ("autotune: error: the following arguments are required: COMMAND (one of run, space, report, export, "
                     "sensors, calibrate, compare) (see `autotune --help`)")


def test_exit_statuses_and_environment_are_listed_alike_in_help_and_readme(monkeypatch):
    """Trial 48 #9, #13: one place for both, the README's section and `autotune --help`'s epilog, each a line."""
    from pathlib import Path

    from autotune.commands.reference import EXIT_STATUSES, environment

    monkeypatch.setenv("COLUMNS", "80")
    done = autotune_main("--help")
    lines = [" ".join(line.split()) for line in done.stdout.splitlines()]
    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8").splitlines()
    for status, meaning in EXIT_STATUSES:
        assert " ".join(f"{status} {meaning}".split()) in lines
        assert f"- `{status}`: {meaning}" in readme
    for name, meaning in environment():
        assert f"{name}: {meaning}" in lines
        assert f"- `{name}`: {meaning}" in readme


def test_the_statuses_listed_are_those_the_command_returns():
    from autotune import cli
    from autotune.commands.reference import EXIT_STATUSES
    from autotune.errors import stop_signals
    from autotune.study.time_limit import TIME_LIMIT_EXIT_STATUS

    listed = [int(status) for status, _ in EXIT_STATUSES]
    stops = {kind.status for kind in stop_signals().values() if hasattr(kind, "status")}
    assert {cli.INTERRUPTED, cli.BROKEN_PIPE} | stops | {0, 1, 2, TIME_LIMIT_EXIT_STATUS} == set(listed)


def test_every_autotune_variable_the_code_reads_is_listed(monkeypatch):
    """A new AUTOTUNE_* variable in autotune/ or trainer/ is listed in `autotune --help` (and so in the README)."""
    import re
    from pathlib import Path

    root = Path(__file__).parents[2]
    named = {name for folder in ("autotune", "trainer") for path in (root / folder).rglob("*.py")
             for name in re.findall(r"[\"'](AUTOTUNE_[A-Z_]+)[\"']", path.read_text(encoding="utf-8"))}
    assert "AUTOTUNE_SYSFS_ROOT" in named
    text = help_of(monkeypatch)
    assert [name for name in sorted(named) if name not in text.replace("[_RANK]", " AUTOTUNE_PROBE_TEST_HOOK_RANK")] == []
    for name in ("COLUMNS", "LINES", "NO_COLOR"):
        assert name in text
    sensors = help_of(monkeypatch, "sensors")
    assert "AUTOTUNE_ENERGY_SOURCES" in sensors and "AUTOTUNE_SYSFS_ROOT" in sensors


def test_export_and_report_help_say_the_picks_follow_the_last_max_slowdown_and_eta(monkeypatch):
    """Trial 48 #17: `report --max-slowdown` reads like a query and rewrites pareto.json and configs/; export has no such
    flag and picks with what the last run or report kept, which its help did not say."""
    from autotune.report.picks import DEFAULT_ETA, DEFAULT_MAX_SLOWDOWN

    export = help_of(monkeypatch, "export")
    assert ("max-slowdown and cost-weighted as the study's last `autotune run` or `report` chose them, with its "
            f"--max-slowdown and --eta (default: {DEFAULT_MAX_SLOWDOWN:g} and {DEFAULT_ETA:g}), which export does not "
            "take: `autotune report RUN_DIR --max-slowdown X --eta ETA` changes them, and rewrites pareto.json and "
            "configs/") in export
    for command in ("report", "run"):
        text = help_of(monkeypatch, command)
        assert ("--max-slowdown and --eta are kept in the study: pareto.json and configs/ are (re)written with the picks "
                "they choose, and later reports and `autotune export --pick max-slowdown|cost-weighted` use them") in text
        assert f"(default: {DEFAULT_MAX_SLOWDOWN:g}, or what the study's last run or report used" in text
        assert f"(default: {DEFAULT_ETA:g}, or what the study's last run or report used)" in text
    assert "--max-slowdown and --eta change its picks for good" in help_of(monkeypatch, "report")


def test_a_report_with_max_slowdown_is_what_a_later_export_picks(tmp_path_factory):
    import json

    from tests.cli import simulated_run

    run_dir = simulated_run(tmp_path_factory, nodes=4, trials=12)
    exported = {}
    for max_slowdown in ("1.05", "1.2"):  # on this study each picks another trial
        done = autotune_main("report", run_dir, "--max-slowdown", max_slowdown, "--json")
        assert done.returncode == 0, done.stderr
        pareto = json.loads((run_dir / "pareto.json").read_text())
        assert pareto["recommendation_parameters"]["max_slowdown"] == float(max_slowdown)
        config = run_dir.parent / f"pick-{max_slowdown}.json"
        done = autotune_main("export", run_dir, "--pick", "max-slowdown", "-o", config)
        assert done.returncode == 0, done.stderr
        exported[max_slowdown] = json.loads(config.read_text())["autotune"]["trial"]
        assert exported[max_slowdown] == pareto["recommendations"]["max_slowdown"]
    assert exported["1.05"] != exported["1.2"]


def test_the_nodes_help_names_each_form_it_takes(monkeypatch, tmp_path):
    from autotune.space import parse_nodes

    text = help_of(monkeypatch, "space")
    assert "--nodes COUNTS node counts: 4, a range such as 2-8, or a list as SLURM writes one, 2,4,8 or 1-4,8" in text
    assert [parse_nodes(form) for form in ("4", "2-8", "2,4,8", "1-4,8")] == [
        (4,), tuple(range(2, 9)), (2, 4, 8), (1, 2, 3, 4, 8)]
    assert "runs/7b-1_2_4n for --nodes 1,2,4" in help_of(monkeypatch, "run")
    done = autotune_main("run", "--model", "7b", "--nodes", "1,2,4", "--trials", "2", "--backend", "simulate", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "runs" / "7b-1_2_4n" / "pareto.json").is_file()


def test_run_help_names_every_optional_record_key_docs_search_md_documents(monkeypatch):
    """`--measurements` lists a record's optional keys: one the doc gained (peak_mem_kind, default_power_limit_w) and
    the help did not left a user who read only the help thinking such a file's key an error."""
    import re
    from pathlib import Path

    doc = (Path(__file__).parents[2] / "docs" / "search.md").read_text(encoding="utf-8")
    optional = doc.split("Optional keys:", 1)[1].split("###", 1)[0]
    keys = re.findall(r'^- `"(\w+)"`', optional, flags=re.MULTILINE)
    assert {"error", "peak_mem_kind", "default_power_limit_w", "study"} <= set(keys), keys
    measurements = help_of(monkeypatch, "run").split("--measurements FILE recorded results", 1)[1].split("--launcher", 1)[0]
    assert [key for key in keys if key not in measurements] == []
