"""What the power sampler costs a busy training process: a busy loop with and without sampling.

    python benchmarks/measure_overhead.py --out test-artifacts/measure_overhead.json

The sampler reads every source of a node each period. This machine may have no sensor, so by
default it samples a fake GH200 tree (16 hwmon sensors, the largest node the project targets) written
to a temporary directory; `--real` samples this machine's own sources instead. The busy loop is pure
Python, i.e. it holds the GIL all the time: the worst case for a sampler thread (a real training
step spends most of its time in kernels that release it).

Two busy loops: `python` (pure Python: holds the GIL all the time, the worst case for a sampler
thread, which must win the GIL back after every sensor read) and `torch` (single-threaded CPU
matmuls that release the GIL, like the kernels of a training step; skipped without torch).
Figures per period and loop:
- wall overhead: fastest run with sampling vs fastest run without (runs interleaved; the minimum is
  the run the neighbours disturbed least). This is the figure judged against 0.5%; on a shared VM
  its noise floor is a few tenths of a percent, so read it with `--repeats` high.
- sampler CPU: the sampler thread's own CPU time (wake-ups included) over the loop's wall time:
  what sampling takes from another core.
- noise floor: median minus fastest baseline run; above 0.5% the verdict is INCONCLUSIVE (exit 2).
- GIL bound: inline cost of one tick x ticks/s: the GIL time the sampler's reads take from the loop
  (hand-offs aside), an upper bound that does not depend on the neighbours.
- ticks/s: the sampling rate achieved (below 1/period when the sampler waits for the GIL).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from autotune.measure import PowerSampler, discover  # noqa: E402

LABELS = ("Module", "Grace", "CPU", "SysIO")
LIMIT_PCT = 0.5


def write_fake_gh200(root: Path, sockets: int = 4) -> None:
    for n in range(sockets * len(LABELS)):
        device = root / "class" / "hwmon" / f"hwmon{n}" / "device"
        device.mkdir(parents=True)
        (device / "power1_oem_info").write_text(f"{LABELS[n % 4]} Power Socket {n // 4}\n")
        (device / "power1_average").write_text("600000000\n")
        (device / "power1_average_interval").write_text("50\n")


def python_loop(iterations: int) -> float:
    start = time.perf_counter()
    total = 0
    for i in range(iterations):
        total += i * i % 7
    return time.perf_counter() - start


def torch_loop_factory():
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)
    a, b = torch.randn(256, 256), torch.randn(256, 256)

    def torch_loop(iterations: int) -> float:
        start = time.perf_counter()
        for _ in range(iterations):
            torch.mm(a, b)
        return time.perf_counter() - start

    return torch_loop


class TimedSampler(PowerSampler):
    """Records the sampler thread's own CPU time."""

    thread_cpu_s = 0.0

    def _loop(self) -> None:
        start = time.thread_time()
        super()._loop()
        self.thread_cpu_s = time.thread_time() - start


def timed_run(loop, sources, period_s: float | None, iterations: int) -> dict:
    sampler = TimedSampler(sources, period_s=period_s) if period_s else None
    if sampler:
        sampler.start()
    try:
        wall_s = loop(iterations)
    finally:
        if sampler:
            sampler.stop()
    return {"wall_s": wall_s, "ticks": sampler.tick_count if sampler else 0,
            "sampler_cpu_s": sampler.thread_cpu_s if sampler else 0.0}


