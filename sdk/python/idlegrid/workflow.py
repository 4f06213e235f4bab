"""A submitted workflow (docs/workflows.md): its steps' states and jobs,
waiting until it settles, cancel. Every call goes through its Grid's
connection (the RequesterService's workflow methods)."""
import time
from dataclasses import dataclass, field

from ._proto import pb
from .errors import DeadlineExceeded
from .job import Job

# A step in one of these states changes no more (workflow::IsDone).
_STEP_DONE = frozenset({"succeeded", "failed", "skipped", "cancelled"})


@dataclass
class WorkflowStatus:
    """A workflow at one moment: its `state` ("running", "succeeded",
    "failed", "cancelled"), each step's state and job id by step name, the
    steps reused from an earlier run (`cached`), whether it has settled, and
    the Workflow message itself."""
    id: str
    state: str
    steps: dict
    jobs: dict
    cached: frozenset
    done: bool
    workflow: object = field(repr=False)

    @classmethod
    def of(cls, wf):
        steps = {s.name: s.state for s in wf.steps}
        # As `idlegrid status WF --wait`: settled once the workflow is no
        # longer running and no step can change (a cancel stops running jobs).
        done = wf.state != "running" and all(state in _STEP_DONE for state in steps.values())
        return cls(id=wf.id, state=wf.state, steps=steps, jobs={s.name: s.job_id for s in wf.steps},
                   cached=frozenset(s.name for s in wf.steps if s.cached), done=done, workflow=wf)

    @property
    def ok(self):
        return self.state == "succeeded"


class Workflow:
    def __init__(self, grid, workflow_id):
        self._grid = grid
        self.id = workflow_id

    def __repr__(self):
        return f"Workflow({self.id!r})"

    def status(self):
        """The workflow now (GetWorkflow). NotFound for an unknown id."""
        return WorkflowStatus.of(self._grid.call("GetWorkflow", pb.GetWorkflowRequest(workflow_id=self.id)))

    def wait(self, timeout=None, poll=0.5, _sleep=time.sleep, _clock=time.monotonic):
        """Blocks until the workflow settles and returns its last status
        (check .ok or .state). DeadlineExceeded after `timeout` seconds."""
        deadline = None if timeout is None else _clock() + timeout
        while True:
            status = self.status()
            if status.done:
                return status
            if deadline is not None and _clock() >= deadline:
                raise DeadlineExceeded(f"workflow {self.id} still {status.state} after {timeout} s: "
                                       + ", ".join(f"{n} {s}" for n, s in status.steps.items()))
            _sleep(poll)

    def job(self, step):
        """The Job a step ran as (or reused, when cached). KeyError for a
        step the workflow does not have; a ValueError while it has no job yet
        (waiting on its dependencies, or skipped)."""
        status = self.status()
        if step not in status.jobs:
            raise KeyError(f"workflow {self.id} has no step {step!r} (it has {', '.join(status.jobs)})")
        if not status.jobs[step]:
            raise ValueError(f"step {step!r} of workflow {self.id} has no job yet: it is {status.steps[step]}")
        return Job(self._grid, status.jobs[step])

    def cancel(self):
        """Cancels the steps not yet done (their jobs too); returns the status."""
        return WorkflowStatus.of(self._grid.call("CancelWorkflow", pb.GetWorkflowRequest(workflow_id=self.id)))
