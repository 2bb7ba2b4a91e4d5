"""Every check that needs an NVIDIA GPU, in one run of under 10 minutes on one H100 (or GH200).

    bash benchmarks/gpu_check.sh [OUT_DIR]        # default test-artifacts/gpu_check

1. `autotune sensors --json --sample 2`: the sources, each GPU's power limits and clocks;
2. NVML energy counter against integrated power under a matmul load (benchmarks/nvml_counter_vs_power.py);
3. `pytest tests/measure -m gpu` (the real-NVML tests);
4. a 1-GPU probe at power limit 1.0 and at 0.5 of a workload that draws more than half the default
   limit (global batch 4, micro-batch 2: about 500 W on an H100): the limit read from NVML while each
   runs, and after each the limit back at its value from before (restore verified); `power_trade`: the
   0.5 probe used at least POWER_TRADE_MIN_SAVING less energy per step (the limit trades time for
   energy, measured); then a probe at 0.5 killed with SIGTERM mid-run, and the restore verified again.
   Needs root or CAP_SYS_ADMIN: without it these are "skipped" with NVML's reason (never a silent pass);
5. benchmarks/mfu.py on the 1.5B-class model.

Writes OUT_DIR/gpu_check.json (every check: status ok | failed | skipped, seconds, figures, reason),
OUT_DIR/figures.md (rows for docs/benchmarks.md) and each check's own files and logs. Exit status 0
only when every check is ok; 2 when there is no GPU (nothing runs).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from autotune.measure import device_control as dc  # noqa: E402
from autotune.measure import nvml  # noqa: E402

BUDGET_S = 570.0  # 10 minutes, less room for start-up and the summary
PROBE_MODEL = "benchmarks/models/qwen2.5-1.5b.json"
# Power-bound on an H100 (docs/benchmarks.md: 485-507 W at the default 700 W limit), so 0.5 binds.
WORKLOAD = ["--frames", "8", "--text-tokens", "256", "--global-batch", "4", "--micro-batch", "2"]
LIMIT = 0.5
# Measured on one H100: 26-28% less energy per step at 0.5; one probe each scatters by several percent.
POWER_TRADE_MIN_SAVING = 0.10


def child_environ(**extra: str) -> dict[str, str]:
    """The environment of a check's subprocess: this repo first on PYTHONPATH, before what the caller had
    there (packages installed with `pip --target DIR` and PYTHONPATH=DIR: replacing it hid optuna and
    DeepSpeed from every check)."""
    pythonpath = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": pythonpath, **extra}


class Checks:
    def __init__(self, out: Path):
        self.out, self.started = out, time.monotonic()
        self.results: dict[str, dict] = {}

    def left_s(self) -> float:
        return BUDGET_S - (time.monotonic() - self.started)

    def run(self, name: str, command: list[str], timeout_s: float, stdout: Path | None = None) -> subprocess.CompletedProcess | None:
        """A subprocess with its log in OUT/<name>.log (stdout in `stdout` if given); None (and the check
        failed) on a timeout."""
        timeout_s = max(1.0, min(timeout_s, self.left_s()))
        with open(self.out / f"{name}.log", "w") as log, open(stdout or os.devnull, "w") as out:
            try:
                return subprocess.run(command, cwd=REPO, env=child_environ(),
                                      stdout=out if stdout else log, stderr=log, text=True, timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.record(name, "failed", reason=f"timed out after {timeout_s:.0f} s (see {name}.log)")
                return None

    def record(self, name: str, status: str, **fields) -> None:
        self.results.setdefault(name, {}).update(status=status, **fields)
        print(f"gpu_check: {name}: {status} {json.dumps(fields)[:300]}", flush=True)


def limit_w() -> float:
    api = dc.nvml_api()
    api.init()
    try:
        return dc.read_settings(api, [0])[0].power_limit_w
    finally:
        api.shutdown()


def watch_limits(stop: threading.Event, seen: list[float]) -> None:
    while not stop.is_set():
        try:
            seen.append(limit_w())
        except Exception:  # noqa: BLE001 - a missed reading is not a result
            pass
        stop.wait(1.0)


def _wait_then_sigterm(process: subprocess.Popen, seen: list[float], before_w: float, timeout_s: float) -> None:
    """SIGTERM once the probe holds the applied limit (or after timeout_s), as the tuner's timeout would."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and process.poll() is None and not any(w < before_w - 1.0 for w in seen):
        time.sleep(0.5)
    time.sleep(2.0)  # past the apply, into the hang
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=30)


