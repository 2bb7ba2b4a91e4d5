"""Picks that lead one another by less than the simulator can tell apart, where their own error is unknown;
and the marginal trade between a pick and its nearest other pick, where that trade is lopsided.

A figure outside what the profile's error was measured on (error_bars.extrapolated) shows "+- ?%" and is
tied with nothing (error_bars.pick_ties): its error is not known, so no tie can be claimed. But calling it
a ranking is no more honest. A least-energy pick 0.2% below the knee, at twice the knee's time, read as a
real trade (trial57 #2), though 0.2% is far inside the 3.3% the simulator misses by even where it was
calibrated, and nothing suggests it does better outside. So such a lead is flagged, not tied: "the
difference may not be real", against the error measured at calibrated configurations, which is a floor of
what an extrapolated figure can be off by, not a measure of it.

Where no error was measured at all (a profile never calibrated) or the measured one is under 1%, the floor is
the search's own resolution: the study stops when no candidate beats the front by more than 1%
(acquisition.ENTER_MARGIN), so it does not tell apart two simulated figures closer than that. A least-energy
pick 0.007% below the knee at twice its time read as a ranking on an uncalibrated profile (trial61 #3).

Among the picks only: these are the choices a reader weighs (the ties against every point stay
error_bars.pick_ties' and within_noise.noise_ties').

Wall-clock time is no cost on its own where two picks run on different GPU counts: "knee takes 50% less time"
on 8 GPUs against min-energy's 4 is the same GPU-h (trial59 #2). Such a time difference says the GPU counts and
the change in GPU-h beside it (devices_clause), and a trade is lopsided only where the GPU-h trade is as well.
"""

from __future__ import annotations

from autotune.counted import counted
from autotune.report.error_bars import extrapolated, is_simulated, pct_text
from autotune.report.error_scope import EXTRAPOLATED_KEY
from autotune.report.error_unknown import WHY_UNKNOWN
from autotune.report.device_words import GPU_WORDS, DeviceWords, view_device_words
from autotune.report.picks import PICK_FILES, change_pct, device_hours
from autotune.study.acquisition import ENTER_MARGIN

# The least difference the search tells apart, in percent: it stops when nothing beats the front by more.
SEARCH_RESOLUTION_PCT = round((ENTER_MARGIN - 1.0) * 100.0, 6)

# A trade is lopsided where one side is at least this many times the other: 0.2% energy for 99% time.
LOPSIDED_RATIO = 5.0
# Below this a gain is no "much faster" however small the tie beside it (0.1% against 0.6% is no trade to warn of).
MUCH_PCT = 5.0

_WORDS = {"time_s": "time", "energy_kj": "energy"}
_OTHER = {"time_s": "energy_kj", "energy_kj": "time_s"}


def size_text(pct: float) -> str:
    """A difference's size: "0.007%", "0.2%", "6.5%", "50%" (whole percent from 10 on, where a decimal says nothing;
    one significant figure under 0.1%, where "0.0%" would say there is none)."""
    if pct >= 10:
        return f"{pct:.0f}%"
    return f"{pct:.1f}%" if pct >= 0.1 or pct == 0 else f"{pct:.1g}%"


def devices_clause(pick, other, words: DeviceWords = GPU_WORDS) -> str:
    """`, on 8 GPUs against 4 (1.0% more GPU-h)`: `pick`'s GPUs against `other`'s and its GPU-h change, after a
    difference in time between them; "" where they run on the same GPUs (or either count is unknown)."""
    if pick.gpus is None or other.gpus is None or pick.gpus == other.gpus:
        return ""
    change = change_pct(device_hours(pick), device_hours(other))
    if change is None:
        return f", on {counted(pick.gpus, words.one, words.many)} against {other.gpus}"
    amount = "the same" if round(abs(change), 1) == 0 else f"{size_text(abs(change))} {'less' if change < 0 else 'more'}"
    return f", on {counted(pick.gpus, words.one, words.many)} against {other.gpus} ({amount} {words.one}-h)"


def is_lopsided(change_a: float, change_b: float) -> bool:
    """Whether two changes go opposite ways and one is at least LOPSIDED_RATIO times the other."""
    small, large = sorted((abs(change_a), abs(change_b)))
    return change_a * change_b < 0 and large >= LOPSIDED_RATIO * small


