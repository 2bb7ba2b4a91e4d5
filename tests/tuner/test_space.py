import pytest

from autotune.errors import ConfigError
from autotune.hardware import load_hardware
from autotune.models import load_model
from autotune.space import baseline, enumerate_space, load_space, parse_nodes, rule_violation
from autotune.workload import make_workload


@pytest.mark.parametrize(
    "knobs, expected",
    [
        (dict(zero_stage=0, optimizer_offload="sync"), "offload needs ZeRO stage >= 1"),
        (dict(zero_stage=2, optimizer_offload="async"), "needs ZeRO stage 3"),
        (dict(sp_degree=3, nodes=1), "does not divide the 4 GPUs"),
        (dict(sp_degree=16, nodes=4), "does not divide the attention heads"),
        (dict(micro_batch=8, nodes=4), "does not divide the global batch 64"),
    ],
)
def test_rules_give_reasons(make_candidate, knobs, expected):
    assert expected in rule_violation(make_candidate(**knobs))


def test_superoffload_needs_cuda(make_candidate):
    c = make_candidate(model="tiny", hardware="cpu", zero_stage=3, optimizer_offload="async", nodes=1)
    assert "CUDA" in rule_violation(c)


def test_valid_candidate_has_no_reason(make_candidate):
    assert rule_violation(make_candidate(zero_stage=3, optimizer_offload="async", sp_degree=2, micro_batch=2)) is None


def test_global_batch_is_held_fixed(make_candidate):
    for sp, mb in ((1, 1), (2, 2), (4, 1)):
        c = make_candidate(sp_degree=sp, micro_batch=mb)
        assert c.knobs.micro_batch * c.dp_degree * c.grad_accum == c.workload.global_batch


def test_nodes_parsing():
    assert parse_nodes("4") == (4,)
    assert parse_nodes("2-5") == (2, 3, 4, 5)
    for bad in ("0", "x", "5-2"):
        with pytest.raises(ConfigError):
            parse_nodes(bad)


def test_malformed_space_file_is_refused(tmp_path):
    path = tmp_path / "space.toml"
    path.write_text("zero_stage = [0, 5]\n")
    with pytest.raises(ConfigError, match="allowed values"):
        load_space(path, (1,))
    path.write_text("zero_stage = [\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_space(path, (1,))


def test_every_candidate_listed_and_invalid_ones_explained():
    model = load_model("32b")
    checks = list(enumerate_space(load_space(None, (4,)), model, load_hardware("gh200"), make_workload(model)))
    assert len(checks) == 4 * 3 * 4 * 4 * 4
    assert any(c.valid for c in checks)
    assert all(c.reason for c in checks if not c.valid)
    assert any("GiB per GPU" in (c.reason or "") for c in checks)  # the memory estimate prunes too


def test_baseline_has_no_offload_and_no_sp():
    model = load_model("32b")
    checks = list(enumerate_space(load_space(None, (4,)), model, load_hardware("gh200"), make_workload(model)))
    base = baseline(checks)
    assert base is not None and base.valid
    k = base.candidate.knobs
    assert (k.optimizer_offload, k.sp_degree) == ("none", 1) and k.activation_checkpointing in ("none", "recompute")
