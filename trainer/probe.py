"""The probe: train one candidate for a short measured window and write result.json.

    python -m trainer.probe --candidate candidate.json --out result.json
    torchrun --nproc_per_node=2 -m trainer.probe --model tiny --hardware cpu --zero-stage 3 \\
        --activation-checkpointing offload_sync --sp-degree 2 --out result.json

Exit status 0 means status "ok"; anything else still leaves a result.json (status "oom" or
"failed" with the error) whenever any rank could write one. Test hook for launch-backend tests:
AUTOTUNE_PROBE_TEST_HOOK=hang|crash|oom makes every rank (or only rank
AUTOTUNE_PROBE_TEST_HOOK_RANK) sleep forever, raise an error, or raise an out-of-memory error
right after the process group is up. Schema: docs/result-schema.md.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import os
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import NamedTuple

from autotune.candidate import KNOBS, Candidate, Knobs, candidate_from_dict, knob_allowed, knob_value
from autotune.checks import MAX_COUNT, flag_number
from autotune.errors import ConfigError, UserError
from autotune.hardware import HardwareProfile, load_hardware
from autotune.models import ModelSpec, load_model
from autotune.usage_errors import OneLineParser
from autotune.workload import DEFAULT_WORKLOAD, PRECISIONS, default_precision, make_workload
from trainer.distributed import LaunchEnv, collective_timeout_words, init_process_group, launch_env, teardown
from trainer.power import agree_or_refuse, applied_device_settings, device_settings_block

MAX_THREADS_PER_RANK = 4096


def _thread_count(text: str) -> int:
    # beyond MAX_THREADS_PER_RANK torch.set_num_threads overflows
    value, problem = flag_number(text, low=1, high=MAX_THREADS_PER_RANK, integer=True)
    if problem:
        raise argparse.ArgumentTypeError(f"{text!r} {problem}")
    return value


# A week, the bound of the tuner's own --probe-timeout (autotune/backends/probe_options.py, a layer above this
# one): longer is a typo (and far longer overflows the collectives' timeout, an int of milliseconds).
MAX_SECONDS = 7 * 24 * 3600.0


def _number_flag(*, low, high, low_open: bool = False, integer: bool = False, meaning: str = ""):
    """argparse type for a number flag: its type and range checked where argparse reads it, with the wording
    of autotune.checks, so '0', '1.5', 'nan', '1e400' or 'ten' is one usage line on every rank and never a
    failed result.json (nor, for a 0, a silent "not given"). The tuner's own flags do the same
    (autotune/commands/flags.py, a layer above this one)."""
    def parse(text: str):
        value, problem = flag_number(text, low=low, high=high, low_open=low_open, integer=integer)
        if problem:
            raise argparse.ArgumentTypeError(f"{text!r} {problem}{f' ({meaning})' if meaning else ''}")
        return value

    parse.__name__ = "whole number" if integer else "number"  # argparse names the type in some errors
    return parse


def _seconds_flag(*, low_open: bool, meaning: str):
    """A duration in seconds: a finite number in [0 (or > 0), a week]; NaN, infinities and 1e400 are
    refused here, not in the collectives."""
    return _number_flag(low=0, high=MAX_SECONDS, low_open=low_open, meaning=meaning)


def _count_flag(*, low: int = 1, meaning: str = ""):
    return _number_flag(low=low, high=MAX_COUNT, integer=True, meaning=meaning)


def _out_file(text: str) -> Path:
    """--out, checked on every rank before anything starts: a finished probe must never find it cannot
    write its result (a traceback instead of result.json). The folder must exist (every rank may
    write a failure there, and reads the candidate beside it: it must be on a file system each node
    shares), a file must be creatable in it (tried: permission bits say nothing to root, and
    read-only mounts refuse everyone), and a file already there is replaced, so it must be a result."""
    from trainer.result import is_result_file

    path = Path(text)
    folder = path.parent
    if not text.strip():
        raise argparse.ArgumentTypeError("is empty; give the result file's path, e.g. --out result.json")
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a folder; give a file path in it, e.g. --out {path / 'result.json'}")
    if path.exists() and not path.is_file():  # /dev/null as root: the probe would delete the device
        raise argparse.ArgumentTypeError(f"{text!r} is not a regular file (a device, pipe or socket) and the probe "
                                         "replaces --out; give a file path, e.g. --out result.json")
    if path.is_file() and not is_result_file(path):
        raise argparse.ArgumentTypeError(f"{text!r} is an existing file that is not a probe's result.json, and the "
                                         "probe replaces --out; move it away or give another path, e.g. --out "
                                         f"{folder / 'result.json'}")
    if not folder.is_dir():
        if folder.exists():
            raise argparse.ArgumentTypeError(f"{text!r}: {folder} is a file, not a folder; give a path in a folder")
        raise argparse.ArgumentTypeError(f"{text!r}: its folder {folder} does not exist; create it (on several nodes: "
                                         "on a file system they share) or give a path in an existing folder")
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"{text!r}: cannot create a file in {folder} ({exc.strerror or exc}); "
                                         "give a path in a folder you can write to") from None
    return path


class JsonFile(NamedTuple):
    """A JSON file flag's path (as given, for messages) and its object, read once, where argparse checks it."""

    path: str
    data: dict