def _less_pct(a: float | None, b: float | None) -> float | None:
    """How much less `a` is than `b`, in percent of `b` (negative where it is more); None where unknown."""
    change = change_pct(a, b)
    return None if change is None else -change


def pick_names(view, trial: int) -> list[str]:
    """The picks that are this trial (knee and cost-weighted often are one)."""
    return [name for name, t in view.picks.items() if t == trial]


def pick_stems(names: list[str]) -> str:
    """"knee/cost-weighted": the picks as `export --pick` names them."""
    return "/".join(PICK_FILES.get(n, n) for n in names)


def near_ties(view, error: dict | None, already: dict[str, set[int]] | None = None) -> dict[str, dict | None]:
    """{pick: {"trial", "picks", "figure", "lead_pct", "calibrated_error_pct", "bound_pct", "bound", "other_figure",
    "other_less_pct"} or None}: the other pick a pick leads by less than the bound in the figure it leads in: the
    profile's measured error, or the search's resolution (SEARCH_RESOLUTION_PCT) where that is larger or no error
    was measured ("bound": "calibrated_error" or "search_resolution"), where either side's error is unknown
    (extrapolated, or no error measured anywhere) and the other pick is ahead in the other figure. Of several, the
    one furthest ahead there: the strongest reason to doubt the lead. `already`: {pick: trials it is tied with
    by another rule}, said there and not again."""
    measured = bool(error) and WHY_UNKNOWN not in error
    found = {}
    for name, trial in view.picks.items():
        pick, best = view.point(trial), None
        for other_trial in dict.fromkeys(view.picks.values()):
            other = view.point(other_trial)
            if other_trial == trial or other_trial in (already or {}).get(name, set()):
                continue
            if measured and not (extrapolated(error, pick) or extrapolated(error, other)):
                continue  # both inside the calibration: error_bars.pick_ties judges them
            for figure in ("time_s", "energy_kj"):
                calibrated = error.get(f"{figure}_pct") if measured else None
                bound = max(calibrated or 0.0, SEARCH_RESOLUTION_PCT)
                lead = _less_pct(getattr(pick, figure), getattr(other, figure))
                other_less = _less_pct(getattr(other, _OTHER[figure]), getattr(pick, _OTHER[figure]))
                if (lead is None or bound is None or other_less is None or not 0 < lead <= bound or other_less <= 0
                        or not (is_simulated(pick, figure) or is_simulated(other, figure))):
                    continue
                if best is None or other_less > best["other_less_pct"]:
                    best = {"trial": other_trial, "picks": pick_names(view, other_trial), "figure": _WORDS[figure],
                            "lead_pct": round(lead, 3), "calibrated_error_pct": calibrated, "bound_pct": bound,
                            "bound": "calibrated_error" if calibrated and calibrated >= bound else "search_resolution",
                            "other_figure": _WORDS[_OTHER[figure]], "other_less_pct": round(other_less, 3),
                            "other_error_pct": error.get(f"{_OTHER[figure]}_pct") if measured else None}
        found[name] = best
    return found


def near_tie_text(tie: dict | None, devices: str = "") -> str:
    """"0.2% less energy than knee, inside the 3.3% error measured at calibrated configurations: the difference
    may not be real; knee takes 50% less time" ("0.007% less energy than knee, under the 1% the search tells
    apart: ..." where that is the bound); "" without such a tie. `devices` (devices_clause, of the side that takes
    less time) follows that side's time."""
    if not tie:
        return ""
    # Pick rows an older autotune wrote have no "bound": theirs was always the calibrated error.
    if tie.get("bound", "calibrated_error") == "calibrated_error":
        inside = f"inside the {pct_text(tie['calibrated_error_pct'])}% error measured at calibrated configurations"
    else:
        inside = f"under the {pct_text(tie['bound_pct'])}% the search tells apart"
    other = pick_stems(tie["picks"])
    also = ("" if tie["other_error_pct"] is None or tie["other_less_pct"] > tie["other_error_pct"]
            else f", also inside its {pct_text(tie['other_error_pct'])}% error")
    lead_devices, other_devices = ("", devices) if tie["other_figure"] == "time" else (devices, "")
    return (f"{size_text(tie['lead_pct'])} less {tie['figure']} than {other}{lead_devices}, {inside}: the difference "
            f"may not be real; {other} takes {size_text(tie['other_less_pct'])} less {tie['other_figure']}{other_devices}{also}")


