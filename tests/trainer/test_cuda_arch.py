"""TORCH_CUDA_ARCH_LIST as DeepSpeed 0.19's op builder can read it."""

from __future__ import annotations

import pytest

from trainer.cuda_arch import buildable_arch_list, probe_environment_fix


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


def test_nothing_is_set_when_nothing_needs_fixing():
    assert probe_environment_fix({}) == {}
    assert probe_environment_fix({"TORCH_CUDA_ARCH_LIST": "9.0"}) == {}
    assert probe_environment_fix({"TORCH_CUDA_ARCH_LIST": "9.0a"}) == {"TORCH_CUDA_ARCH_LIST": "9.0"}