def _json_object(flag: str, text: str) -> dict:
    """The JSON object in file `text`, or argparse's one line naming what is wrong with it."""
    path = Path(text)
    if not path.is_file():
        what = "a folder" if path.is_dir() else "not a file" if path.exists() else "missing"
        raise argparse.ArgumentTypeError(f"{text!r} is {what}; give the path of a {flag} JSON file")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:  # unreadable, not UTF-8, not JSON
        raise argparse.ArgumentTypeError(f"{text!r} is not a readable JSON file ({exc}); give the {flag} file "
                                         "`autotune export` wrote") from None
    if not isinstance(data, dict):
        kind = "JSON null" if data is None else f"a JSON {type(data).__name__}"
        raise argparse.ArgumentTypeError(f"{text!r} holds {kind}, not an object; give the {flag} file `autotune "
                                         "export` wrote")
    return data


def _candidate_file(text: str) -> Candidate:
    """--candidate: a candidate file (`autotune export` writes <pick>.candidate.json), checked before any rank
    starts, so a wrong file is one usage line on every rank and not a failed result."""
    data = _json_object("candidate", text)
    try:
        return candidate_from_dict(data)
    except (KeyError, TypeError, ValueError, UserError) as exc:
        # ours name the key and value (an edited knob); Python's are named by their type (KeyError: 'knobs')
        why = str(exc) if isinstance(exc, UserError) else f"{type(exc).__name__}: {exc}"
        raise argparse.ArgumentTypeError(f"{text!r} is not a candidate file ({why}); correct it, or give the "
                                         "<pick>.candidate.json `autotune export` wrote, or the knob flags") from None


def _deepspeed_config_file(text: str) -> JsonFile:
    return JsonFile(text, _json_object("DeepSpeed config", text))


class ModelFlag(NamedTuple):
    """--model as given (for messages), the model it names, read once where argparse checks it, and the one
    warning line for what of a Hugging Face config autotune does not model as written (None where nothing)."""

    given: str
    spec: ModelSpec
    warning: str | None


def _model_flag(text: str) -> ModelFlag:
    """--model: an unknown preset or a wrong model file is one usage line on every rank, not a failed result."""
    from autotune.models_hf import model_warning

    if not text.strip():  # Path("") is the current folder: "--model . is a directory without a config.json"
        raise argparse.ArgumentTypeError("is empty; give a preset (tiny, 7b, 32b, 72b), a model JSON file or a "
                                         "checkpoint's config.json")
    try:
        return ModelFlag(text, load_model(text), model_warning(text))
    except UserError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _hardware_flag(text: str) -> HardwareProfile:
    try:
        return load_hardware(text)
    except UserError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


_model_flag.__name__, _hardware_flag.__name__ = "model", "hardware"


def _sm_clock(text: str) -> int | str:
    return text if text == "max" else int(text)


