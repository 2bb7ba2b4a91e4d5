"""A --samples that is no whole number of global batches is charged samples / global batch optimizer steps at the
steady per-step rate, a fraction no job runs: the report's workload line says so (trial72 #7: 100 samples at global
batch 64 were charged 1.5625 steps, unstated), and a whole number of batches reads as before."""

from autotune.report.pareto_json import workload_sentence
from tests.cli import autotune_main

WORKLOAD = {"frames": 60, "text_tokens": 256, "global_batch": 64, "precision": "bf16"}


def test_the_workload_line_states_a_fraction_of_an_optimizer_step():
    said = workload_sentence({**WORKLOAD, "samples": 100})
    assert ("100 samples, global batch 64 (time and energy are for 100 / 64 = 1.56 optimizer steps at the steady "
            "per-step rate; a job of whole steps runs 1 or 2), 60 frames") in said
    assert "optimizer steps" not in workload_sentence({**WORKLOAD, "samples": 128})


def test_a_run_with_a_partial_global_batch_says_so_and_is_not_refused(tmp_path):
    done = autotune_main("run", "--model", "tiny", "--nodes", "1", "--hardware", "cpu", "--backend", "simulate",
                         "--samples", "20", "--trials", "1", "--out", tmp_path / "run", "-q")
    assert done.returncode == 0, done.stderr
    assert "20 samples, global batch 8 (time and energy are for 20 / 8 = 2.5 optimizer steps" in done.stdout
