"""What a study is about (model, hardware, workload, GPUs per node, space), kept in the study itself
so a resumed run can check it is the same study and `report`/`export` can rebuild candidates.
"""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass, field

from autotune.candidate import KNOBS, Candidate, Knobs, knob_value
from autotune.checks import checked_number, refuse_unknown_keys, shown
from autotune.errors import ConfigError, UserError
from autotune.hardware import HardwareProfile, figure_differences, hardware_flag, hardware_to_dict, kept_base_name, stored_hardware
from autotune.models import MODEL_SIZE_PARTS, PRESETS, ModelSpec, first_three, model_from_json, params_text, size_differences
from autotune.shell import shell_path
from autotune.space import SearchSpace, nodes_flag
from autotune.workload import PRECISIONS, WORKLOAD_KEYS, Workload, default_precision


@dataclass(frozen=True)
class StudySettings:
    model: ModelSpec
    hardware: HardwareProfile
    workload: Workload
    gpus_per_node: int
    space: SearchSpace
    # The --model as typed (a preset's name, else the file's absolute path): what a refused resume says to pass,
    # where the model's name ("Meta-Llama-3-8B + SigLIP so400m/14") is no value --model takes (trial 61 #15).
    model_flag: str = field(default="", compare=False)

    def candidate(self, params: dict) -> Candidate:
        return Candidate(Knobs(**params), self.model, self.hardware, self.workload, self.gpus_per_node)

    def to_dict(self) -> dict:
        space = asdict(self.space)
        space.pop("source")
        return {
            "model": self.model.to_json(),
            "hardware": self.hardware.source or self.hardware.name,
            "hardware_name": self.hardware.name,
            "hardware_profile": hardware_to_dict(self.hardware),
            "workload": self.workload.to_dict(),
            "gpus_per_node": self.gpus_per_node,
            "space": {k: list(v) for k, v in space.items()},
            **({"model_flag": self.model_flag} if self.model_flag else {}),
        }

    @classmethod
    def from_dict(cls, data: dict) -> "StudySettings":
        """The settings a study keeps (to_dict's), read as a file is: the Optuna API edits them (study.set_user_attr),
        and an edited workload or GPU count was a traceback in report and export (a negative samples, a missing
        workload), or a silently wrong pareto.json (gpus_per_node 0); now one line naming the value (trial 66 #5)."""
        try:
            try:
                hardware = stored_hardware(data, f"the study's hardware profile '{data.get('hardware_name')}'")
            except ConfigError as refusal:
                if "hardware_profile" not in data:
                    raise  # an older study's profile, loaded by name or path: its file is what to fix
                raise _as_edit(refusal) from None
            try:
                model = model_from_json(data["model"], origin=f"{_SETTINGS}: model")
            except ConfigError as refusal:
                raise _as_edit(refusal) from None
            return cls(
                model=model,
                hardware=hardware,
                workload=_stored_workload(data["workload"]),
                gpus_per_node=checked_number(_SETTINGS, "gpus_per_node", data["gpus_per_node"], low=1,
                                             high=hardware.gpus_per_node, integer=True, fix=_EDITED),
                space=_stored_space(data["space"]),
                model_flag=data["model_flag"] if isinstance(data.get("model_flag"), str) else "",
            )
        except (KeyError, TypeError, AttributeError) as missing:  # a key deleted, or a value of another shape
            raise ConfigError(f"{_SETTINGS} are not as autotune kept them ({type(missing).__name__}: {missing}); "
                              f"{_EDITED}") from None

    def check_same_as(self, stored: dict, where: str, figures_use_profile: bool, evaluated: list | None = None) -> str | None:
        """A resumed study must be the same question; otherwise say how to start a new one.

        A profile of the same node with other figures (a calibration of it, an edited file) is refused
        where the study's figures come from it (simulated, or energy estimated from its power model):
        old and new figures would not be comparable. Where every figure is measured or replayed it only
        guides the search and places the memory wall, so the resumed study takes it, and the line
        returned says so (None when nothing changed).

        A study older than profile pinning (no `hardware_profile` kept) is pinned to this run's profile (the
        caller stores these settings again where a line is returned), said in the line; where its figures come
        from the profile and `evaluated` (its evaluated FrozenTrials) holds a simulated trial, only if this profile
        gives that trial's figures again: else old and new figures would mix on one front (trial52 #3)."""
        current = self.to_dict()
        self.check_same_question(stored, where)
        start_new = _START_NEW
        if "hardware_profile" not in stored:
            return self._pin_unrecorded_profile(where, figures_use_profile, evaluated, start_new)
        changed = figure_differences(stored["hardware_profile"], current["hardware_profile"])
        if not changed:
            return None
        shown = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
        if figures_use_profile:
            verb = "differs" if len(changed) == 1 else "differ"
            # The same file given again: it was edited since the study began, and naming it as the fix helps nobody.
            resume = ("put back the figures the file had when the study began to resume"
                      if stored.get("hardware") == current["hardware"]
                      else f"pass --hardware {shell_path(hardware_flag(str(stored.get('hardware'))))} to resume")
            raise UserError(
                f"{where} holds a study whose figures came from another '{self.hardware.base_name}' profile ({shown} "
                f"{verb} from {current['hardware']}); old and new figures would not be comparable: {start_new} with this "
                f"profile, or {resume}"
            )
        return (f"the hardware profile differs from the one this study began with ({shown}); the study's figures "
                f"(measured or recorded, not computed from the profile) are kept, and {current['hardware']} now guides "
                "the search and the memory estimates")


    def check_same_question(self, stored: dict, where: str, device_knobs: bool = True) -> None:
        """Refuse a resume with another model, hardware, workload or space, naming each option to repeat.
        `device_knobs=False`: leave the power limit and SM clock out, which the backend may narrow later
        (run.keep_device_knobs_if_unsettable), for the check made before the backend is chosen."""
        if "space" in stored:  # an edited value is named as the edit it is, not blamed on the command line
            _stored_space(stored["space"])
        differs = _differences(stored, self.to_dict(), default_precision(self.hardware.cuda), device_knobs)
        if differs:
            raise UserError(f"{where} holds a study of {'; '.join(differs)}; {_START_NEW}, "
                            "or repeat the original options to resume")

    def _pin_unrecorded_profile(self, where: str, figures_use_profile: bool, evaluated: list | None, start_new: str) -> str:
        """The line for a resumed study that does not record its profile (an older autotune's); refuses where a
        simulated trial's figures are not given again by this profile."""
        from autotune.simulator import resimulated_differs

        profile = self.hardware.source or self.hardware.name
        if figures_use_profile and evaluated is not None:
            trial = next((t for t in evaluated if (t.user_attrs.get("result") or {}).get("source") == "simulated"
                          and (t.user_attrs.get("result") or {}).get("time_s") is not None), None)
            if trial is not None:
                differs = resimulated_differs(self.candidate(trial.user_attrs["candidate"]["knobs"]), trial.user_attrs["result"])
                if differs:
                    raise UserError(
                        f"{where} holds a study made by an older autotune, which did not record its hardware profile, and "
                        f"{profile} does not give its figures again (trial {trial.number}: {differs}): the profile changed "
                        f"since, and old and new figures would not be comparable; {start_new} with this profile")
                return (f"{where} holds a study made by an older autotune, which did not record its hardware profile: "
                        f"{profile} gives trial {trial.number}'s figures again, and is kept in the study from now on")
        if figures_use_profile:
            return (f"{where} holds a study made by an older autotune, which did not record its hardware profile: new "
                    f"trials use {profile}, whose figures may differ from the old ones' (not checked against them); it "
                    "is kept in the study from now on")
        return (f"{where} holds a study made by an older autotune, which did not record its hardware profile: {profile} "
                "guides the search and the memory estimates, and is kept in the study from now on")


