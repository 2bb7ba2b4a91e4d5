"""Whether a probe's failure is its set-up's rather than its candidate's (result.json's `setup_failure`).

The tuner probes a set-up failure's candidate again when the study resumes (autotune/study/retries.py), and keeps
a candidate's own failure as final. Every failure the trainer writes names its `failed_rank`, so the tuner cannot
tell the two apart by that: an unwritable ~/.cache failed the shm_comm build inside the process group's start, the
result named rank 0, and the baseline's failure was kept as final though DeepSpeed never saw the candidate
(trial 69 #7). The trainer knows, so it says:
- anything raised before the candidate is handed to the model and engine (`before_candidate`): the process group,
  the device settings, the probe's own inputs;
- at any time, a failure of building DeepSpeed's ops (torch's cpp_extension, DeepSpeed's op builders: a compiler,
  ninja or CUDA missing, the build folder unwritable), and a file system's refusal (permission, read-only, full,
  over quota, a file-size limit): what the user fixes in the environment, not by choosing another candidate;
- at any time, a `ConfigError`: one of the probe's own input files (the --data annotation file's entries, a video
  missing or that ffmpeg cannot decode: the trainer raises it for nothing else) is read only once the candidate's
  engine is up, and was written `setup_failure: false`, the candidate's own (trial77 #2).
"""

from __future__ import annotations

import errno
import os

from autotune.errors import ConfigError

# Raised by a file system, not by a candidate: the user fixes the folder, the disk, the quota or the file-size limit
# (EFBIG: a job's `ulimit -f`, which the tuner calls "full" too: autotune/cli.py _OUTPUT_FULL, trial79 #5).
_FILE_SYSTEM_ERRNOS = frozenset({errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
# Where DeepSpeed's ops are built (JIT): a frame of a failure there is a build's, whatever it raised.
_BUILD_FILES = (os.path.join("torch", "utils", "cpp_extension.py"), os.path.join("deepspeed", "ops", "op_builder", ""))


def setup_fault(exc: BaseException, before_candidate: bool) -> bool:
    """Whether `exc`, which ended a probe, is the set-up's (see the module docstring). `before_candidate`: raised
    before the trainer handed the candidate to its model and engine."""
    return before_candidate or any(_environment_error(e) for e in _chain(exc))


def _environment_error(exc: BaseException) -> bool:
    if isinstance(exc, OSError) and exc.errno in _FILE_SYSTEM_ERRNOS or isinstance(exc, ConfigError):
        return True
    traceback = exc.__traceback__
    while traceback is not None:
        if any(part in traceback.tb_frame.f_code.co_filename for part in _BUILD_FILES):
            return True
        traceback = traceback.tb_next
    return False


def _chain(exc: BaseException):
    """`exc` and the exceptions it was raised from or during (torch raises "Error building extension" from the
    compiler's CalledProcessError)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__
