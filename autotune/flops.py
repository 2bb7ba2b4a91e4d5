"""Analytic FLOPs of one training sample: ViT, projector and LLM, term by term.

Conventions (the same as Megatron-LM's and PaLM's MFU accounting):
- a multiply-add is 2 FLOPs; training = forward + backward = 3x forward;
- attention scores and the weighted sum are counted over the full s x s matrix (causal masking is
  not discounted), which is also how `torch.utils.flop_counter` counts scaled_dot_product_attention;
- the LM head runs on text positions only (the loss is on text tokens);
- norms, activations, rotary embeddings and the softmax are left out (well under 1%).
Hardware FLOPs add one more forward pass of every block that activation checkpointing recomputes.
"""

from __future__ import annotations

from dataclasses import dataclass

from autotune.candidate import Candidate
from autotune.models import ModelSpec
from autotune.workload import Workload

TRAIN_MULTIPLIER = 3  # forward + backward (backward = 2x forward: grads w.r.t. inputs and weights)


@dataclass(frozen=True)
class FlopsPerSample:
    """Forward FLOPs of one sample, by part; `blocks` is the part inside checkpointable blocks."""

    vit: float
    projector: float
    llm: float
    blocks: float

    @property
    def forward(self) -> float:
        return self.vit + self.projector + self.llm

    @property
    def model_train(self) -> float:
        """Model FLOPs of one training sample (what TFLOP/s and MFU are quoted on)."""
        return TRAIN_MULTIPLIER * self.forward

    def hardware_train(self, recompute: bool) -> float:
        """FLOPs the device actually runs: recomputation repeats the blocks' forward pass."""
        return self.model_train + (self.blocks if recompute else 0.0)


def vit_block_flops(model: ModelSpec) -> float:
    v = model.vision
    n, h = v.patches_per_frame, v.hidden
    qkvo = 2 * n * h * (4 * h)  # q, k, v, o projections
    attention = 2 * (2 * n * n * h)  # q @ k^T and softmax @ v over all heads
    mlp = 2 * n * (2 * h * v.mlp)  # fc1 + fc2
    return qkvo + attention + mlp


def llm_block_flops(model: ModelSpec, seq_len: int) -> float:
    m = model.llm
    kv_dim = m.kv_heads * m.head_dim
    q_and_o = 2 * seq_len * (2 * m.hidden * m.hidden)
    k_and_v = 2 * seq_len * (2 * m.hidden * kv_dim)  # grouped-query attention: narrower k and v
    attention = 2 * (2 * seq_len * seq_len * m.hidden)
    swiglu = 2 * seq_len * (3 * m.hidden * m.ffn)  # gate, up, down
    return q_and_o + k_and_v + attention + swiglu


def flops_per_sample(model: ModelSpec, workload: Workload) -> FlopsPerSample:
    v, m = model.vision, model.llm
    frames = workload.frames
    patch_embed = 2 * v.patches_per_frame * (3 * v.patch * v.patch) * v.hidden
    vit_blocks = v.layers * vit_block_flops(model)
    vit = frames * (patch_embed + vit_blocks)

    pooled = v.tokens_per_frame
    projector = frames * 2 * pooled * (v.hidden * v.pool**2 * m.hidden + m.hidden * m.hidden)

    seq_len = workload.tokens_per_sample(model)
    llm_blocks = m.layers * llm_block_flops(model, seq_len)
    lm_head = 2 * workload.text_tokens * m.hidden * m.vocab
    return FlopsPerSample(
        vit=float(vit),
        projector=float(projector),
        llm=float(llm_blocks + lm_head),
        blocks=float(frames * vit_blocks + llm_blocks),
    )


def workload_model_tflop(candidate: Candidate) -> float:
    """The model TFLOP one GPU runs for the candidate's whole workload: what its model TFLOP/s per GPU times the
    workload's time is (the trainer's result and the simulator count TFLOP/s by model_train)."""
    per_sample = flops_per_sample(candidate.model, candidate.workload).model_train
    return per_sample * candidate.workload.samples / candidate.gpus / 1e12


def hardware_flops_per_sample(candidate: Candidate) -> float:
    """FLOPs the trainer really runs for one training sample, over all ranks that share it.

    On top of the model FLOPs: one more forward of every recomputed block when checkpointing, and the
    vision tower + projector (forward and backward) repeated on each of the sp_degree ranks that
    share a sample, since Ulysses shards only the decoder. Sequence padding is left out (< sp tokens).
    """
    knobs = candidate.knobs
    fps = flops_per_sample(candidate.model, candidate.workload)
    recompute = knobs.activation_checkpointing != "none"
    vit_blocks = candidate.workload.frames * candidate.model.vision.layers * vit_block_flops(candidate.model)
    vision_train = TRAIN_MULTIPLIER * (fps.vit + fps.projector) + (vit_blocks if recompute else 0.0)
    return fps.hardware_train(recompute) + (knobs.sp_degree - 1) * vision_train
