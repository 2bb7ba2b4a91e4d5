"""What a run says while it checks its inputs, held until they pass: a refusal is the run's one line.

"studying 1 node: what this machine holds", "backend: replay (...)" and "searching the 3 of 196 valid candidates
..." came before "error: r2 holds a study evaluated by the simulate backend" (a resume refused), and before an
srun launcher refused outside SLURM: lines of a search that never started (trial78 #3). A run prints them through
HeldLines until its last check; the first line said after the checks (a resume's "resuming the study ...") lets
them out first, in the order they were printed."""

from __future__ import annotations


class HeldLines:
    """A console's `print`, held: each call is kept until `release` (or the next `print` after `checked`)."""

    def __init__(self, console) -> None:
        self.console = console
        self._held: list[tuple[tuple, dict]] = []
        self._checked = False

    def print(self, *objects, **options) -> None:
        if self._checked:
            self.release()
            self.console.print(*objects, **options)
        else:
            self._held.append((objects, options))

    def checked(self) -> "HeldLines":
        """Every check but a resume's has passed: the next `print` lets the held lines out first. A resume refuses
        before it prints its first line (run._resume), so its checks need no call of their own."""
        self._checked = True
        return self

    def release(self):
        """Print every held line, in order; the console, for what is said from here on."""
        held, self._held = self._held, []
        for objects, options in held:
            self.console.print(*objects, **options)
        return self.console