def measure_loop(name, loop, sources, periods, seconds: float, repeats: int) -> list[dict]:
    iterations = max(1, int(10_000 * seconds / loop(10_000)))
    loop(iterations // 4)  # warm-up
    runs: dict = {None: [], **{p: [] for p in periods}}
    for _ in range(repeats):
        for period_s in runs:  # interleaved, so slow spells of the machine hit every variant
            runs[period_s].append(timed_run(loop, sources, period_s, iterations))
    base_wall_s = min(r["wall_s"] for r in runs[None])
    # Noise floor: how far a typical baseline run sits above the fastest one. When it exceeds the
    # limit, the wall comparison cannot tell 0.5% from nothing, and the verdict says so.
    noise_pct = 100 * (statistics.median(r["wall_s"] for r in runs[None]) - base_wall_s) / base_wall_s
    rows = []
    for period_s in periods:
        wall_s = min(r["wall_s"] for r in runs[period_s])
        rows.append({
            "loop": name, "period_s": period_s, "sources": len(sources), "baseline_wall_s": base_wall_s,
            "wall_s": wall_s, "wall_overhead_pct": 100 * (wall_s - base_wall_s) / base_wall_s,
            "sampler_cpu_pct": statistics.median(100 * r["sampler_cpu_s"] / r["wall_s"] for r in runs[period_s]),
            "ticks_per_s": statistics.median(r["ticks"] / r["wall_s"] for r in runs[period_s]),
            "noise_floor_pct": noise_pct,
        })
    return rows


def tick_cost_s(sources, ticks: int = 2000) -> float:
    sampler = PowerSampler(sources, period_s=1.0)
    start = time.perf_counter()
    for _ in range(ticks):
        sampler.tick()
    return (time.perf_counter() - start) / ticks


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="length of one busy loop (about)")
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--periods", default="0.1,0.01", help="sampling periods to test, seconds")
    parser.add_argument("--real", action="store_true", help="sample this machine's sources")
    parser.add_argument("--out", type=Path, help="write the figures as JSON here")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        if not args.real:
            write_fake_gh200(Path(tmp))
        found = discover(None if args.real else tmp, kinds=None if args.real else ["hwmon"])
        if not found.sources:
            print("no source to sample (try without --real)", file=sys.stderr)
            return 1
        periods = [float(p) for p in args.periods.split(",")]
        loops = [("python", python_loop), ("torch", torch_loop_factory())]
        rows = []
        for name, loop in loops:
            if loop is None:
                print(f"skipping the {name} loop: not importable", file=sys.stderr)
                continue
            rows += measure_loop(name, loop, found.sources, periods, args.seconds, args.repeats)
        tick_s = tick_cost_s(found.sources)
        for row in rows:
            row["tick_cost_inline_us"] = tick_s * 1e6
            # upper bound of the GIL time the sampler's own reads take from the loop (hand-offs aside)
            row["gil_bound_pct"] = 100 * tick_s * row["ticks_per_s"]
        sources = len(found.sources)
        found.close()

    what = "real sources" if args.real else "fake GH200 tree"
    print_table(rows, args.repeats, f"{what}, {sources} sensors")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"limit_pct": LIMIT_PCT, "repeats": args.repeats, "rows": rows,
                                                                                "python": sys.version.split()[0],
                                        "cpus": os.cpu_count(), "load_avg": os.getloadavg()}, indent=2))
    noisy = [r for r in rows if r["noise_floor_pct"] > LIMIT_PCT]
    passed = all(r["wall_overhead_pct"] < LIMIT_PCT for r in rows)
    if noisy:
        print(f"INCONCLUSIVE: the machine's noise floor ({max(r['noise_floor_pct'] for r in noisy):.1f}%) "
              f"exceeds the {LIMIT_PCT}% limit; rerun on a quiet machine. GIL bound: "
              + ", ".join(f"{r['loop']} {r['period_s'] * 1000:.0f} ms {r['gil_bound_pct']:.2f}%" for r in rows))
        return 2
    print(f"{'PASS' if passed else 'FAIL'}: wall overhead under {LIMIT_PCT}% for every loop and period")
    return 0 if passed else 1


def print_table(rows, repeats: int, what: str) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"Sampler overhead on busy loops ({what}; {repeats} interleaved runs each)")
    for column in ("loop", "period", "baseline (s)", "noise floor", "wall overhead (min)", "GIL bound",
                   "sampler CPU", "ticks/s", "tick inline"):
        table.add_column(column, justify="right")
    for r in rows:
        table.add_row(r["loop"], f"{r['period_s'] * 1000:.0f} ms", f"{r['baseline_wall_s']:.3f}",
                      f"{r['noise_floor_pct']:.2f}%", f"{r['wall_overhead_pct']:+.2f}%",
                      f"{r['gil_bound_pct']:.3f}%", f"{r['sampler_cpu_pct']:.3f}%",
                      f"{r['ticks_per_s']:.1f}", f"{r['tick_cost_inline_us']:.0f} us")
    Console().print(table)


if __name__ == "__main__":
    sys.exit(main())