def power_probe(checks: Checks, limit: float, hardware: str, kill: bool = False) -> dict:
    """One probe on GPU 0 at `limit`; the limit before, during (read every second) and after."""
    name = f"probe_{limit:g}" + ("_sigterm" if kill else "")
    out = checks.out / f"{name}.json"
    before_w = limit_w()
    seen: list[float] = []
    stop = threading.Event()
    watcher = threading.Thread(target=watch_limits, args=(stop, seen), daemon=True)
    watcher.start()
    command = [sys.executable, "-m", "trainer.probe", "--model", PROBE_MODEL, "--hardware", hardware, *WORKLOAD,
               "--power-limit", f"{limit:g}", "--warmup-steps", "3", "--steps", "10", "--probe-seconds", "20",
               "--out", str(out)]
    env = child_environ(CUDA_VISIBLE_DEVICES="0")
    if kill:
        env["AUTOTUNE_PROBE_TEST_HOOK"] = "hang"  # holds the applied limit until killed
    started = time.monotonic()
    with open(checks.out / f"{name}.log", "w") as log:
        process = subprocess.Popen(command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
        if kill:
            _wait_then_sigterm(process, seen, before_w, 90.0)
        else:
            try:
                process.wait(timeout=max(1.0, checks.left_s() - 120))  # room left for the checks after it
            except subprocess.TimeoutExpired:
                process.send_signal(signal.SIGTERM)
                process.wait(timeout=30)
    stop.set()
    watcher.join()
    after_w = limit_w()
    result = json.loads(out.read_text()) if out.exists() else {}
    energy = result.get("energy") or {}
    row = {"power_limit": limit, "before_w": before_w, "during_min_w": min(seen, default=None), "after_w": after_w,
           "restored": abs(after_w - before_w) < 1.0, "exit_code": process.returncode, "probe_status": result.get("status"),
           "seconds": round(time.monotonic() - started, 1), "step_time_s": (result.get("step_time_s") or {}).get("mean"), "window_s": result.get("window_s"),
           "energy_j": energy.get("energy_j"), "energy_provenance": energy.get("provenance"),
           "mean_power_w": energy.get("mean_power_w"), "device_settings": result.get("device_settings")}
    applied = limit == 1.0 or (row["during_min_w"] is not None and row["during_min_w"] < before_w - 1.0)
    ok = row["restored"] and applied and (process.returncode == -signal.SIGTERM if kill else row["probe_status"] == "ok")
    checks.record(name, "ok" if ok else "failed", **row)
    return row


def energy_per_step_j(row: dict) -> float | None:
    """A probe's measured energy per optimizer step (its window's energy over the steps the window held)."""
    if row.get("energy_provenance") != "measured" or not row.get("energy_j") or not row.get("step_time_s") or not row.get("window_s"):
        return None
    return row["energy_j"] * row["step_time_s"] / row["window_s"]


def power_trade(checks: Checks, full: dict, capped: dict) -> None:
    """ok when the capped probe used POWER_TRADE_MIN_SAVING less measured energy per step than the full one."""
    full_j, capped_j = energy_per_step_j(full), energy_per_step_j(capped)
    if full_j is None or capped_j is None:
        checks.record("power_trade", "failed", reason="a probe has no measured energy per step (see its row)")
        return
    saving = 1.0 - capped_j / full_j
    slowdown = capped["step_time_s"] / full["step_time_s"] - 1.0
    checks.record("power_trade", "ok" if saving >= POWER_TRADE_MIN_SAVING else "failed",
                  energy_per_step_j={"1": round(full_j, 1), f"{LIMIT:g}": round(capped_j, 1)},
                  energy_saving_pct=round(100 * saving, 1), slowdown_pct=round(100 * slowdown, 1),
                  reason="" if saving >= POWER_TRADE_MIN_SAVING else
                  f"the {LIMIT:g} limit saved {saving:.0%} energy per step, under {POWER_TRADE_MIN_SAVING:.0%}: the workload is not power-bound here")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="?", type=Path, default=REPO / "test-artifacts" / "gpu_check")
    args = parser.parse_args(argv)
    found = nvml.probe()
    if not found.sources:
        reason = found.missing[0].reason if found.missing else "none found"
        print(f"gpu_check: no NVIDIA GPU with NVML here ({reason}); run it on a GPU node. Nothing was checked.",
              file=sys.stderr)
        return 2
    device_name = found.sources[0].device_name
    for source in found.sources:
        source.close()
    hardware = "gh200" if nvml.is_grace_hopper(device_name) else "h100-sxm"
    args.out.mkdir(parents=True, exist_ok=True)
    checks = Checks(args.out)

    target = args.out / "sensors.json"
    done = checks.run("sensors", [sys.executable, "-m", "autotune.cli", "sensors", "--json", "--sample", "2"], 60, stdout=target)
    if done is not None:
        sensors = json.loads(target.read_text()) if done.returncode == 0 else {}
        checks.record("sensors", "ok" if sensors.get("devices") else "failed", devices=sensors.get("devices"),
                      settable=sensors.get("device_settings_settable"), reason=sensors.get("device_settings_reason"))

    target = args.out / "nvml_counter_vs_power.json"
    done = checks.run("nvml_counter_vs_power", [sys.executable, "benchmarks/nvml_counter_vs_power.py", "--seconds", "30",
                                                "--out", str(target)], 120)
    if done is not None:
        rows = json.loads(target.read_text())["rows"] if target.exists() else []
        checks.record("nvml_counter_vs_power", "ok" if done.returncode == 0 and rows else "failed",
                      disagreement_pct=[r["disagreement_pct"] for r in rows], mean_power_w=[r["mean_power_w"] for r in rows])

    done = checks.run("pytest_gpu", [sys.executable, "-m", "pytest", "tests/measure", "-m", "gpu", "-q"], 90)
    if done is not None:
        checks.record("pytest_gpu", "ok" if done.returncode == 0 else "failed", exit_code=done.returncode)

    settable, reason = dc.control_available()
    if settable:
        full = power_probe(checks, 1.0, hardware)
        capped = power_probe(checks, LIMIT, hardware)
        power_trade(checks, full, capped)
        power_probe(checks, LIMIT, hardware, kill=True)
    else:
        for name in ("probe_1", f"probe_{LIMIT:g}", "power_trade", f"probe_{LIMIT:g}_sigterm"):
            checks.record(name, "skipped", reason=f"cannot set power limits here: {reason}")

    target = args.out / "mfu.json"
    done = checks.run("mfu", [sys.executable, "benchmarks/mfu.py", "--model", PROBE_MODEL, "--hardware", hardware,
                              "--frames", "8", "--text-tokens", "256", "--micro-batch", "1", "--out", str(target)], 180)
    if done is not None:
        figures = json.loads(target.read_text()) if target.exists() else None
        checks.record("mfu", "ok" if done.returncode == 0 and figures else "failed", figures=figures)

    summary = {"device": device_name, "hardware_profile": hardware, "seconds": round(time.monotonic() - checks.started, 1),
               "checks": checks.results, "all_ok": all(r["status"] == "ok" for r in checks.results.values())}
    (args.out / "gpu_check.json").write_text(json.dumps(summary, indent=2) + "\n")
    (args.out / "figures.md").write_text(figures_md(summary))
    print(f"gpu_check: wrote {args.out / 'gpu_check.json'} and figures.md ({summary['seconds']} s)")
    return 0 if summary["all_ok"] else 1


