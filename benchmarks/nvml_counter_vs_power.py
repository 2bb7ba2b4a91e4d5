"""NVML energy counter vs integrated power on every GPU of this machine, under a steady load.

    python benchmarks/nvml_counter_vs_power.py --seconds 30 --out test-artifacts/nvml_counter_vs_power.json

Runs a matmul load on each GPU (torch, CUDA) for `--seconds`, samples NVML at `--period` (instant
power, falling back to the averaged reading) and reports per GPU: the counter's energy, the
trapezoid integral of sampled power, their disagreement, and the driver's own 1 s average for
reference. The load and the window are bracketed by torch.cuda.synchronize(). Needs an NVIDIA GPU.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from autotune.measure import EnergyWindow, node_block, nvml  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--period", type=float, default=0.1)
    parser.add_argument("--size", type=int, default=8192, help="matmul size of the load")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)

    found = nvml.probe()
    if not found.sources:
        print(f"no NVML GPU: {found.missing[0].reason if found.missing else 'none found'}", file=sys.stderr)
        return 1
    import torch

    devices = [torch.device("cuda", i) for i in range(torch.cuda.device_count())]
    operands = [(torch.randn(args.size, args.size, device=d, dtype=torch.bfloat16),) * 2 for d in devices]
    for a, b in operands:  # warm-up: clocks ramp, kernels load; outside the window
        for _ in range(20):
            a @ b
    torch.cuda.synchronize()
    window = EnergyWindow(found.sources, period_s=args.period)
    window.begin()
    deadline = time.time() + args.seconds
    while time.time() < deadline:
        for a, b in operands:
            a @ b
        torch.cuda.synchronize()
    result = window.end()
    block = node_block(result)
    rows = []
    for entry, source in zip(result.entries, found.sources):
        rows.append({"gpu": entry.label, "scope": entry.scope, "counter_j": entry.counter_j,
                     "integrated_j": entry.integrated_j, "window_s": result.window_s,
                     "disagreement_pct": block["counter_vs_integrated"].get(entry.label, {}).get("disagreement_pct"),
                     "mean_power_w": entry.mean_power_w, "driver_average_w_at_end": source.read_average_power_w(),
                     "samples": window.sampler.tick_count, "power_reading": source.power_mode})
    for row in rows:
        print(json.dumps(row))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"rows": rows, "period_s": args.period, "seconds": args.seconds,
                                        "flags": block["flags"]}, indent=2))
    for source in found.sources:
        source.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