_START_NEW = "pass --out NEW_DIR (in a shared --storage, --study-name NEW) to start a new study"


def _typed(path: str) -> str:
    """A recorded absolute path as one would type it here: relative where it lies under the working directory."""
    try:
        relative = os.path.relpath(path)
    except (OSError, ValueError):  # the working directory gone
        return shell_path(path)
    return shell_path(path if relative.startswith("..") or not os.path.isabs(path) else relative)


def _flag_and_name(flag: str, name) -> str:
    """What to type for a model or profile, and its name where that is not the same: `llama3-8b (Meta-Llama-3-8B)`."""
    typed = _typed(flag)
    return typed if typed == name else f"{typed} ({name})"


def _same_name(flags: tuple[str, str], name: str, there: str, sizes: str) -> tuple[str, str]:
    """The study's model and this run's where both have one name ("7b": a preset, and a model file named 7b of other
    sizes), each said as what it is (trial 63 #14: "another --model 7b" read as if --model 7b was passed)."""
    if not flags[1]:  # an older study's settings, which kept no --model as typed
        return name, f"another model named {name} ({sizes})"
    if flags[0] in PRESETS:
        there = f"{flags[0]} (the preset)"
    elif flags[0] and os.path.exists(flags[0]):  # else said gone (_gone_model), or an older study's, by its name
        there = f"{_typed(flags[0])} (named {name})"
    now = (f"{flags[1]} (the preset, {sizes})" if flags[1] in PRESETS
           else f"{_typed(flags[1])} (named {name}, {sizes})")
    return there, now