def figures_md(summary: dict) -> str:
    """Rows for docs/benchmarks.md, from this run's measurements only."""
    checks = summary["checks"]
    lines = [f"Measured by benchmarks/gpu_check.sh on {summary['device']} ({summary['seconds']} s).", "",
             "| power limit | status | step time s | energy J (provenance) | limit during W | restored |", "|---|---|---|---|---|---|"]
    for name in ("probe_1", f"probe_{LIMIT:g}", f"probe_{LIMIT:g}_sigterm"):
        r = checks.get(name, {})
        lines.append(f"| {name.removeprefix('probe_')} | {r.get('status')} | {r.get('step_time_s')} | "
                     f"{r.get('energy_j')} ({r.get('energy_provenance')}) | {r.get('during_min_w')} | {r.get('restored')} |")
    trade = checks.get("power_trade", {})
    lines += ["", f"Power limit {LIMIT:g} against 1: {trade.get('energy_saving_pct')} % less energy per step, "
                  f"{trade.get('slowdown_pct')} % longer steps ({trade.get('status')})."]
    nvml_row = checks.get("nvml_counter_vs_power", {})
    lines += ["", f"NVML counter vs integrated power: disagreement {nvml_row.get('disagreement_pct')} %, "
                  f"mean power {nvml_row.get('mean_power_w')} W ({nvml_row.get('status')}).",
              f"MFU: {json.dumps(checks.get('mfu', {}).get('figures'))}"]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
