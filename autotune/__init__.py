"""autotune: energy-aware DeepSpeed configuration autotuner for multimodal training.

Importing this package is cheap: torch and deepspeed are only imported by the trainer and by the
launch backend's subprocesses, never at CLI start-up.
"""

__version__ = "0.1.0"
