"""Model TFLOP/s and MFU of the trainer's model on this device (one process, plain PyTorch + AdamW).

    python benchmarks/mfu.py --model tiny --hardware cpu --steps 5 --out mfu-cpu.json
    python benchmarks/mfu.py --model benchmarks/models/qwen2.5-1.5b.json --hardware h100-sxm \\
        --frames 8 --text-tokens 256 --micro-batch 1 --activation-checkpointing recompute --out mfu-h100.json

FLOPs are autotune.flops' analytic model FLOPs (3 x forward, the MFU convention); the peak is the
hardware profile's (candidate.hardware.peak_tflops(precision)). No DeepSpeed: this measures the
model's kernels, the ceiling a probe's MFU can approach.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="tiny", help="preset or model JSON (e.g. benchmarks/models/qwen2.5-1.5b.json)")
    parser.add_argument("--hardware", default=None, help="profile for the peak (default: h100-sxm on CUDA, else cpu)")
    parser.add_argument("--frames", type=int)
    parser.add_argument("--text-tokens", type=int)
    parser.add_argument("--micro-batch", type=int, default=1)
    parser.add_argument("--precision", choices=("bf16", "fp32"))
    parser.add_argument("--activation-checkpointing", default="none",
                        choices=("none", "recompute", "offload_sync", "offload_async"))
    parser.add_argument("--warmup-steps", type=int, default=2)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--out", help="write the figures as JSON here")
    return parser.parse_args(argv)


def _sync(cuda: bool) -> None:
    import torch

    if cuda:
        torch.cuda.synchronize()


def measure(args: argparse.Namespace) -> dict:
    import torch

    from autotune.flops import flops_per_sample
    from autotune.hardware import load_hardware
    from autotune.models import load_model
    from autotune.workload import make_workload
    from trainer.checkpointing import apply_activation_checkpointing
    from trainer.data import SyntheticVideoSamples
    from trainer.model import build_model

    cuda = torch.cuda.is_available()
    device = torch.device("cuda" if cuda else "cpu")
    hardware = load_hardware(args.hardware or ("h100-sxm" if cuda else "cpu"))
    spec = load_model(args.model)
    workload = make_workload(spec, frames=args.frames, text_tokens=args.text_tokens, precision=args.precision)
    precision = workload.precision or ("bf16" if cuda else "fp32")
    dtype = torch.bfloat16 if precision == "bf16" else torch.float32

    model = build_model(spec).to(device=device, dtype=dtype)
    apply_activation_checkpointing(model, args.activation_checkpointing, cuda)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
    samples = SyntheticVideoSamples(spec, workload, length=args.micro_batch)
    batch = torch.utils.data.default_collate([samples[i] for i in range(args.micro_batch)])
    batch = {k: v.to(device, dtype=dtype if v.is_floating_point() else None) for k, v in batch.items()}

    def step() -> None:
        model(batch).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    for _ in range(args.warmup_steps):
        step()
    times_s = []
    for _ in range(args.steps):
        _sync(cuda)
        start = time.perf_counter()
        step()
        _sync(cuda)
        times_s.append(time.perf_counter() - start)

    step_s = statistics.fmean(times_s)
    model_flops = args.micro_batch * flops_per_sample(spec, workload).model_train
    tflops = model_flops / step_s / 1e12
    peak = hardware.peak_tflops(precision)
    return {
        "model": spec.name,
        "params": spec.params(),
        "device": torch.cuda.get_device_name() if cuda else "cpu",
        "hardware_profile": hardware.name,
        "precision": precision,
        "frames": workload.frames,
        "text_tokens": workload.text_tokens,
        "tokens_per_sample": workload.tokens_per_sample(spec),
        "micro_batch": args.micro_batch,
        "activation_checkpointing": args.activation_checkpointing,
        "step_time_s": {"mean": step_s, "std": statistics.stdev(times_s) if len(times_s) > 1 else 0.0},
        "model_tflops_per_s": tflops,
        "peak_tflops": peak,
        "mfu": tflops / peak,
        "peak_memory_gib": torch.cuda.max_memory_allocated() / 1024**3 if cuda else None,
        "command": " ".join(["python", "benchmarks/mfu.py", *sys.argv[1:]]),
    }


def main(argv=None) -> int:
    args = parse_args(argv)
    figures = measure(args)
    rows = [
        ("model", f"{figures['model']} ({figures['params'] / 1e9:.3g} B params)"),
        ("device", f"{figures['device']} (peak {figures['peak_tflops']} TFLOP/s {figures['precision']}, "
                   f"profile {figures['hardware_profile']})"),
        ("sample", f"{figures['frames']} frames + {figures['text_tokens']} text = {figures['tokens_per_sample']} tokens"
                   f", micro-batch {figures['micro_batch']}, checkpointing {figures['activation_checkpointing']}"),
        ("step time", f"{figures['step_time_s']['mean']:.4f} s (std {figures['step_time_s']['std']:.4f})"),
        ("model TFLOP/s", f"{figures['model_tflops_per_s']:.4g}"),
        ("MFU", f"{100 * figures['mfu']:.2f} %"),
    ]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    if args.out:
        Path(args.out).write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