def _knob_flag(knob: str, convert):
    """argparse type for one knob: the value converted, then checked as a candidate file's would be
    (knob_value), so `--zero-stage 4` is one usage line and not DeepSpeed's validation error later."""
    def parse(text: str):
        try:
            try:
                # int() and float() read '1_6' and '４' as 16 and 4: a knob's number is written in ASCII digits
                # with no separator (autotune.checks.flag_number), else it is text knob_value refuses
                value = text if convert is not str and ("_" in text or not text.isascii()) else convert(text)
            except ValueError:
                value = text  # not even of the knob's type: knob_value says what is allowed
            return knob_value(knob, value)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"{text!r} {exc}") from None

    parse.__name__ = knob
    return parse


TEST_HOOK_ENV = "AUTOTUNE_PROBE_TEST_HOOK"
TEST_HOOK_RANK_ENV = "AUTOTUNE_PROBE_TEST_HOOK_RANK"
_KNOB_FLAGS = {"zero_stage": int, "optimizer_offload": str, "activation_checkpointing": str, "sp_degree": int, "micro_batch": int, "nodes": int,
               "power_limit": float, "sm_clock_mhz": _sm_clock}
# What each knob flag sets; --help adds the values a candidate takes and its default from autotune/candidate.py.
_KNOB_MEANINGS = {
    "zero_stage": "ZeRO stage (0: plain data parallel, 3: parameters partitioned too)",
    "optimizer_offload": "optimizer state offload to host memory (async: SuperOffload, ZeRO-3 and CUDA only)",
    "activation_checkpointing": "activation checkpointing (recompute in backward, or offload block inputs to host)",
    "sp_degree": "Ulysses sequence-parallel degree; divides the ranks and the attention heads",
    "micro_batch": "samples per rank per micro-step; gradient accumulation makes up the global batch",
    "nodes": "nodes the ranks span",
    "power_limit": "GPU power limit as a share of each device's default limit (a GH200's: the module's)",
    "sm_clock_mhz": "SM clock cap",
}
_WORKLOAD_FLAGS = {"frames": "video frames per sample", "text_tokens": "text tokens per sample",
                   "global_batch": "samples per optimizer step", "samples": "samples of the whole job"}


