"""autotune: energy-aware DeepSpeed configuration autotuner for multimodal training.

Importing this package is cheap: torch and deepspeed are only imported by the trainer and by the
launch backend's subprocesses, never at CLI start-up.
"""

from __future__ import annotations

RELEASE = "0.1.0"  # the package's own version (pyproject.toml's); `__version__` adds the source tree's commit


def __getattr__(name: str) -> str:
    # `__version__` on first use, then kept: the release has been 0.1.0 at every commit, so a study's recorded
    # `autotune_version` told no two versions apart (trial52 #5); the commit of a git checkout does.
    if name == "__version__":
        globals()["__version__"] = version = RELEASE + source_label()
        return version
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def source_label() -> str:
    """`+g<12 hex digits of the commit>`, with `.dirty` where the package's tracked files differ from it, where
    autotune runs from a git checkout (an editable install); "" elsewhere (an installed wheel, no git, a git that
    will not read the tree), never an error. One `git status` (about 20 ms)."""
    import os
    import subprocess
    from pathlib import Path

    package = Path(__file__).resolve().parent
    if not (package.parent / ".git").exists():
        return ""
    env = {k: v for k, v in os.environ.items() if k not in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE")}
    try:
        done = subprocess.run(["git", "-C", str(package.parent), "status", "--porcelain=v2", "--branch",
                               "--untracked-files=no", "--", package.name],
                              capture_output=True, text=True, timeout=5, env=env, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return ""
    lines = done.stdout.splitlines() if done.returncode == 0 else []
    commit = next((line.split()[2] for line in lines if line.startswith("# branch.oid ")), "")
    if not all(c in "0123456789abcdef" for c in commit) or not commit:  # "(initial)": a repository with no commit
        return ""
    dirty = any(not line.startswith("#") for line in lines)
    return f"+g{commit[:12]}" + (".dirty" if dirty else "")
