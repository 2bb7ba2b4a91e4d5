"""TORCH_CUDA_ARCH_LIST as DeepSpeed 0.19's op builder can read it."""

from __future__ import annotations

import pytest

from trainer.cuda_arch import buildable_arch_list


@pytest.mark.parametrize("given, buildable", [
    ("9.0a", "9.0"),
    ("8.0;9.0a", "8.0;9.0"),
    ("8.0 9.0a+PTX", "8.0 9.0+PTX"),
    ("10.0f;12.0a", "10.0;12.0"),
    ("9.0", "9.0"),
    ("9.0+PTX", "9.0+PTX"),
    ("", ""),
    ("Hopper", "Hopper"),  # not ours to interpret: left for DeepSpeed to report
])
def test_only_letter_suffixes_are_dropped(given, buildable):
    assert buildable_arch_list(given) == buildable

