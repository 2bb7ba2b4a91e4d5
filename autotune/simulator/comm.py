"""ZeRO and Ulysses communication of one GPU per step, and how much of it hides behind compute."""

from __future__ import annotations

from autotune.candidate import Candidate


def _constants(candidate: Candidate):
    return candidate.hardware.simulator


def bandwidth_bps(candidate: Candidate, group_size: int, ring: bool = True) -> float:
    """Collective bandwidth per GPU: intra-node when the group fits one node, else across nodes.

    Mechanism (rail-aligned rings): NCCL runs one ring per NIC rail, each carrying its share of the
    data, so a ring collective across nodes moves at the node's aggregate NIC bandwidth per GPU
    (gpus_per_node x inter_node, one HCA per GPU), capped by the intra-node links its in-node hops
    use. nccl-tests bus bandwidth across DGX A100 nodes (8 x 25 GB/s HDR) is ~190 GB/s, not 25. An
    all-to-all (Ulysses) has no such rings: each GPU's traffic leaves through its own NIC.
    """
    hw = candidate.hardware
    efficiency = _constants(candidate).link_efficiency
    if group_size <= candidate.gpus_per_node:
        return hw.intra_node.bandwidth_gbs * 1e9 * efficiency
    across_gbs = hw.inter_node.bandwidth_gbs
    if ring:
        across_gbs = min(hw.intra_node.bandwidth_gbs, candidate.gpus_per_node * across_gbs)
    return across_gbs * 1e9 * efficiency


def ulysses_time_s(candidate: Candidate) -> float:
    """All-to-all of q, k, v and the output per LLM layer, forward, backward and recompute."""
    sp = candidate.knobs.sp_degree
    if sp == 1:
        return 0.0
    llm = candidate.model.llm
    s_local = candidate.workload.tokens_per_sample(candidate.model) / sp
    elem_b = candidate.bytes_per_element
    per_layer = (2 * llm.hidden + 2 * llm.kv_heads * llm.head_dim) * s_local * candidate.knobs.micro_batch * elem_b
    passes = 3 if candidate.knobs.activation_checkpointing != "none" else 2
    volume = llm.layers * per_layer * passes * (sp - 1) / sp
    return volume / bandwidth_bps(candidate, sp, ring=False)


def zero_comm_s(candidate: Candidate) -> tuple[float, float]:
    """(per micro-step, per optimizer boundary) seconds of ZeRO collectives, before overlap."""
    g = candidate.gpus
    if g == 1:
        return 0.0, 0.0
    p = candidate.model.params()
    elem_b = candidate.bytes_per_element
    ring = (g - 1) / g
    bw = bandwidth_bps(candidate, g)
    stage = candidate.knobs.zero_stage
    grads = p * elem_b * ring / bw
    params = p * elem_b * ring / bw
    if stage in (0, 1):
        boundary = 2 * grads + (params if stage == 1 else 0.0)  # all-reduce (+ all-gather of updated params)
        return 0.0, boundary
    if stage == 2:
        return grads, params  # reduce-scatter each micro-step, all-gather after the step
    gathers = 3 if candidate.knobs.activation_checkpointing != "none" else 2
    return gathers * params + grads, 0.0


def hidden_comm_s(candidate: Candidate, compute_s: float, per_micro_s: float, boundary_s: float) -> tuple[float, float]:
    """(per micro-step, per optimizer boundary) seconds of ZeRO collectives hidden behind compute.

    Mechanism (overlap bounded by the compute it hides behind): a collective on a side stream hides
    only while compute runs, and shares the SMs and HBM with it, so at most comm_overlap x the
    micro-step's compute time is hidden; the rest is exposed. A large model over a slow network
    (72B on 32 GPUs at micro-batch 1) exposes communication that a doubled batch hides, which is
    why offloading, by freeing memory for that batch, sped it up most. The boundary collectives
    (all-reduce for ZeRO 0/1, parameter all-gather for 2) hide in what is left of the last
    micro-step's backward (2/3 of its compute). A share comm_exposed_min of every collective is never
    hidden (the pipeline's fill and drain, gathers waited on beyond the prefetch depth), so even
    well-hidden ZeRO-3 traffic costs time in proportion to the model's size over the link's speed.
    Nothing overlaps without CUDA streams.
    """
    if not candidate.hardware.cuda:
        return 0.0, 0.0
    k = _constants(candidate)
    window_s = k.comm_overlap * compute_s
    hideable = 1 - k.comm_exposed_min
    hidden_micro = min(per_micro_s * hideable, window_s)
    hidden_boundary = min(boundary_s * hideable, max(0.0, window_s * 2 / 3 - hidden_micro))
    return hidden_micro, hidden_boundary


def zero3_block_overhead_s(candidate: Candidate) -> float:
    """Per micro-step: ZeRO-3's fixed cost per block and pass, paid whatever the batch.

    Mechanism (ZeRO-3 per-module overhead): before each block runs, ZeRO-3's hooks fetch its
    parameter partitions (launching the all-gather and waiting for the first one the prefetch did not
    cover) and release them after; the cost is per module, not per token, so a larger micro-batch
    amortises it. This is why a doubled batch sped every model in the GH200 study up by 6-20%
    although the GEMMs were large at either batch. Every SP rank runs every block.
    """
    if candidate.knobs.zero_stage != 3:
        return 0.0
    model = candidate.model
    passes = 3 if candidate.knobs.activation_checkpointing != "none" else 2
    return _constants(candidate).zero3_block_overhead_s * (model.llm.layers + model.vision.layers) * passes
