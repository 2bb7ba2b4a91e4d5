"""Which autotune simulated each compared study: its version, as pareto.json's `inputs.proposed_by` records it.

A simulated figure is the model's output, and the model (its code and its built-in profiles) changes between
versions: the same configuration was 8.86 min in an older autotune's study and 6.86 min in today's (trial73 #6), so
"23.1% less" between the two was mostly the simulator's change, said as a better pick. A study that does not
record its version is said so, never taken as known. Nor is a built-in profile whose content changed between
versions an edit: "one was edited or calibrated" sent the user looking for an edit that never happened (trial73 #2).
"""

from __future__ import annotations

from autotune.hardware import available_hardware
from autotune.report.compare_inputs import numbers_text
from autotune.report.compare_study import ComparedStudy

# A study made (or begun) by an autotune older than the record of versions: which one is unknown.
UNRECORDED_VERSION = "not recorded (an older autotune)"


def autotune_versions(study: ComparedStudy) -> tuple[str, ...]:
    """The autotune versions whose trials the study holds, in order; UNRECORDED_VERSION among them where some trial's
    proposer is not recorded (an older autotune's, or a pareto.json older than `inputs`)."""
    recorded = study.document.get("inputs") or {}
    proposers = recorded.get("proposed_by") if isinstance(recorded.get("proposed_by"), list) else []
    versions = tuple(dict.fromkeys(str(who["autotune_version"]) for who in proposers
                                   if isinstance(who, dict) and who.get("autotune_version")))
    if not versions or recorded.get("proposer_not_recorded"):
        versions += (UNRECORDED_VERSION,)
    return versions


def _builtin(study: ComparedStudy) -> bool:
    """Whether the study names a built-in profile as itself: not calibrated, not a copy in a file of its own."""
    document = study.document
    return (not document.get("calibrated_from") and not document.get("hardware_file")
            and str(document["hardware"]) in available_hardware())


def builtin_of_other_versions(one: ComparedStudy, other: ComparedStudy) -> bool:
    """Whether two studies of one built-in profile name were made by other autotune versions, each version known:
    a sha256 that differs between them is that built-in's change between versions, not an edit."""
    return (one.document["hardware"] == other.document["hardware"] and _builtin(one) and _builtin(other)
            and UNRECORDED_VERSION not in (*autotune_versions(one), *autotune_versions(other))
            and autotune_versions(one) != autotune_versions(other))


def versions_caveat(studies: list[ComparedStudy], simulated: list[int], builtin_pairs: list[tuple[int, int]]) -> list[str]:
    """The caveat for simulated studies (their numbers, `simulated`) of other autotune versions, or of a version not
    recorded against a known one; `builtin_pairs`: the pairs whose built-in profile differs between their versions."""
    versions = {n: autotune_versions(studies[n - 1]) for n in simulated}
    if len(set(versions.values())) < 2:  # one version throughout, or none recorded at all: nothing known to differ
        return []
    by_version: dict[str, list[int]] = {}
    for n, held in versions.items():
        by_version.setdefault(" then ".join(held), []).append(n)
    each = "; ".join(f"{numbers_text(ns)}: {held}" for held, ns in by_version.items())
    builtin = ""
    if builtin_pairs:
        pairs = "; ".join(f"{a} and {b}" for a, b in builtin_pairs)
        name = "/".join(dict.fromkeys(str(studies[a - 1].document["hardware"]) for a, _ in builtin_pairs))
        builtin = (f" The built-in {name} profile of studies {pairs} differs in content (sha256) because their versions "
                   "shipped other ones, not because it was edited or calibrated.")
    return [f"Simulated by different autotune versions ({each}): the simulator's model and its built-in profiles change "
            "between versions, so a change between these studies' simulated figures may be the simulator's own, not the "
            f"configurations'.{builtin} For figures of one simulator, run the studies' commands again with one "
            "autotune (each into a new --out)."]
