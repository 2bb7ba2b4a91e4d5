"""The mechanisms the GH200 study's figures asked for (docs/simulator.md, "Mechanisms"), one test each."""

from dataclasses import replace

import pytest

from autotune.flops import hardware_flops_per_sample
from autotune.hardware import load_hardware, with_simulator_constants
from autotune.hardware.power_model import PowerCurve
from autotune.simulator import simulate, step_phases
from autotune.simulator.compute import CAUSAL_EXECUTED_SHARE, compute_parts, compute_time_s, part_efficiency
from autotune.simulator.comm import bandwidth_bps, hidden_comm_s, zero3_block_overhead_s, zero_comm_s


def _with(candidate, **constants):
    return replace(candidate, hardware=with_simulator_constants(candidate.hardware, constants))


def _phases(candidate):
    return {p.name: p for p in step_phases(candidate)}


def test_compute_parts_are_the_hardware_flops_less_the_masked_attention(make_candidate):
    for c in (make_candidate(model="7b", micro_batch=2, activation_checkpointing="recompute"),
              make_candidate(model="72b", nodes=8, sp_degree=2, activation_checkpointing="none")):
        parts = {p.name: p.flops for p in compute_parts(c)}
        seq = c.workload.tokens_per_sample(c.model)
        llm = c.model.llm
        passes = 4 if c.knobs.activation_checkpointing != "none" else 3
        causal_counted = llm.layers * 2 * (2 * seq * seq * llm.hidden) * passes / c.knobs.sp_degree
        expected = c.knobs.micro_batch * (hardware_flops_per_sample(c) / c.knobs.sp_degree
                                          - causal_counted * (1 - CAUSAL_EXECUTED_SHARE))
        assert sum(parts.values()) == pytest.approx(expected, rel=1e-9)
        assert parts["llm_attention"] > 0 and parts["vision_attention"] > 0


def test_narrow_layers_and_attention_run_slower_per_flop(make_candidate):
    """Mechanism 1: the rate depends on the shapes (7B's 3584-wide GEMMs and 1152-wide vision tower)."""
    c = make_candidate(model="7b", activation_checkpointing="recompute")
    eff = {p.name: part_efficiency(c, p) for p in compute_parts(c)}
    assert eff["vision_gemm"] < eff["llm_gemm"] <= c.hardware.simulator.max_compute_efficiency
    assert eff["llm_attention"] == pytest.approx(c.hardware.simulator.max_compute_efficiency
                                                 * c.hardware.simulator.attention_efficiency)

    def rate(model, nodes):  # FLOPs per second of compute, same tokens per micro-step
        c = make_candidate(model=model, nodes=nodes, activation_checkpointing="recompute")
        return sum(p.flops for p in compute_parts(c)) / compute_time_s(c)

    assert rate("7b", 1) < rate("32b", 4) < rate("72b", 8)
    # A larger elementwise share hurts the narrow model more than the wide one.
    def slowdown(model, nodes):
        c = _with(make_candidate(model=model, nodes=nodes, activation_checkpointing="recompute"),
                  gemm_half_efficiency_width=500.0)
        return compute_time_s(_with(c, gemm_half_efficiency_width=2000.0)) / compute_time_s(c)

    assert slowdown("7b", 1) > slowdown("72b", 8)


