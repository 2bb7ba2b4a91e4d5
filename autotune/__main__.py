"""`python -m autotune`: the `autotune` command, for scripts that call a venv's python rather than its PATH."""

from autotune.cli import console_main

console_main()
