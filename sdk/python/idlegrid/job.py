"""A submitted job: its status, results as tasks end, logs, outputs,
cancel and explain. Every call goes through its Grid's connection."""
from dataclasses import dataclass, field

from ._proto import pb
from .progress import Progress, wanted
from .results import ENDED, TaskResult, newly_settled, state_name

# Job states after which nothing more happens unasked (LOST waits for the user).
_FINAL = frozenset({pb.SUCCEEDED, pb.FAILED, pb.CANCELLED, pb.LOST})


@dataclass
class JobStatus:
    """A job at one moment: aggregate `state` ("RUNNING", "SUCCEEDED"...),
    task `counts` by state as the coordinator names them ({"succeeded": 3}), `total` tasks, how many have `ended`, and
    the Job message itself."""
    id: str
    state: str
    counts: dict
    total: int
    ended: int
    done: bool
    job: object = field(repr=False)

    @classmethod
    def of(cls, job):
        # The coordinator's summary counts every task, even when the message
        # holds a page of them (or none).
        total = sum(job.task_counts.values())
        ended = sum(n for name, n in job.task_counts.items() if name in ("succeeded", "failed", "cancelled"))
        return cls(id=job.id, state=state_name(job.state), counts=dict(job.task_counts), total=total,
                   ended=ended, done=job.state in _FINAL, job=job)


@dataclass
class LogChunk:
    task_index: int
    attempt_id: str
    stream: str  # "stdout" | "stderr"
    data: bytes
    seq: int

    @property
    def text(self):
        return self.data.decode("utf-8", errors="replace")


@dataclass
class Explanation:
    """Why one queued task waits: nodes in all and feasible, a summary, and
    the coordinator's full text (filters, candidates' scores)."""
    index: int
    state: str
    summary: str
    text: str
    total_nodes: int
    feasible_nodes: int
    proto: object = field(repr=False)