def _parser() -> argparse.ArgumentParser:
    # As `autotune`'s: a usage mistake is one line on every rank (not the usage block once per rank), and no
    # prefixes: `--probe 10` (a user meaning steps, as `run --probe-steps`) was --probe-seconds 10.
    parser = OneLineParser(prog="python -m trainer.probe", description=__doc__.split("\n\n")[0],
                           allow_abbrev=False)
    parser.add_argument("--candidate", type=_candidate_file,
                        help="candidate JSON (Candidate.to_dict()); or give the flags below")
    parser.add_argument("--out", type=_out_file, default="result.json",
                        help="where rank 0 writes the result: a new file or an earlier result, in an existing folder "
                             "(default: %(default)s)")
    parser.add_argument("--model", type=_model_flag, help="preset (tiny, 7b, 32b, 72b), a model JSON file, or a "
                        "checkpoint's Hugging Face config.json or its directory")
    parser.add_argument("--hardware", type=_hardware_flag, help="hardware profile name or TOML path (default: cpu)")
    for knob, kind in _KNOB_FLAGS.items():
        parser.add_argument("--" + knob.replace("_", "-"), type=_knob_flag(knob, kind),
                            help=f"{_KNOB_MEANINGS[knob]}; {knob_allowed(knob)} (default: {getattr(Knobs, knob)})")
    parser.add_argument("--gpus-per-node", type=_count_flag(), help="ranks per node (default: WORLD_SIZE / nodes)")
    for name, meaning in _WORKLOAD_FLAGS.items():
        parser.add_argument("--" + name.replace("_", "-"), type=_count_flag(),
                            help=f"{meaning} (default: the model's default_workload, else {DEFAULT_WORKLOAD[name]})")
    parser.add_argument("--precision", choices=PRECISIONS,
                        help=f"training precision (default: {default_precision(cuda=True)} on CUDA GPUs, "
                             f"{default_precision(cuda=False)} on CPU)")
    parser.add_argument("--warmup-steps", type=_count_flag(low=0), default=2,
                        help="optimizer steps before the window (default: %(default)s)")
    parser.add_argument("--steps", type=_count_flag(), default=5,
                        help="at least this many measured optimizer steps (default: %(default)s)")
    parser.add_argument("--probe-seconds", type=_seconds_flag(low_open=False, meaning="the measured window's "
                        "minimum length: 0 for none, at most a week"), default=0.0,
                        help="and at least this long a window (default: 0, no minimum)")
    parser.add_argument("--deepspeed-config", type=_deepspeed_config_file,
                        help="train with this exported DeepSpeed JSON instead")
    parser.add_argument("--data", help="LLaVA-Video-style annotation JSON (default: synthetic samples); docs/data.md")
    parser.add_argument("--video-root", help="folder the annotation's video paths are relative to (default: its folder)")
    parser.add_argument("--collective-timeout-s", type=_seconds_flag(low_open=True, meaning="how long a collective "
                        "waits for a peer: more than 0, at most a week"), default=600.0,
                        help="process-group timeout (default: %(default)g)")
    parser.add_argument("--threads-per-rank", type=_thread_count, metavar="N",
                        help="CPU threads of each rank (default: the cores it may run on, shared among the node's "
                             "ranks, under every launcher; trainer/threads.py)")
    # The deepspeed launcher passes --local_rank=N; LOCAL_RANK, which it sets too, is what the trainer reads.
    parser.add_argument("--local_rank", "--local-rank", type=_count_flag(low=0), help=argparse.SUPPRESS)
    return parser


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = _parser()
    args = parser.parse_args(argv)
    if not args.candidate and not args.model:
        parser.error("give --candidate FILE or --model (plus knob flags)")
    problem = _data_problem(args)
    if problem:
        parser.error(problem)
    fixed = _flags_a_candidate_fixes(args)
    if args.candidate and fixed:
        parser.error(f"--candidate already fixes {', '.join(fixed)}: give either the file or the flags")
    if not args.candidate:
        # Between the flags and the model (samples below one global batch): a usage line too, not a failed result.
        try:
            args.workload = make_workload(args.model.spec, precision=args.precision,
                                          **{k: getattr(args, k) for k in _WORKLOAD_FLAGS})
        except UserError as exc:
            parser.error(str(exc))
    return args


def _data_problem(args: argparse.Namespace) -> str | None:
    """--data and --video-root checked with the other flags, on every rank before DeepSpeed starts: a missing,
    unreadable or empty annotation file was a failed result.json after the process group and DeepSpeed's op build,
    taken for the candidate's own failure (trial77 #2). The file is read as the dataset reads it (load_annotations),
    its videos are not: which of them a probe reads depends on the workload. None where nothing is wrong."""
    if args.data is None:
        if args.video_root is not None:
            return "argument --video-root: given without --data, so no video is read; add --data FILE or drop it"
        return None
    if not args.data.strip():  # Path("") is the current folder: "annotation file . is a folder"
        return "argument --data: is empty; give the path of a LLaVA-Video JSON file (docs/data.md)"
    from trainer.video_dataset import load_annotations
    from trainer.video_decode import require_decoder

    try:
        load_annotations(Path(args.data), None if args.video_root is None else Path(args.video_root))
        require_decoder()
    except ConfigError as exc:
        flag = "--video-root" if str(exc).startswith("video root") else "--data"
        return f"argument {flag}: {exc}"
    return None


def _flags_a_candidate_fixes(args: argparse.Namespace) -> list[str]:
    return [k for k in (*_KNOB_FLAGS, *_WORKLOAD_FLAGS, "model", "hardware", "precision", "gpus_per_node")
            if getattr(args, k) is not None]