def _size_differences(stored_model, model: dict) -> str:
    """"other sizes: llm.layers 20, not 28": this run's model's sizes against the study's, the first three."""
    held = stored_model if isinstance(stored_model, dict) else {}
    differs = [f"{size} {value}, not {stored}" for size, stored, value in size_differences(held, model)]
    return "other sizes" + (": " + first_three(differs) if differs else "")


def _gone_model(flag: str, name, model) -> str:
    """The study's --model where its file (or checkpoint) is no longer there: repeating it cannot resume, a file of
    the sizes the study kept can (trial 63 #20)."""
    try:
        params = f", {params_text(model_from_json(model).params())} parameters"
    except (UserError, TypeError, AttributeError):  # an older study's model, kept by its name alone
        params = ""
    return f"{_typed(flag)} ({name}{params}; that file is no longer there: pass a model file of the same sizes)"


def _differences(stored: dict, current: dict, default_precision: str, device_knobs: bool = True) -> list[str]:
    """Each way the stored study differs from this run's options, "what: there, not here" (the model
    and each workload value and space knob by name): what to repeat to resume. A precision left out is the
    hardware's `default_precision` (workload.default_precision): `--precision bf16` given to resume a study begun
    without it on a GPU is the same study."""
    out = []
    model, here = stored.get("model"), current["model"]
    if _sizes(model) != _sizes(here):
        names = (model.get("name") if isinstance(model, dict) else model, here.get("name"))
        # As --model takes it where the study recorded that (trial 61 #15), else by its name (an older study's).
        flags = (stored.get("model_flag") if isinstance(stored.get("model_flag"), str) else "") or "", current.get("model_flag") or ""
        there, now = (_flag_and_name(flag, name) if flag else name for flag, name in zip(flags, names))
        if flags[0] and flags[0] not in PRESETS and not os.path.exists(flags[0]):
            there = _gone_model(flags[0], names[0], model)
        if names[0] == names[1]:  # the same name: which one is the preset, which the file, and how the sizes differ
            there, now = _same_name(flags, names[1], there, _size_differences(model, here))
        out.append(f"--model {there}, not {now}")
    # By the node: a calibration of the study's profile (a name of its own, its base kept) is that profile changed.
    if kept_base_name(stored) != kept_base_name(current):
        there, now = (_flag_and_name(hardware_flag(str(held["hardware"])), held.get("hardware_name"))
                      if isinstance(held.get("hardware"), str) else held.get("hardware_name") for held in (stored, current))
        out.append(f"--hardware {there}, not {now}")
    if stored.get("gpus_per_node") != current["gpus_per_node"]:
        out += _gpus_per_node(stored, current)
    for part in ("workload", "space"):
        held, now = stored.get(part) or {}, current[part]
        if part == "workload":
            held, now = ({**w, "precision": w.get("precision") or default_precision} for w in (held, now))
        for key in now:
            if held.get(key) == now[key] or (part == "space" and not device_knobs and key in _DEVICE_KNOBS):
                continue
            if key == "nodes":
                out.append(f"--nodes {_nodes(held.get(key))}, not {_nodes(now[key])}")
            elif part == "workload":
                out.append(f"--{key.replace('_', '-')} {_value(held.get(key))}, not {_value(now[key])}")
            else:
                out.append(f"--space {key} = {_value(held.get(key))}, not {_value(now[key])}")
    return out


