"""The one function that turns a candidate into a DeepSpeed config.

The probe passes this dict to `deepspeed.initialize`, and `autotune export` writes the same dict,
so what is exported is exactly what was probed. Activation checkpointing is applied by the trainer
(`trainer.engine.apply_deepspeed`) from the candidate's `activation_checkpointing` knob; the
`activation_checkpointing` section here mirrors it for DeepSpeed's own checkpointing API.
"""

from __future__ import annotations

import json

from autotune.candidate import Candidate

# Bucket sizes from DeepSpeed's SuperOffload example (shared/reference/deepspeed.md).
_BUCKET_ELEMENTS = int(4e8)
# SuperOffload's share of the optimizer states stepped by CPU Adam (DeepSpeed's `ratio`, from its example, as the
# GH200 study ran it): the other 10% stay on the GPU and step there (autotune/memory.py counts them).
SUPEROFFLOAD_RATIO = 0.90
# Share of the host's cores SuperOffload pins its CPU Adam threads to (`cpuadam_cores_perc`, the same example).
SUPEROFFLOAD_CPU_CORES = 0.90


def _zero_section(candidate: Candidate) -> dict:
    knobs = candidate.knobs
    zero: dict = {"stage": knobs.zero_stage}
    if knobs.zero_stage == 0:
        return zero
    zero.update(
        {
            "overlap_comm": knobs.optimizer_offload != "async" and candidate.hardware.cuda,
            "contiguous_gradients": True,
            "reduce_bucket_size": _BUCKET_ELEMENTS,
        }
    )
    if knobs.zero_stage == 3:
        zero.update({"sub_group_size": _BUCKET_ELEMENTS, "stage3_prefetch_bucket_size": _BUCKET_ELEMENTS // 8})
        if knobs.sp_degree > 1:
            # DeepSpeed 0.19.8 ZeRO-3's reduce-scatter path averages gradients over the SP ranks too
            # (1/sp too small; stages 0-2 and ZeRO-3's contiguous path sum over SP as Ulysses needs).
            # Take the contiguous path: no reduce_scatter, and a bucket that holds the largest tensor
            # (a bigger one would fall back to reduce-scatter). tests/trainer checks SP 2 == SP 1.
            zero["reduce_scatter"] = False
            zero["reduce_bucket_size"] = max(_BUCKET_ELEMENTS, candidate.model.largest_layer_params())
    if knobs.optimizer_offload == "sync":
        # ZeRO-Offload: CPU Adam, the step waits for the host.
        zero["offload_optimizer"] = {"device": "cpu", "pin_memory": candidate.hardware.cuda}
    elif knobs.optimizer_offload == "async":
        # SuperOffload (ZeRO-3, CUDA only): the CPU step overlaps the next backward.
        zero["offload_optimizer"] = {
            "device": "cpu",
            "pin_memory": True,
            "ratio": SUPEROFFLOAD_RATIO,
            "super_offload": True,
            "cpuadam_cores_perc": SUPEROFFLOAD_CPU_CORES,
        }
    return zero


def _checkpointing_section(mode: str, cuda: bool = True) -> dict:
    """DeepSpeed's own checkpointing settings (for deepspeed.checkpointing.checkpoint, which the probe never calls:
    its engine ignores the section). `cuda`: the profile's. Without CUDA, DeepSpeed 0.19.8's checkpoint with
    cpu_checkpointing true fails in the recompute (a 0-d tensor reaches ZeRO-3's linear: trial76 #7), and host
    memory is the device's own, so there is nothing to offload to: false there."""
    return {
        "partition_activations": False,
        "cpu_checkpointing": offloads_activations(mode) and cuda,
        "contiguous_memory_optimization": False,
        "synchronize_checkpoint_boundary": False,
        "profile": False,
    }


def offloads_activations(mode: str) -> bool:
    """Whether an activation_checkpointing mode copies the kept block inputs to host memory."""
    return mode in ("offload_sync", "offload_async")


def deepspeed_config(candidate: Candidate, learning_rate: float = 1e-4) -> dict:
    """DeepSpeed JSON for one candidate (valid candidates only: see autotune.space.rules)."""
    knobs, workload = candidate.knobs, candidate.workload
    config: dict = {
        "train_batch_size": workload.global_batch,
        "train_micro_batch_size_per_gpu": knobs.micro_batch,
        "gradient_accumulation_steps": candidate.grad_accum,
        "gradient_clipping": 1.0,
        "steps_per_print": 10**9,
        "wall_clock_breakdown": False,
        "optimizer": {
            "type": "AdamW",
            "params": {"lr": learning_rate, "betas": [0.9, 0.95], "eps": 1e-8, "weight_decay": 0.0},
        },
        "zero_optimization": _zero_section(candidate),
        "bf16": {"enabled": candidate.precision == "bf16"},
    }
    if knobs.activation_checkpointing != "none":
        config["activation_checkpointing"] = _checkpointing_section(knobs.activation_checkpointing, candidate.hardware.cuda)
    if knobs.sp_degree > 1:
        config["sequence_parallel_size"] = knobs.sp_degree
    return config


def config_reasons(candidate: Candidate) -> dict[str, str]:
    """Why the config holds the values a reader of it would not guess (dotted key -> reason): the export
    writes them beside the config, where a newcomer's trial found `ratio: 0.9` and `reduce_scatter: false`
    unexplained, and a user on another DeepSpeed version could not tell whether to keep them."""
    knobs, reasons = candidate.knobs, {}
    if knobs.zero_stage == 3 and knobs.sp_degree > 1:
        reasons["zero_optimization.reduce_scatter"] = (
            "false, with a reduce_bucket_size that holds the largest tensor: DeepSpeed 0.19.8's ZeRO-3 reduce-scatter "
            "path averages the gradients over the sequence-parallel ranks too (1/SP too small); the contiguous path "
            "sums them as Ulysses needs. Keep it unless your DeepSpeed fixes that")
        # The bucket is sized for the tuned model: a newcomer's trial gave DeepSpeed a smaller one than its model's
        # largest tensor and got wrong gradients, with no message.
        reasons["zero_optimization.reduce_bucket_size"] = (
            f"{_zero_section(candidate)['reduce_bucket_size']}: max(4e8, the largest of the tuned model "
            f"({candidate.model.name})'s embedding (vocab x hidden) and one decoder or vision layer's parameters), so "
            "the bucket holds its largest tensor; a tensor bigger than the bucket takes the reduce-scatter path, whose "
            "gradients are 1/SP too small, with no message. For your own model set it to at least max(4e8, the element "
            "count of its largest parameter)")
    if offloads_activations(knobs.activation_checkpointing) and candidate.hardware.cuda:
        # A newcomer's trial (trial57 #7) found true beside a note saying the probe never ran it, and `why` empty.
        reasons["activation_checkpointing.cpu_checkpointing"] = (
            "true: DeepSpeed's own setting for activation offload, which it applies to a model that checkpoints "
            "through deepspeed.checkpointing.checkpoint (each checkpointed input copied to host memory); it is here "
            "so that such a model offloads as this pick did. The probe offloads through saved_tensors_hooks around "
            "torch.utils.checkpoint instead (trainer/checkpointing.py) and never ran this setting; a model that does "
            "as the probe does ignores it. On a machine without CUDA set it false (DeepSpeed 0.19.8 fails on it there)")
    elif offloads_activations(knobs.activation_checkpointing):
        # Trial76 #7: the cpu profile's pick said true, and the why told the user to undo it by hand.
        reasons["activation_checkpointing.cpu_checkpointing"] = (
            f"false, though this pick offloads activations: its profile ({candidate.hardware.name}) has no CUDA, where "
            "DeepSpeed 0.19.8's deepspeed.checkpointing.checkpoint fails with cpu_checkpointing true (in the recompute, "
            "\"both arguments to matmul need to be at least 1D\"), and host memory is the device's own, so there is "
            "nothing to offload to. The probe offloads through saved_tensors_hooks around torch.utils.checkpoint "
            "(trainer/checkpointing.py) and never ran this setting; on a CUDA machine set it true for a model that "
            "checkpoints through deepspeed.checkpointing.checkpoint")
    if knobs.optimizer_offload == "async":
        reasons["zero_optimization.offload_optimizer.ratio"] = (
            f"{SUPEROFFLOAD_RATIO:g}: SuperOffload steps this share of the optimizer states with CPU Adam and the "
            "rest on the GPU (DeepSpeed's SuperOffload example, as the GH200 study ran it); the memory estimate "
            "counts the share kept on the GPU")
        reasons["zero_optimization.offload_optimizer.cpuadam_cores_perc"] = (
            f"{SUPEROFFLOAD_CPU_CORES:g}: the share of the host's cores SuperOffload pins its CPU Adam threads to "
            "(the same example)")
        reasons["zero_optimization.overlap_comm"] = (
            "false: SuperOffload's example turns it off (on one GPU, where no collective is hidden; SuperOffload does "
            "not need it off). DeepSpeed then runs ZeRO-3's gathers and reduce-scatters on the compute stream, yet the "
            "simulated figures keep their overlap, which the GH200 study's SuperOffload runs ask for (docs/simulator.md): "
            "probe before trusting a simulated time, or try true on several GPUs")
    return reasons


def not_tuned(config: dict) -> dict[str, str]:
    """The settings deepspeed_config writes alike for every candidate (dotted key -> what to do with it): no study
    searched them, and a newcomer's trial could not tell `lr` or `weight_decay: 0.0` from tuned values."""
    optimizer = config["optimizer"]
    return {
        "optimizer": (f"the probe's {optimizer['type']} ({', '.join(f'{k} {json.dumps(v)}' for k, v in optimizer['params'].items())}): "
                      "not searched, set your own; another class changes what an optimizer-offload pick's figures mean "
                      "(its host step is DeepSpeed's CPU Adam)"),
        "gradient_clipping": f"the probe's {config['gradient_clipping']:g}: not searched, set your own",
        "steps_per_print": (f"{config['steps_per_print']}: silences DeepSpeed's step log for the probe's quiet output; "
                            "set your own"),
        "wall_clock_breakdown": f"the probe's {json.dumps(config['wall_clock_breakdown'])}: set your own",
    }


# What a candidate's knobs fix in its DeepSpeed config (dotted path, default where DeepSpeed has one): a
# config that says otherwise trains something else than the candidate whose figures it would carry.
_KNOB_KEYS = (
    ("train_batch_size", None),
    ("train_micro_batch_size_per_gpu", None),
    ("gradient_accumulation_steps", 1),
    ("zero_optimization.stage", 0),
    ("zero_optimization.offload_optimizer.device", "none"),
    ("zero_optimization.offload_optimizer.super_offload", False),
    ("bf16.enabled", False),
    ("sequence_parallel_size", 1),
)


def _at(config, path: str, default):
    for key in path.split("."):
        if not isinstance(config, dict) or key not in config:
            return default
        config = config[key]
    return config


def knob_contradictions(config: dict, candidate: Candidate) -> list[str]:
    """Where a DeepSpeed config (an exported one, edited by hand) sets what the candidate's knobs set
    otherwise: "zero_optimization.stage 3 (the candidate's: 0)" each."""
    expected = deepspeed_config(candidate)
    found = []
    for path, default in _KNOB_KEYS:
        given, wanted = _at(config, path, default), _at(expected, path, default)
        if given != wanted:
            found.append(f"{path} {json.dumps(given)} (the candidate's: {json.dumps(wanted)})")
    return found
