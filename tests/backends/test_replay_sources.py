"""A replay's backend line labels time and energy apart, as its trial lines do (trial 32's #4): a record's
`source` is its energy's label, so a sensorless machine's records are time measured, energy estimated."""

from __future__ import annotations

import json

from autotune.backends.replay import ReplayBackend

KNOBS = {"zero_stage": 3, "optimizer_offload": "none", "activation_checkpointing": "recompute",
         "sp_degree": 1, "micro_batch": 1, "nodes": 4}


def _backend(tmp_path, *records):
    path = tmp_path / "m.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return ReplayBackend(path)


def test_estimated_records_are_described_as_measured_time_and_estimated_energy(tmp_path, make_candidate):
    backend = _backend(tmp_path, {"params": KNOBS, "status": "ok", "time_s": 0.173, "energy_kj": 0.0105, "source": "estimated"})
    line = backend.describe()
    assert "; time measured, energy estimated)" in line and "figures" not in line, line
    # Its count agrees with its noun (trial77 #3: "1 recorded candidates from meas.jsonl").
    assert line.startswith(f"replay (1 recorded candidate from {backend.path}; "), line
    result = backend.evaluate(make_candidate(**KNOBS))  # the trial line's labels, which the backend line repeats
    assert (result.source, result.energy_source) == ("measured", "estimated")


def test_mixed_and_simulated_records_name_each_label(tmp_path):
    mixed = _backend(tmp_path, {"params": KNOBS, "status": "ok", "time_s": 1.0, "energy_kj": 1.0, "source": "estimated"},
                     {"params": {**KNOBS, "micro_batch": 2}, "status": "ok", "time_s": 1.0, "energy_kj": 1.0})
    assert "; time measured, energy estimated, measured)" in mixed.describe()
    simulated = _backend(tmp_path, {"params": KNOBS, "status": "ok", "time_s": 1.0, "energy_kj": 1.0, "source": "simulated"})
    assert "; time simulated, energy simulated)" in simulated.describe()
    no_energy = _backend(tmp_path, {"params": KNOBS, "status": "ok", "time_s": 1.0})
    assert "; time measured, energy not recorded)" in no_energy.describe()
