"""Progress of a job's tasks: a tqdm bar on a terminal, nothing otherwise
(a library must not write lines into a program's output unasked)."""
import sys

from tqdm import tqdm


def wanted(progress):
    """progress=None: a bar only when stderr is a terminal."""
    if progress is None:
        return sys.stderr.isatty()
    return bool(progress)


class Progress:
    """Tasks ended out of all, with the per-state counts beside the bar."""

    def __init__(self, enabled, description):
        self._bar = None
        self._enabled = enabled
        self._description = description

    def show(self, status):
        if not self._enabled:
            return
        if self._bar is None:
            self._bar = tqdm(total=status.total, desc=self._description, unit="task", file=sys.stderr)
        self._bar.set_postfix_str(" ".join(f"{k}={v}" for k, v in sorted(status.counts.items())),
                                  refresh=False)
        self._bar.update(status.ended - self._bar.n)

    def close(self):
        if self._bar is not None:
            self._bar.close()
            self._bar = None
