"""A task's result: its state, and its outputs read or saved on demand,
each verified against the sha256 its node reported."""
import os

from ._proto import pb
from .artifacts import read_verified, save_verified
from .errors import DataLoss, NotFound, TaskFailed

# States a task does not leave by itself. LOST waits for the user's
# retry/abandon; the job's watch stream ends there too (jobs::IsSettled).
ENDED = frozenset({pb.SUCCEEDED, pb.FAILED, pb.CANCELLED})


def state_name(state):
    return pb.TaskState.Name(state)


def newly_settled(job, seen):
    """The tasks of `job` (a Job message) that have ended and whose index is
    not in `seen`, in index order. Pure."""
    return [t for t in sorted(job.tasks, key=lambda t: t.index) if t.state in ENDED and t.index not in seen]


def succeeded_attempt(task):
    """The attempt whose outputs are the task's result: its last succeeded one."""
    for attempt in reversed(task.attempts):
        if attempt.state == pb.SUCCEEDED:
            return attempt
    return None


def safe_output_path(path):
    """Output paths come from an untrusted node: relative, no "..", else DataLoss."""
    parts = path.split("/")
    if not path or path.startswith("/") or ".." in parts or "" in parts:
        raise DataLoss(f"refusing output path {path!r}")
    return path


class TaskResult:
    """One task of a job, as it ended. `index` is its item's index in the
    list given to map(); `item` that item as map() was given it (its values
    with their Python types), or, for a job read by id, the values as the
    job saw them (strings). `ok` is True
    for a task that succeeded; reading outputs of any other raises
    TaskFailed with its state and reason."""

    def __init__(self, task, item, download):
        self.index = task.index
        self.item = dict(item)
        self.state = state_name(task.state)
        self.ok = task.state == pb.SUCCEEDED
        self.failure_reason = pb.FailureReason.Name(task.failure_reason)
        self.message = task.message
        self.task = task  # the Task message, for everything else
        self._attempt = succeeded_attempt(task) if self.ok else None
        self._download = download  # (digest) -> iterator of ArtifactChunk
        self._cache = {}

    def __repr__(self):
        return f"TaskResult(index={self.index}, state={self.state})"

    @property
    def outputs(self):
        """Output paths (relative to the job's output directory) -> OutputFile."""
        self._require_ok()
        return {o.path: o for o in self._attempt.outputs}

    @property
    def exit_code(self):
        return self.task.attempts[-1].exit_code if self.task.attempts else None

    def read_bytes(self, name):
        """The output `name` (e.g. "result.json", "sub/x.txt"), downloaded
        once and verified. NotFound lists the outputs there are."""
        output = self._output(name)
        if name not in self._cache:
            self._cache[name] = read_verified(self._download(output.digest), output.digest, output.size)
        return self._cache[name]

    def read_text(self, name, encoding="utf-8"):
        return self.read_bytes(name).decode(encoding)

    def save(self, directory):
        """Writes every output under `directory` (kept relative), verified;
        returns the paths written."""
        written = []
        for path, output in sorted(self.outputs.items()):
            target = os.path.join(directory, safe_output_path(path))
            save_verified(self._download(output.digest), output.digest, target, output.size)
            written.append(target)
        return written

    def _require_ok(self):
        if not self.ok:
            raise TaskFailed(self.index, self.state, self.failure_reason, self.message)

    def _output(self, name):
        outputs = self.outputs
        if name not in outputs:
            have = ", ".join(sorted(outputs)) or "none"
            raise NotFound(f"task {self.index} has no output {name!r} (its outputs: {have})")
        return outputs[name]
