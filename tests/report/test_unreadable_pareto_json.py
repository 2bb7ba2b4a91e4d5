"""A pareto.json this user may not read (chmod 000) is not a damaged one: `compare` called it "damaged" and sent the
user to `report`, whose rewrite keeps the file's mode, so it said "rebuilt" and left it unreadable, a loop (trial69 #3).
Both now name the permission and the chmod that ends it."""

from __future__ import annotations

import shutil

from tests.cli import simulated_run
from tests.read_only import autotune_as_a_user


def test_an_unreadable_pareto_json_is_said_to_be_so_with_the_chmod_that_fixes_it(tmp_path_factory, tmp_path):
    base = simulated_run(tmp_path_factory, 1, 3)
    run = tmp_path / "run"
    shutil.copytree(base, run)
    pareto = run / "pareto.json"
    pareto.chmod(0o000)
    compared = autotune_as_a_user("compare", base, run)
    assert (compared.returncode, compared.stdout) == (2, "")
    assert compared.stderr == (f"autotune compare: error: pareto.json in {run} cannot be read (permission denied): make "
                               f"it readable for you (chmod u+r {pareto})\n")
    reported = autotune_as_a_user("report", run)
    assert reported.returncode == 0 and "min-energy" in reported.stdout, reported.stderr
    assert reported.stderr == (f"pareto.json in {run} was unreadable (permission denied): rewrote pareto.json, configs/, "
                               f"report.html from the study (study.db); its mode (000) lets no one read it yet: make it "
                               f"readable for you (chmod u+r {pareto})\n")
    pareto.chmod(0o644)  # the fix both named
    assert autotune_as_a_user("compare", base, run).returncode == 0
