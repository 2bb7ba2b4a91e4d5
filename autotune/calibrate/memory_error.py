"""The memory estimate against the peak device memory that measured probes reported.

Stated, not fitted: the estimate (autotune/memory.py) has no constant to fit, its coefficients are
DeepSpeed's estimators' and Korthikanti et al.'s, and a study already moves its memory wall by these
same ratios once its own probes measure them (study/outlook.py, `_chance_to_fit`). `autotune space`
and a new study's first proposals do not: the ratio tells a user how far their validity line is from
their cluster. A probe's measured peak is its largest rank's torch.cuda.max_memory_allocated; the
estimate adds the CUDA context and allocator's share (memory.FRAMEWORK_OVERHEAD_GIB) that it does not
count, so a ratio somewhat under 1 is the estimate's headroom, not its error.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from autotune.counted import counted
from autotune.candidate import Candidate, configuration_text


@dataclass(frozen=True)
class MeasuredPeak:
    id: str  # "<run directory name>#<trial>", as the observations are named
    source: str  # the run directory
    candidate: Candidate
    measured_gib: float
    estimated_gib: float

    @property
    def ratio(self) -> float:
        return self.measured_gib / self.estimated_gib


def memory_document(peaks: list[MeasuredPeak]) -> dict | None:
    """The ratios' median and ends, each end with its probe, or None where no probe measured a device peak."""
    if not peaks:
        return None
    ordered = sorted(peaks, key=lambda p: p.ratio)

    def row(peak: MeasuredPeak) -> dict:
        return {"id": peak.id, "source": peak.source, "configuration": configuration_text(peak.candidate),
                "measured_gib": round(peak.measured_gib, 2), "estimated_gib": round(peak.estimated_gib, 2),
                "ratio": round(peak.ratio, 3)}

    return {
        "probes": len(peaks),
        "configurations": len({p.candidate for p in peaks}),
        "median_ratio": round(statistics.median(p.ratio for p in peaks), 3),
        "lowest": row(ordered[0]),
        "highest": row(ordered[-1]),
    }


def memory_lines(document: dict | None) -> list[str]:
    """The report's paragraph on the memory estimate ([] where no probe measured a device peak)."""
    if not document:
        return []

    def end(row: dict) -> str:
        return (f"{row['ratio']:.2f} ({row['id']}, {row['measured_gib']:.1f} GiB measured, {row['estimated_gib']:.1f} "
                f"estimated: {row['configuration']})")

    return [
        "",
        f"memory estimate against the peak device memory of {counted(document['probes'], 'ok probe')} "
        f"({counted(document['configurations'], 'configuration')}); stated, not fitted",
        f"  measured / estimated: median {document['median_ratio']:.2f}",
        f"  lowest  {end(document['lowest'])}",
        f"  highest {end(document['highest'])}",
        "  (the estimate, `autotune space`'s mem GiB, adds the CUDA context and allocator that the measured "
        "torch.cuda.max_memory_allocated leaves out; a study moves its memory wall by its own probes' ratios)",
    ]
