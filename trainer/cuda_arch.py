"""TORCH_CUDA_ARCH_LIST as DeepSpeed's op builder can read it.

DeepSpeed 0.19's JIT builder (fused Adam, CPU Adam) sorts the list with int() on each part of an
entry, so an architecture-specific entry such as "9.0a" (sm_90a, which some CUDA images set for
Hopper) fails every probe with "invalid literal for int() with base 10: '0a'" before the first step.
The kernels DeepSpeed builds for a probe use nothing of sm_90a's extras, so each probe rank sets the
plain architecture ("9.0") for itself before DeepSpeed starts (probe.py), and says so in the
trial log.
"""

from __future__ import annotations

import re

ARCH_LIST = "TORCH_CUDA_ARCH_LIST"
# "9.0a", "10.0f", "9.0a+PTX": an architecture with a letter suffix (and perhaps +PTX).
_SUFFIXED = re.compile(r"^(\d+\.\d+)[a-z]+(\+PTX)?$", re.IGNORECASE)


def buildable_arch_list(value: str) -> str:
    """The list with letter suffixes dropped ("9.0a" -> "9.0"), separators and other entries kept."""
    parts = re.split(r"([;\s]+)", value)
    return "".join(_SUFFIXED.sub(r"\1\2", part) for part in parts)