class Job:
    def __init__(self, grid, job_id, items=None):
        self._grid = grid
        self.id = job_id
        # The items map() was given, as given: results carry them with their
        # Python types. None for a job read by id (its items are the wire's strings).
        self._items = list(items) if items is not None else None

    def __repr__(self):
        return f"Job({self.id!r})"

    def status(self, tasks=True):
        """The job now (GetJob). NotFound for an unknown job id. With
        tasks=False, only its counts and summary (cheap for a large job)."""
        request = pb.GetJobRequest(job_id=self.id, paged=not tasks)
        return JobStatus.of(self._grid.call("GetJob", request))

    def tasks(self, state=None, tasks=None, offset=0, limit=50):
        """One page of the job's tasks, selected by the coordinator: those
        in `state` ("failed", or a list of names) and/or with the indices in
        `tasks` (a list of indices), from `offset`, at most `limit` (at most
        1000). Returns (tasks, matched): the Task messages and how many
        tasks the selection matched in all."""
        request = pb.GetJobRequest(job_id=self.id, paged=True, offset=offset, limit=limit)
        if state is not None:
            names = [state] if isinstance(state, str) else list(state)
            request.states.extend(_state_value(n) for n in names)
        if tasks is not None:
            request.task_indices.extend(_indices(tasks))
        job = self._grid.call("GetJob", request)
        return list(job.tasks), job.tasks_matched

    def watch(self, tasks=True):
        """Yields the job's status now and each time it changes, until it
        settles (WatchJob). With tasks=False the updates carry counts and
        the summary only: what a progress bar needs of a 10,000-task job."""
        request = pb.GetJobRequest(job_id=self.id, paged=not tasks)
        for job in self._grid.stream("WatchJob", request):
            yield JobStatus.of(job)

    def wait(self, progress=None):
        """Blocks until the job settles; returns its last status (counts
        and summary; `status()` or `tasks()` read its tasks). progress:
        True/False for a tqdm bar on stderr; None: a bar on a terminal only."""
        bar = Progress(wanted(progress), self.id)
        last = None
        try:
            for last in self.watch(tasks=False):
                bar.show(last)
        finally:
            bar.close()
        return last if last is not None else self.status()

    def results(self, progress=None):
        """Yields a TaskResult for each task as it ends (in the order they
        end), until every task has; read its outputs with r.read_text(name).
        A task left LOST with its node (awaiting `idlegrid retry`) is yielded
        last, not ok."""
        bar = Progress(wanted(progress), self.id)
        seen = set()
        last = None
        try:
            for status in self.watch():
                last = status.job
                bar.show(status)
                for task in newly_settled(last, seen):
                    seen.add(task.index)
                    yield self._result(last, task)
        finally:
            bar.close()
        for task in sorted(last.tasks if last else [], key=lambda t: t.index):
            if task.index not in seen:
                yield self._result(last, task)

    def logs(self, follow=False, after_seq=0):
        """Yields the job's output in order (StreamLogs); with follow, keeps
        streaming until the job ends."""
        request = pb.StreamLogsRequest(job_id=self.id, follow=follow, after_seq=after_seq)
        for c in self._grid.stream("StreamLogs", request):
            yield LogChunk(c.task_index, c.attempt_id, c.stream, c.data, c.seq)

    def fetch(self, directory):
        """Saves the outputs of every succeeded task as the CLI's fetch does,
        DIR/task-<index>/<path>, each verified; returns the paths written."""
        written = []
        job = self.status().job
        for task in sorted(job.tasks, key=lambda t: t.index):
            if task.state == pb.SUCCEEDED:
                written += self._result(job, task).save(f"{directory}/task-{task.index}")
        return written

    def cancel(self, tasks=None, states=None):
        """Cancels the job's tasks not yet ended: all of them, or only those
        whose index is in `tasks` and/or whose state is in `states` (names
        such as "queued" or "RUNNING"; both given: both must match), as
        `idlegrid cancel JOB --tasks/--state` does. Returns the job's status."""
        request = pb.CancelJobRequest(job_id=self.id, task_indices=_indices(tasks),
                                      states=[_state_value(s) for s in (states or ())])
        return JobStatus.of(self._grid.call("CancelJob", request))

    def retry(self, failed=True, tasks=None):
        """Sends ended tasks back to the queue with a fresh retry budget: the
        FAILED ones when `failed`, and/or those whose index is in `tasks`
        (FAILED or CANCELLED), as `idlegrid retry JOB --failed/--tasks` does.
        Returns the job's status."""
        if not failed and not tasks:
            raise ValueError("retry: say which tasks: failed=True and/or tasks=[...]")
        request = pb.RetryJobRequest(job_id=self.id, failed=bool(failed), task_indices=_indices(tasks))
        return JobStatus.of(self._grid.call("RetryJob", request))

    def abandon(self):
        """Gives up the tasks lost with their node (they fail), as `idlegrid
        abandon JOB` does; `retry()` with no tasks is not the way to rerun
        those: `resolve_lost(retry=True)` is. Returns the job's status."""
        return self.resolve_lost(retry=False)

    def resolve_lost(self, retry):
        """Runs the tasks lost with their node again (`retry`), or fails them."""
        return JobStatus.of(self._grid.call("ResolveLost", pb.ResolveLostRequest(job_id=self.id, retry=bool(retry))))

    def delete(self):
        """Deletes the settled job with its logs and the artifacts only it
        held, as `idlegrid delete JOB` does; FailedPrecondition while a task
        has not ended."""
        return self._grid.call("DeleteJob", pb.DeleteJobRequest(job_id=self.id))

    def explain(self):
        """Why each queued task waits (ExplainJob); empty when none is queued."""
        response = self._grid.call("ExplainJob", pb.GetJobRequest(job_id=self.id))
        return [Explanation(t.index, state_name(t.state), t.summary, t.text, t.total_nodes, t.feasible_nodes, t)
                for t in response.tasks]

    def _result(self, job, task):
        if self._items is not None and task.index < len(self._items):
            item = self._items[task.index]
        else:
            items = job.spec.items
            item = items[task.index].values if task.index < len(items) else {}
        return TaskResult(task, item, self._grid.download)


def _indices(tasks):
    out = []
    for t in tasks or ():
        if isinstance(t, bool) or not isinstance(t, int) or t < 0:
            raise ValueError(f"task index {t!r}: a task index is a whole number >= 0")
        out.append(t)
    return out


def _state_value(name):
    value = pb.TaskState.Value(str(name).upper()) if str(name).upper() in pb.TaskState.keys() else None
    if value is None or value == 0:
        known = ", ".join(k.lower() for k in pb.TaskState.keys() if pb.TaskState.Value(k) != 0)
        raise ValueError(f"task state {name!r}: not one of {known}")
    return value