def nearest_trades(view) -> dict[str, dict | None]:
    """{pick: {"trial", "picks", "time_change_pct", "energy_change_pct"} or None}: the pick's change against the
    nearest other pick (the least sum of the two changes' sizes), where one change is LOPSIDED_RATIO times the
    other and they go opposite ways, and, where the two run on different GPU counts, the GPU-h and energy changes are
    as lopsided (a time bought with GPUs is no trade of time for energy); None where the nearest trade is balanced,
    or there is no other pick."""
    trades = {}
    for name, trial in view.picks.items():
        pick, nearest = view.point(trial), None
        for other_trial in dict.fromkeys(view.picks.values()):
            other = view.point(other_trial)
            time_pct, energy_pct = change_pct(pick.time_s, other.time_s), change_pct(pick.energy_kj, other.energy_kj)
            if other_trial == trial or time_pct is None or energy_pct is None:
                continue
            distance = abs(time_pct) + abs(energy_pct)
            if nearest is None or distance < nearest[0]:
                nearest = (distance, other_trial, time_pct, energy_pct)
        trades[name] = None
        if nearest is not None:
            _, other_trial, time_pct, energy_pct = nearest
            other = view.point(other_trial)
            hours_pct = change_pct(device_hours(pick), device_hours(other))
            same_devices = pick.gpus == other.gpus or hours_pct is None
            if is_lopsided(time_pct, energy_pct) and (same_devices or is_lopsided(hours_pct, energy_pct)):
                trades[name] = {"trial": other_trial, "picks": pick_names(view, other_trial),
                                "time_change_pct": round(time_pct, 3), "energy_change_pct": round(energy_pct, 3)}
    return trades


def trade_text(trade: dict | None, devices: str = "") -> str:
    """"against knee, the nearest other pick: 0.2% less energy for 99% more time"; "" without a lopsided trade.
    `devices`: devices_clause, the pick's against the other's."""
    if not trade:
        return ""
    time_pct, energy_pct = trade["time_change_pct"], trade["energy_change_pct"]
    time_words = f"{size_text(abs(time_pct))} {'less' if time_pct < 0 else 'more'} time"
    energy_words = f"{size_text(abs(energy_pct))} {'less' if energy_pct < 0 else 'more'} energy"
    gain, cost = (time_words, energy_words) if time_pct < 0 else (energy_words, time_words)
    return f"against {pick_stems(trade['picks'])}, the nearest other pick: {gain} for {cost}{devices}"


def with_near_ties(rows: list[dict], view, error: dict | None, near: dict[str, dict | None]) -> list[dict]:
    """Pick rows (after error_bars.with_ties and within_noise.with_noise_ties) with `near_tie` (`near`: near_ties,
    of the pairs those do not tie, as choosing.ties_by_rule gives it), `nearest_pick_trade` (nearest_trades) and
    `outside_calibration` (what of the pick's configuration the simulator's error was not measured on: [] inside
    it, as error_bars.simulator_error's `extrapolated` lists it)."""
    trades = nearest_trades(view)
    outside = (error or {}).get(EXTRAPOLATED_KEY) or {}
    return [{**row, "near_tie": near.get(row["name"]), "nearest_pick_trade": trades.get(row["name"]),
             "outside_calibration": outside.get(str(row["trial"]), [])} for row in rows]


def near_texts(view, row: dict) -> list[str]:
    """What a pick line says of its near tie and its lopsided nearest trade (that one only where the tie has not
    named the same pick: the tie already says the trade), each with the GPU counts where they differ."""
    tie, trade = row.get("near_tie"), row.get("nearest_pick_trade")
    if tie and trade and trade["trial"] == tie["trial"]:
        trade = None
    pick, words = view.point(row["trial"]), view_device_words(view)
    tie_devices = ""
    if tie:
        other = view.point(tie["trial"])
        # Of the side that takes less time, against the other.
        tie_devices = devices_clause(other, pick, words) if tie["other_figure"] == "time" else devices_clause(pick, other, words)
    trade_devices = devices_clause(pick, view.point(trade["trial"]), words) if trade else ""
    return [text for text in (near_tie_text(tie, tie_devices), trade_text(trade, trade_devices)) if text]
