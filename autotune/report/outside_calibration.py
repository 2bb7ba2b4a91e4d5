"""One line before the front table where the picks lie outside what the simulator's error was measured on.

The error bars said "+- ?%" on every figure of a 7b study, all of whose picks were ZeRO-2, and why only at
the end of a ~700-character sentence (trial57 #3): the energy story was unvalidated extrapolation, and a
reader had to dig for it. The line names the picks, what of their configurations the error was not measured
on, and what to do: probe them. On a profile that states no error at all (never calibrated, or calibrated with
none it can vouch for), every simulated pick's error is unknown, and the line says so of the profile: this, the
most uncertain study, printed no line at all (trial59 #5). There the line starts with the error sentence itself,
which the reports then do not print apart (error_lines): they said twice, in two wordings, that the error was
unknown (trial61), and, as no pick's lead is weighed against an error no one measured, the line says that once
for all the picks, not on each.
"""

from __future__ import annotations

from autotune.report.error_bars import error_sentence, pct_text
from autotune.report.error_scope import EXTRAPOLATED_KEY, outside_words, scope_unrecorded
from autotune.report.error_unknown import WHY_UNKNOWN
from autotune.report.near_ties import SEARCH_RESOLUTION_PCT
from autotune.report.picks import PICK_FILES
from autotune.counted import agreeing, counted


def error_lines(document: dict) -> tuple[str | None, str | None]:
    """(the error sentence, the line before the front table) a report prints: error_bars.error_sentence and
    outside_calibration_line, or, on a profile that states no error, the line alone, which holds the sentence."""
    error = document.get("simulator_error")
    outside = outside_calibration_line(document)
    if _states_no_error(error) and outside:
        return None, outside
    return error_sentence(error), outside


def _states_no_error(error: dict | None) -> bool:
    """Whether figures are simulated on a profile with no error of its own (never calibrated, or none it can vouch for)."""
    return error is not None and (not error or WHY_UNKNOWN in error)


def outside_calibration_line(document: dict, one: str = "the pick") -> str | None:
    """"All 5 picks lie where the simulator's error was not measured (ZeRO 2, power limit 0.7/0.8/0.9): ..." (or
    "4 of the 5 picks (min-energy, ...)"); None where every pick lies inside it, or no figure is simulated. `one`: what
    a single pick row is called ("trial 0" where export passes a trial that is no pick)."""
    error = document.get("simulator_error")
    if _states_no_error(error):
        return _no_error_line(document, one)
    outside = (error or {}).get(EXTRAPOLATED_KEY) or {}
    picks = document.get("picks") or []
    out = [row for row in picks if str(row["trial"]) in outside]
    if not out:
        return None
    # A profile that records no scope: no knob value to name, only that nothing shows the error holds there.
    where = ("is not known to hold (the profile did not record what it was measured on)" if scope_unrecorded(error)
             else f"was not measured ({outside_words(error, [row['trial'] for row in out])})")
    if len(out) == len(picks):
        trials = len({row["trial"] for row in picks})  # knee and cost-weighted are often one configuration
        configurations = f" ({counted(trials, 'configuration')})" if trials < len(picks) else ""
        who = f"{one[0].upper()}{one[1:]} lies" if len(picks) == 1 else f"All {len(picks)} picks{configurations} lie"
        their = agreeing(len(picks), "its", "their")
    else:
        names = ", ".join(PICK_FILES.get(row["name"], row["name"]) for row in out)
        who = f"{len(out)} of the {len(picks)} picks ({names}) {agreeing(len(out), 'lies', 'lie')}"
        their = agreeing(len(out), "its", "their")
    return (f"{who} where the simulator's error {where}: {their} error is unknown (+- ?%); "
            f"probe {'it' if their == 'its' else 'them'} before deploying.")


def _no_error_line(document: dict, one: str = "the pick") -> str | None:
    """"Simulated figures carry an unknown error (+- ?%): this hardware profile was not calibrated (...). No pick's
    lead over another is weighed against it (only against the 1% the search tells apart), so a small one may not be
    real: probe the picks before deploying."
    (error_bars.error_sentence, then what it means for the picks); None where no pick has a simulated figure."""
    sources = {row["trial"]: (row.get("source"), row.get("energy_source")) for row in document.get("front") or []}
    picks = document.get("picks") or []
    # A pick not on the front rows (none written) is taken as simulated: the profile's error is stated because some is.
    simulated = [row for row in picks if "simulated" in sources.get(row["trial"], ("simulated",))]
    if not simulated:
        return None
    if len(simulated) == len(picks):
        lead, who = "No pick's lead over another", one if len(picks) == 1 else "the picks"
    else:  # a measured pair is still weighed against its noise (within_noise)
        lead = "No pick's lead over another in a simulated figure"
        who = ", ".join(PICK_FILES.get(row["name"], row["name"]) for row in simulated)
    probe = f"probe {who} before deploying."
    # One pick leads no other: the weighing is no news there.
    # Only a lead under the search's resolution is flagged there (near_ties): one of a few percent is not.
    consequence = (f"{lead} is weighed against it (only against the {pct_text(SEARCH_RESOLUTION_PCT)}% the search tells "
                   f"apart), so a small one may not be real: {probe}" if len(picks) > 1 else probe.capitalize())
    return f"{error_sentence(document['simulator_error'])} {consequence}"
