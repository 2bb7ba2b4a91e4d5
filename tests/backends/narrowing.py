"""What `autotune run` does with a backend's power-limit and clock controls before any probe, for the tests of the
backends that answer it: the space it narrows to, and the lines it prints (commands.options)."""

from autotune.commands.options import narrowed_for_backend, not_searched_lines


def keep_device_knobs_if_unsettable(settings, backend, console):
    """The settings `run` searches with `backend`, its lines printed to `console` as run prints them."""
    narrowed, not_searched = narrowed_for_backend(settings, backend)
    for i, line in enumerate(not_searched_lines(not_searched, narrowed, backend)):
        console.print(f"{'warning: ' if i == 0 else ''}{line}", markup=False)
    return narrowed
