"""When the guided sampler's study is done (guided.py, `GuidedSampler.converged`): the early stop's
thresholds, and the rule in words that `autotune run --help` (commands/run.py), the study's record of
why it stopped (loop.py) and the report (report/search.py) state, defined once here.
"""

from __future__ import annotations

import math

# The early stop: no unprobed candidate has at least this chance of improving the probed front by
# more than 1% in time or energy (a chance that already counts the risk of running out of memory).
STOP_CHANCE = 0.05
# Measured and rejected (benchmarks/search_efficiency.py): also asking for an expected gain of 1% of the
# front's hypervolume stopped studies 5-30 probes earlier, but before the front was found in the 7b
# interactions and combined truths. Finding the front comes first.
# Before this many ok probes the correction's hyper-parameters are not fitted: never stop earlier.
MIN_OK_PROBES_TO_STOP = 3
# Pairs of knob values (coverage, second part): a pair no probe has held may be off by this many times
# the largest error the re-weighted simulator makes on a probe it was not fitted to (leave-one-out).
# benchmarks/search_efficiency.py (`interactions`, `combined`: six value pairs at +-15%): without it,
# 32b/4 and 72b/8 studies stopped with the front's fast end missed by up to 24%; with it (before the
# re-weighting) by at most 2.2%, for 5-10 more probes per study. Where the simulator reproduces the
# probes (`memory_wall`), only mis-weights its mechanisms (`perturbed`) or the probes only scatter by
# measurement noise (`noise`) the reach is about zero.
PAIR_REACH = 2.0
# ... and by at least this much (log, a factor of 1.22): an interaction no probe has hit shows no error
# to scale from. Without it, truths that are the simulator but for one pair 25% faster (1% noise; the
# benchmark's `one_pair`) left 32b/4 and 72b/8 studies 12-22% short of the front after 15-26 probes, the
# pair never probed; with it none, for about 10 more probes per study where the simulator is right
# (docs/benchmarks.md, session 9).
MIN_PAIR_REACH = 0.2
# A probe the re-weighted simulator overrated by more than this (log, beyond noise) is a suspect: the pairs
# only it holds are owed again (`_suspect_pairs`). Half the floor above.
SUSPECT_MISS = MIN_PAIR_REACH / 2


# The rule in words, in parts: the main clause, what is measured first, and what is measured first
# unless the probes are the simulator's own figures (`Outlook.simulator_exact`). With one objective
# (--objectives time) the front is the fastest probe, so the words name the best time alone.
def _beating(objectives: int) -> str:
    return "the probed front by more than 1% in time or energy" if objectives == 2 else "the best probed time by more than 1%"


def _stop_rule_main(objectives: int = 2, candidate: str = "valid candidate") -> str:
    return (f"no unprobed {candidate} has a {STOP_CHANCE:.0%} or higher chance (simulator x correction learnt "
            f"from the probes) of beating {_beating(objectives)}")


def _stop_rule_first(objectives: int = 2) -> str:
    seeds = "the predicted front's ends and knee" if objectives == 2 else "the predicted fastest candidate"
    return f"at least {MIN_OK_PROBES_TO_STOP} successful probes, and {seeds}"


_UNLESS_EXACT = "unless every probe is a simulated figure the simulator reproduced"


def _stop_rule_coverage(objectives: int = 2) -> tuple[str, ...]:
    enter, better = ("enter the front", "faster or cheaper") if objectives == 2 else ("beat the best time", "faster")
    return (
        "every knob value once",
        f"every pair of knob values held by a candidate that would {enter} were the simulator "
        f"{PAIR_REACH:g}x as wrong on it as on the worst probe whose every knob value another probe holds (beyond "
        f"measurement noise), or {math.exp(MIN_PAIR_REACH) - 1:.0%} wrong if that is more",
        f"a second probe of each pair held only by one probe measured more than {1 - math.exp(-SUSPECT_MISS):.0%} "
        f"{better} than the simulator says (beyond noise), where a candidate holding it would {enter} "
        f"by that much",
    )


def stop_rule(objectives: int = 2, candidate: str = "valid candidate") -> str:
    """One sentence: the study's record of why it stopped (pareto.json's search.converged.rule), for a
    study of `objectives` (2: time and energy; 1: time alone). `candidate`: what the rule weighed, as in
    stop_rule_summary ("recorded candidate" for a replay of a file that records some of the valid candidates)."""
    return (f"{_stop_rule_main(objectives, candidate)}, after {_stop_rule_first(objectives)}; and ({_UNLESS_EXACT}) "
            f"{'; '.join(_stop_rule_coverage(objectives))}")


# The time-and-energy rule (loop.py records it when a study converges; the report restates it per objectives).
STOP_RULE = stop_rule(2)


def stop_rule_help() -> str:
    """The rule as `autotune run --help` ends with it: the main clause, then what is measured first as a
    list (one flag's help would run to twenty lines). Wrapped to the terminal as argparse wraps."""
    import shutil
    import textwrap

    width = max(min(shutil.get_terminal_size().columns - 2, 100), 40)

    def item(text: str) -> str:
        return textwrap.fill(text, width, initial_indent="  - ", subsequent_indent="    ")

    return "\n".join([
        textwrap.fill(f"early stop (--sampler guided): the study ends before --trials when {_stop_rule_main()}, "
                      "and it has measured:", width),
        item(_stop_rule_first()),
        textwrap.fill(f"and, {_UNLESS_EXACT}:", width, initial_indent="  ", subsequent_indent="  "),
        *map(item, _stop_rule_coverage()),
        textwrap.fill(f"The chance is the model's: {_ASSUMES}.", width),
    ])


# The chance is the model's, not the cluster's: the correction carries a probe's error to the candidates
# that share its knob values, pairs of values or configuration (correction.py), so an error no probe shares
# in one of those ways is not in it (trial53: a configuration 25% faster through six knob values together,
# never probed, had a chance of 0 in every study that stopped).
_ASSUMES = ("it assumes the simulator's errors are shared along knob values and pairs of them, so a configuration "
            "fast for a reason no probed value or pair shares can be missed")


# What the terminal and the report say when a study stops: the rule's main clause; the whole rule is in
# `autotune run --help` (--trials) and in pareto.json's search.converged.rule.
def stop_rule_summary(objectives: int = 2, candidate: str = "valid candidate") -> str:
    """`candidate`: what the rule weighed ("recorded candidate" where a replayed file records only some: the others
    could not be probed, and the report predicts them apart)."""
    return (f"the model (simulator x correction learnt from the probes) gives no unprobed {candidate} a {STOP_CHANCE:.0%} "
            f"or higher chance of beating {_beating(objectives)}; {_ASSUMES} (the whole rule: \"early stop\" at the end of "
            "`autotune run --help`)")


STOP_RULE_SUMMARY = stop_rule_summary(2)
