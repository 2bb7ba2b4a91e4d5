"""result.json: what one probe hands back to the tuner (schema: docs/result-schema.md).

Measured figures only; a failed or refused probe still writes a file with `status` and `error`.
The file is written atomically, and the first writer wins: a rank that fails writes its own error,
and the errors other ranks then see (a dead peer) cannot overwrite it.
"""

from __future__ import annotations

import json
import math
import os
import resource
import statistics
import traceback
from pathlib import Path

import torch

from trainer.model.attention import flash_attn_available
from autotune.atomic_write import temp_file_beside, write_failure, write_fix
from autotune.candidate import Candidate
from autotune.checks import text_head
from autotune.flops import flops_per_sample, hardware_flops_per_sample

SCHEMA_VERSION = 1
_GIB = 1024**3
_KIB = 1024
_RESULT_HEAD_BYTES = 4096


def bytes_to_gib(value: float) -> float:
    return value / _GIB


def is_oom(exc: BaseException) -> bool:
    """torch.OutOfMemoryError (CUDA), MemoryError, and the allocator errors that arrive as RuntimeError."""
    if isinstance(exc, (torch.OutOfMemoryError, MemoryError)):
        return True
    text = str(exc)
    return isinstance(exc, RuntimeError) and (
        "out of memory" in text.lower() or "DefaultCPUAllocator: can't allocate memory" in text
    )


def peak_memory() -> tuple[float, str]:
    """(GiB, kind): CUDA max_memory_allocated, or the peak RSS of this process on CPU."""
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        return bytes_to_gib(torch.cuda.max_memory_allocated()), "cuda_max_memory_allocated"
    rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    return bytes_to_gib(rss_kib * _KIB), "process_peak_rss"


def flops_per_sample_train(candidate: Candidate) -> tuple[float, float]:
    """(model, hardware) FLOPs of one training sample: model FLOPs are what MFU is quoted on,
    hardware FLOPs add recomputation and the vision tower repeated on every SP rank."""
    return flops_per_sample(candidate.model, candidate.workload).model_train, hardware_flops_per_sample(candidate)


def step_statistics(step_times_s: list[float]) -> dict:
    return {
        "mean": statistics.fmean(step_times_s) if step_times_s else math.nan,
        "std": statistics.stdev(step_times_s) if len(step_times_s) > 1 else 0.0,
        "min": min(step_times_s, default=math.nan),
        "max": max(step_times_s, default=math.nan),
    }


def throughput(candidate: Candidate, steps: int, window_s: float, world_size: int) -> dict:
    """Samples/s, TFLOP/s (whole job and per device), MFU against the profile's peak."""
    model_flops, hardware_flops = flops_per_sample_train(candidate)
    samples = steps * candidate.workload.global_batch
    samples_per_s = samples / window_s
    peak_tflops = candidate.hardware.peak_tflops(candidate.precision)
    model_tflops = samples_per_s * model_flops / 1e12
    hardware_tflops = samples_per_s * hardware_flops / 1e12
    return {
        "samples_per_s": samples_per_s,
        "tokens_per_s": samples_per_s * candidate.workload.tokens_per_sample(candidate.model),
        "flops_per_sample": {"model": model_flops, "hardware": hardware_flops},
        "tflops": {
            "model_total": model_tflops,
            "model_per_device": model_tflops / world_size,
            "hardware_total": hardware_tflops,
            "hardware_per_device": hardware_tflops / world_size,
        },
        "peak_tflops_per_device": peak_tflops,
        "mfu": model_tflops / world_size / peak_tflops,
        "hfu": hardware_tflops / world_size / peak_tflops,
    }


def base_result(candidate: Candidate | None, ds_config: dict | None, world_size: int, device: str,
                data: dict | None = None) -> dict:
    """The keys every result.json holds, whatever its status. `data`: what the probe trained on (probe.data_source)."""
    return {
        "schema_version": SCHEMA_VERSION,
        "source": "measured",
        "status": "failed",
        "candidate": candidate.to_dict() if candidate is not None else None,
        "ds_config": ds_config,
        "world_size": world_size,
        "device": device,
        # Which attention kernel the model ran: the GH200 study used FlashAttention-2.
        "attention": "flash_attn" if flash_attn_available() else "torch_sdpa",
        # Decoding real videos costs host time and energy that synthetic samples do not (docs/data.md): two results
        # of one candidate far apart must say which trained on what (trial 67 #8).
        "data": data,
    }


def failure_result(base: dict, exc: BaseException, rank: int, refused: bool = False, setup: bool = False) -> dict:
    """`setup`: the failure is the set-up's, not the candidate's (trainer/setup_fault.py): `setup_failure: true`, and
    the tuner probes the candidate again when the study resumes; `false` for the candidate's own, said rather than left
    out, so the tuner tells it from a result of a trainer older than the key (which cannot say; study/failures.py).
    Neither for a refusal nor an out-of-memory."""
    result = dict(base)
    result["status"] = "oom" if is_oom(exc) else "failed"
    result["error"] = f"{type(exc).__name__}: {exc}"
    result["failed_rank"] = rank
    if refused:
        result["refused"] = True
    else:
        if result["status"] == "failed":
            result["setup_failure"] = setup
        result["traceback"] = "".join(traceback.format_exception(exc))[-4000:]
    return result


def summary_line(result: dict, path: Path) -> str:
    """What a finished probe measured, in one line for whoever started it by hand (an exported
    launch.sh): the result file holds the rest."""
    energy = result.get("energy") or {}
    joules = energy.get("energy_j")
    said = f"{joules:.4g} J ({energy.get('provenance')})" if joules is not None else f"energy {energy.get('provenance', 'unavailable')}"
    return (
        f"probe: {result['status']}: {result['steps']['measured']} steps measured after {result['steps']['warmup']} warm-up, "
        f"{result['step_time_s']['mean']:.4g} s per step, {result['tflops']['model_per_device']:.4g} TFLOP/s per device, "
        f"{said} in the {result['window_s']:.3g} s window; result: {path}"
    )


def is_result_file(path: Path) -> bool:
    """Whether `path` holds what write_result writes (or nothing): the probe replaces its --out, and
    must not take a dataset, a script or a candidate file for a stale result. Reads the head only:
    write_result puts `schema_version` first."""
    head = text_head(path, _RESULT_HEAD_BYTES)
    return head is not None and (not head.strip() or (head.lstrip().startswith("{") and '"schema_version"' in head))


def write_result(path: Path, result: dict, overwrite: bool) -> bool:
    """Atomic write; with overwrite=False the first writer wins. Returns whether this call wrote.
    The file gets the mode a plain open() would give it (autotune.atomic_write): teammates and jobs
    under other accounts read results."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = temp_file_beside(path)
    try:
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(result, handle, indent=2, default=str)
                handle.write("\n")
        except OSError as exc:
            # The errno stays (trainer/setup_fault.py reads it: a full disk or `ulimit -f` is the set-up's); the words
            # name the file and, for EFBIG, the limit, which "[Errno 27] File too large" alone did not (trial79 #5).
            raise OSError(exc.errno, f"cannot write {path}: {write_failure(exc)}; {write_fix(exc)}") from exc
        if overwrite:
            os.replace(tmp, path)
            return True
        try:
            os.link(tmp, path)  # fails if the file exists: exclusive, atomic
            return True
        except FileExistsError:
            return False
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