def test_overlap_is_bounded_by_the_compute_it_hides_behind(make_candidate):
    """Mechanism 2: hidden <= comm_overlap x compute; a share comm_exposed_min is never hidden."""
    c = make_candidate(model="72b", nodes=16, micro_batch=1, activation_checkpointing="recompute")
    k = c.hardware.simulator
    compute = compute_time_s(c)
    per_micro, _ = zero_comm_s(c)
    hidden, _ = hidden_comm_s(c, compute, per_micro, 0.0)
    assert hidden <= k.comm_overlap * compute + 1e-12 and hidden <= per_micro * (1 - k.comm_exposed_min) + 1e-12
    # More compute behind the same collectives hides more of them, up to the exposed share.
    tight = _with(c, comm_overlap=0.1, comm_exposed_min=0.0)
    hidden_1 = hidden_comm_s(tight, compute, per_micro, 0.0)[0]
    hidden_2 = hidden_comm_s(tight, 2 * compute, per_micro, 0.0)[0]
    assert hidden_2 == pytest.approx(min(per_micro, 2 * hidden_1)) and hidden_2 > hidden_1
    # Exposed collectives per sample fall when the batch doubles over the same GPUs.
    def exposed_per_sample(mb):
        c = make_candidate(model="72b", nodes=16, micro_batch=mb, activation_checkpointing="recompute",
                           workload={"global_batch": 256, "samples": 1024})
        return _phases(_with(c, comm_overlap=0.3))["communication"].time_s / c.grad_accum / mb

    assert exposed_per_sample(2) < exposed_per_sample(1)
    # Nothing overlaps without CUDA streams.
    assert hidden_comm_s(replace(c, hardware=replace(c.hardware, cuda=False)), compute, per_micro, 1.0) == (0.0, 0.0)


def test_ring_collectives_use_every_rail_all_to_all_does_not(make_candidate):
    c = make_candidate(model="32b", nodes=4)
    hw, eff = c.hardware, c.hardware.simulator.link_efficiency
    across = min(hw.intra_node.bandwidth_gbs, c.gpus_per_node * hw.inter_node.bandwidth_gbs) * 1e9 * eff
    assert bandwidth_bps(c, c.gpus) == pytest.approx(across)
    assert bandwidth_bps(c, c.gpus, ring=False) == pytest.approx(hw.inter_node.bandwidth_gbs * 1e9 * eff)
    assert bandwidth_bps(c, c.gpus_per_node) == pytest.approx(hw.intra_node.bandwidth_gbs * 1e9 * eff)


def test_zero3_pays_a_fixed_cost_per_block_and_pass(make_candidate):
    c = make_candidate(model="32b", micro_batch=1, activation_checkpointing="recompute")
    k, m = c.hardware.simulator, c.model
    assert zero3_block_overhead_s(c) == pytest.approx(k.zero3_block_overhead_s * (m.llm.layers + m.vision.layers) * 3)
    assert zero3_block_overhead_s(replace(c, knobs=replace(c.knobs, zero_stage=2))) == 0.0
    # The same per micro-step whatever its batch: a larger micro-batch amortises it.
    assert zero3_block_overhead_s(replace(c, knobs=replace(c.knobs, micro_batch=4))) == zero3_block_overhead_s(c)


def test_short_stalls_draw_compute_power_long_ones_do_not(make_candidate):
    c = make_candidate(model="7b", nodes=1, micro_batch=2, activation_checkpointing="offload_sync",
                       optimizer_offload="sync")
    phases = _phases(c)
    compute = phases["compute"].gpu_activity
    assert phases["zero3_block_overhead"].gpu_activity == compute
    assert phases["activation_offload"].gpu_activity == compute
    assert phases["host_optimizer"].gpu_activity == c.hardware.simulator.gpu_activity_offload_wait < compute


def test_a_module_sensor_sees_the_regulators_loss(make_candidate):
    """Mechanism 3: the GH200 module draws 126-146 W more than its GPU in the study, 55-71 W of it the CPU."""
    c = make_candidate(model="32b", micro_batch=2, activation_checkpointing="recompute")
    s = simulate(c)
    loss = c.hardware.simulator.power_delivery_loss
    inside = sum(v for name, v in s.energy_components_kj.items() if name != "power_delivery")
    assert s.energy_components_kj["power_delivery"] == pytest.approx(inside * loss / (1 - loss))
    steps_j = s.step_time_s * c.workload.samples / c.workload.global_batch * c.gpus / 1000
    cpu_w = s.energy_components_kj["cpu"] / steps_j
    assert 50 <= cpu_w <= 75
    assert 110 <= s.mean_power_w - s.mean_gpu_power_w <= 160
    # Per-component sensors (NVML, RAPL) measure after the regulators: no loss on an H100 node.
    assert PowerCurve.from_hardware(load_hardware("h100-sxm")).power_delivery_loss == 0.0
    assert "power_delivery" not in simulate(make_candidate(hardware="h100-sxm", nodes=1)).energy_components_kj