def candidate_from_args(args: argparse.Namespace, world_size: int) -> Candidate:
    """From the candidate file, or from one flag per knob (unset knobs keep Knobs' defaults)."""
    if args.candidate:  # parse_args refused knob flags beside it
        return args.candidate
    knobs = Knobs(**{k: getattr(args, k) for k in KNOBS if getattr(args, k) is not None})
    # parse_args refused a 0: a given count is used as given, never taken for "not given".
    gpus_per_node = max(1, world_size // knobs.nodes) if args.gpus_per_node is None else args.gpus_per_node
    hardware = load_hardware("cpu") if args.hardware is None else args.hardware
    return Candidate(knobs, args.model.spec, hardware, args.workload, gpus_per_node=gpus_per_node)


def _hook_for(spec: str, candidate: Candidate) -> str:
    """The hook that applies to this candidate. `spec` is `KIND` (every probe) or a `;` list of
    `KIND@knob=value[,knob=value]` (only probes of matching candidates), e.g. `oom@zero_stage=1;hang@zero_stage=3`:
    lets a test make chosen trials of a real study fail while the others run."""
    knobs = {k: str(v) for k, v in candidate.knobs.to_dict().items()}
    for entry in filter(None, (part.strip() for part in spec.split(";"))):
        kind, _, condition = entry.partition("@")
        pairs = [pair.split("=", 1) for pair in condition.split(",") if pair]
        if all(len(p) == 2 and knobs.get(p[0].strip()) == p[1].strip() for p in pairs):
            return kind.strip()
    return ""


def run_test_hook(rank: int, candidate: Candidate) -> None:
    hook = _hook_for(os.environ.get(TEST_HOOK_ENV, ""), candidate)
    only_rank = os.environ.get(TEST_HOOK_RANK_ENV)
    if not hook or (only_rank is not None and int(only_rank) != rank):
        return
    if hook == "hang":
        print(f"{TEST_HOOK_ENV}=hang: rank {rank} sleeps until killed", file=sys.stderr, flush=True)
        while True:
            time.sleep(3600)
    if hook == "crash":
        raise RuntimeError(f"{TEST_HOOK_ENV}=crash: simulated probe failure on rank {rank}")
    if hook == "oom":
        import torch

        raise torch.OutOfMemoryError(f"{TEST_HOOK_ENV}=oom: simulated out-of-memory on rank {rank}")
    raise ValueError(f"{TEST_HOOK_ENV}={hook!r}: use hang, crash or oom")


def device_name(cuda: bool) -> str:
    import torch

    return torch.cuda.get_device_name() if cuda else "cpu"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    _readable_arch_list()
    env = launch_env()
    if env.rank == 0 and args.model is not None and args.model.warning:
        print(f"probe: warning: {args.model.warning}", file=sys.stderr, flush=True)
    from trainer.threads import apply_threads, threads_per_rank

    threads = threads_per_rank(args.threads_per_rank, env.local_world_size)
    apply_threads(threads)
    from autotune.build_locks import clear_stale_build_locks, use_install_extensions_dir

    use_install_extensions_dir()  # before DeepSpeed builds or loads an op: this install's builds apart
    if env.is_node_leader:
        # Before the ranks rendezvous, so before any of them can wait on a lock a killed build left.
        for line in clear_stale_build_locks():
            print(f"probe: {line}", file=sys.stderr, flush=True)
    out = Path(args.out)
    if env.rank == 0 and out.exists():
        out.unlink()  # a stale file must not pass for this run's (ranks rendezvous before they can write)

    from trainer import result as results
    from trainer.engine import UnsupportedCandidate, check_supported, cuda_available

    cuda = cuda_available()
    candidate, ds_config, failed = None, None, True
    before_candidate = True  # until the candidate is handed to the model and engine (trainer/setup_fault.py)
    data = data_source(args)
    base = results.base_result(None, None, env.world_size, device_name(cuda), data)
    device_settings = ExitStack()  # closed first on every way out: the limit is restored before teardown
    try:
        candidate = candidate_from_args(args, env.world_size)
        ds_config = _ds_config(args, candidate)
        base = results.base_result(candidate, ds_config, env.world_size, device_name(cuda), data)
        base["threads_per_rank"] = threads
        check_supported(candidate, env.world_size, cuda)  # refuse before any process group exists
        init_process_group(env, args.collective_timeout_s)
        guard = device_settings.enter_context(applied_device_settings(candidate, env))  # before the warm-up
        block = device_settings_block(candidate, [guard.summary()])
        if block is not None:
            base["device_settings"] = block
        agree_or_refuse(guard, env)
        before_candidate = False  # the test hook stands for the candidate's own failures
        run_test_hook(env.rank, candidate)
        from trainer.run import run_probe

        outcome = run_probe(candidate, ds_config, args, env, cuda, base, guard.summary())
        if env.rank == 0:
            results.write_result(out, outcome, overwrite=True)
            print(results.summary_line(outcome, out), file=sys.stderr, flush=True)
        failed = False
        return 0
    except UnsupportedCandidate as exc:
        _write_failure(results, out, results.failure_result(base, exc, env.rank, refused=True), env)
        return 1
    except BaseException as exc:  # noqa: BLE001 - every failure becomes a result, never a hang
        if isinstance(exc, KeyboardInterrupt):
            raise
        from trainer.setup_fault import setup_fault

        failure = results.failure_result(base, exc, env.rank, setup=setup_fault(exc, before_candidate))
        failure["error"] += collective_timeout_words(exc, args.collective_timeout_s)
        _write_failure(results, out, failure, env)
        return 1
    finally:
        device_settings.close()
        teardown(failed)


def data_source(args: argparse.Namespace) -> dict | None:
    """result.json's `data`: None for synthetic samples; else the annotation file and the video root as given
    (`video_root` None: the annotation file's folder, trainer/data.py)."""
    if args.data is None:
        return None
    return {"annotations": args.data, "video_root": args.video_root}


def _readable_arch_list() -> None:
    """TORCH_CUDA_ARCH_LIST without an architecture's letter suffix (9.0a -> 9.0) before DeepSpeed
    builds its ops: its builder cannot read the suffix (trainer/cuda_arch.py)."""
    from trainer.cuda_arch import ARCH_LIST, buildable_arch_list

    given = os.environ.get(ARCH_LIST)
    fixed = None if given is None else buildable_arch_list(given)
    if fixed != given:
        os.environ[ARCH_LIST] = fixed
        print(f"probe: {ARCH_LIST}={fixed} (was {given!r}: DeepSpeed's op builder cannot read "
              "an architecture's letter suffix)", file=sys.stderr, flush=True)


def _ds_config(args: argparse.Namespace, candidate: Candidate) -> dict:
    from autotune.ds_config import deepspeed_config, knob_contradictions

    if not args.deepspeed_config:
        return deepspeed_config(candidate)
    config = args.deepspeed_config.data
    # The probe feeds the candidate's micro-batches and labels its figures with the candidate's knobs:
    # a config edited to say otherwise would be measured under the wrong name.
    contradictions = knob_contradictions(config, candidate)
    if contradictions:
        raise ValueError(f"--deepspeed-config {args.deepspeed_config.path} sets {'; '.join(contradictions)}: the probe trains "
                         "and labels the candidate's knobs; change them in the candidate file (or the knob flags) to "
                         "match, or drop --deepspeed-config")
    return config


def _write_failure(results, out: Path, failure: dict, env: LaunchEnv) -> None:
    wrote = results.write_result(out, failure, overwrite=False)
    if wrote or env.rank == 0:
        print(f"probe rank {env.rank}: {failure['status']}: {failure['error']}", file=sys.stderr, flush=True)


def exit_now(code: int) -> None:
    """Leave without the interpreter's finalization, once everything is written and flushed.

    DeepSpeed keeps its gloo process groups alive past destroy_process_group (their worker threads
    are still running at exit), and finalizing Python under them aborts the process now and then
    (SIGABRT, "terminate called without an active exception") after a good run: a wrong exit status
    for a probe whose result is already written.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    faulthandler.enable()  # a native crash (SIGSEGV, SIGABRT) leaves each thread's Python stack in the log
    exit_now(main())