def _gpus_per_node(stored: dict, current: dict) -> list[str]:
    """The --gpus-per-node line, where the user can act on it: a count that is its profile's own is said so (no flag
    gave it), and where both are and --hardware differs the line is left out, repeating --hardware gives it back
    (trial 63 #21: "--gpus-per-node 8, not 2", neither ever passed)."""
    counts = stored.get("gpus_per_node"), current["gpus_per_node"]
    profiles = [held.get("hardware_profile") if isinstance(held.get("hardware_profile"), dict) else {}
                for held in (stored, current)]
    own = [count == profile.get("gpus_per_node") for count, profile in zip(counts, profiles)]
    if all(own) and kept_base_name(stored) != kept_base_name(current):
        return []
    there, now = (f"{count} (the profile's)" if is_own else str(count) for count, is_own in zip(counts, own))
    return [f"--gpus-per-node {there}, not {now}"]


def _sizes(model) -> dict | None:
    """What makes a model the same one: its sizes, not its name, which for a checkpoint is its directory's (moved
    or copied it is the same model, as a model file moved is: trial 63 #9). The parts replay.model_sizes keeps of a
    ModelSpec, here of the stored JSON (an older study's may be a name alone: None, never equal to a model's)."""
    return {part: model.get(part) for part in MODEL_SIZE_PARTS} if isinstance(model, dict) else None


# Space knobs a backend that cannot set them narrows to "untouched" after the options are read.
_DEVICE_KNOBS = ("power_limit", "sm_clock_mhz")


def _value(value) -> str:
    return "default" if value is None else str(value)


def _nodes(counts) -> str:
    """As --nodes takes them: 4, or 2-8 for a range; a list (a space file's) as it is."""
    return nodes_flag(counts) if isinstance(counts, list) and counts else _value(counts)


# Where a stored setting is named, and the fix for one edited since the run kept it.
_SETTINGS = "the study's settings"
_EDITED = ("the study's settings were edited since the run kept them (study.set_user_attr): put back the value the run kept, "
           "or start a new study")


# The fix a model file's or a profile file's refusal ends with: a study need not have either file (--model 7b).
_FILE_FIX = re.compile(r"; (fix the file \(schema: [^)]*\)|see docs/hardware\.md|the file is damaged)$")


def _as_edit(refusal: ConfigError) -> ConfigError:
    """The refusal of the study's kept model or profile, worded as the edit of the study it is, not as a file to fix
    (trial 68 #16: "fix the file" for a study of --model 7b, and no fix at all for its profile's gpus_per_node 0)."""
    return ConfigError(f"{_FILE_FIX.sub('', str(refusal))}; {_EDITED}")


def _stored_workload(stored: dict) -> Workload:
    """The study's workload, each number checked as the flags are (make_workload's range), its precision too."""
    if not isinstance(stored, dict):
        raise ConfigError(f"{_SETTINGS}: workload = {shown(stored)} is not a table of {', '.join(WORKLOAD_KEYS)}; {_EDITED}")
    # Whole as the flags take them: 64.0 is a hand edit (trial 68 #5).
    values = {**stored, **{key: checked_number(_SETTINGS, f"workload.{key}", stored[key], low=1, integer=True,
                                               whole_literal=True, fix=_EDITED)
                           for key in WORKLOAD_KEYS}}
    if values.get("precision") not in (None, *PRECISIONS):
        raise ConfigError(f"{_SETTINGS}: workload.precision = {shown(values['precision'])} is not bf16 or fp32; {_EDITED}")
    return Workload(**values)


def _stored_space(stored) -> SearchSpace:
    """The study's space, each value checked as a space file's is (candidate.knob_value): an edited zero_stage of
    [1.5, "x"] was reported as the space searched, and a resume blamed the command line for it (trial 68 #5)."""
    if not isinstance(stored, dict):
        raise ConfigError(f"{_SETTINGS}: space = {shown(stored)} is not a table of knob lists; {_EDITED}")
    refuse_unknown_keys(f"{_SETTINGS}: space", stored, KNOBS, _EDITED)
    space = {}
    for knob, values in stored.items():
        if not isinstance(values, list) or not values:
            raise ConfigError(f"{_SETTINGS}: space.{knob} = {shown(values)} is not a non-empty list; {_EDITED}")
        space[knob] = tuple(_stored_knob_value(knob, value) for value in values)
    return SearchSpace(**space)


def _stored_knob_value(knob: str, value):
    try:
        return knob_value(knob, value)
    except ValueError as why:
        raise ConfigError(f"{_SETTINGS}: space.{knob} holds {shown(value)}, which {why}; {_EDITED}") from None
