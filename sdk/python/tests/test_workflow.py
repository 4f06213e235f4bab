"""Workflows in the SDK (idlegrid/workflow.py) on canned responses: when a
workflow counts as settled, waiting, a step's job, the timeout's message,
and which parser a manifest goes to."""
import os
import stat
import tempfile
import unittest

import idlegrid
from idlegrid._proto import pb
from idlegrid.workflow import Workflow, WorkflowStatus


def wf(state, steps):
    w = pb.Workflow(id="w-1", state=state)
    for name, (step_state, job_id, cached) in steps.items():
        w.steps.add(name=name, state=step_state, job_id=job_id, cached=cached)
    return w


class SequenceGrid:
    """Answers GetWorkflow with each canned Workflow in turn (the last one again at the end)."""

    def __init__(self, answers):
        self.answers = list(answers)
        self.calls = []

    def call(self, method, request, timeout=None):
        self.calls.append((method, request))
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


class WorkflowStatusTest(unittest.TestCase):
    def test_settled_only_when_not_running_and_every_step_is_done(self):
        running = WorkflowStatus.of(wf("running", {"a": ("succeeded", "j-a", False), "b": ("running", "j-b", False)}))
        self.assertFalse(running.done)
        # Cancelled, but a step's job has not stopped yet: not settled.
        stopping = WorkflowStatus.of(wf("cancelled", {"a": ("succeeded", "j-a", False), "b": ("running", "j-b", False)}))
        self.assertFalse(stopping.done)
        failed = WorkflowStatus.of(wf("failed", {"a": ("failed", "j-a", False), "b": ("skipped", "", False)}))
        self.assertTrue(failed.done)
        self.assertFalse(failed.ok)
        ok = WorkflowStatus.of(wf("succeeded", {"a": ("succeeded", "j-a", True), "b": ("succeeded", "j-b", False)}))
        self.assertTrue(ok.done and ok.ok)
        self.assertEqual(ok.cached, frozenset({"a"}))
        self.assertEqual(ok.jobs, {"a": "j-a", "b": "j-b"})

    def test_wait_polls_until_settled(self):
        grid = SequenceGrid([wf("running", {"a": ("running", "j-a", False)}),
                             wf("running", {"a": ("succeeded", "j-a", False)}),
                             wf("succeeded", {"a": ("succeeded", "j-a", False)})])
        sleeps = []
        status = Workflow(grid, "w-1").wait(poll=0.25, _sleep=sleeps.append)
        self.assertEqual(status.state, "succeeded")
        self.assertEqual(sleeps, [0.25, 0.25])
        self.assertEqual([m for m, _ in grid.calls], ["GetWorkflow"] * 3)
        self.assertEqual(grid.calls[0][1].workflow_id, "w-1")

    def test_wait_past_its_timeout_names_the_steps(self):
        grid = SequenceGrid([wf("running", {"a": ("succeeded", "j-a", False), "b": ("running", "j-b", False)})])
        now = [0.0]

        def sleep(s):
            now[0] += s
        with self.assertRaises(idlegrid.DeadlineExceeded) as e:
            Workflow(grid, "w-1").wait(timeout=2, poll=1, _sleep=sleep, _clock=lambda: now[0])
        self.assertIn("w-1 still running", e.exception.reason)
        self.assertIn("b running", e.exception.reason)

    def test_a_steps_job_or_why_there_is_none(self):
        grid = SequenceGrid([wf("running", {"a": ("succeeded", "j-a", False), "d": ("waiting", "", False)})])
        w = Workflow(grid, "w-1")
        self.assertEqual(w.job("a").id, "j-a")
        with self.assertRaises(ValueError) as none_yet:
            w.job("d")
        self.assertIn("it is waiting", str(none_yet.exception))
        with self.assertRaises(KeyError):
            w.job("nope")


class ManifestKindTest(unittest.TestCase):
    """submit_manifest sends a workflow to SubmitWorkflow and a job to
    SubmitJob, by what the CLI's parser printed (a fake CLI here)."""

    def fake_cli(self, printed):
        d = tempfile.mkdtemp()
        path = os.path.join(d, "idlegrid")
        with open(path, "w") as f:
            f.write("#!/bin/sh\ncat <<'EOF'\n" + printed + "\nEOF\n")
        os.chmod(path, stat.S_IRWXU)
        return path

    def test_a_workflow_manifest_is_submitted_as_a_workflow(self):
        cli = self.fake_cli('{"name": "diamond", "steps": [{"name": "a", "job": {"image": "x@sha256:' + "0" * 64 +
                            '"}}]}')
        calls = []

        class Grid(idlegrid.Grid):
            def __init__(self):
                pass

            def call(self, method, request, timeout=None):
                calls.append((method, request))
                return pb.Workflow(id="w-9")
        w = Grid().submit_manifest("wf.yaml", idlegrid_bin=cli)
        self.assertIsInstance(w, Workflow)
        self.assertEqual(w.id, "w-9")
        self.assertEqual(calls[0][0], "SubmitWorkflow")
        self.assertEqual(calls[0][1].spec.steps[0].name, "a")
        with self.assertRaises(idlegrid.InvalidArgument) as e:
            idlegrid.parse_manifest("wf.yaml", idlegrid_bin=cli)
        self.assertIn("use submit_workflow", e.exception.reason)

    def test_a_job_manifest_is_not_a_workflow(self):
        cli = self.fake_cli('{"name": "sweep", "image": "x@sha256:' + "0" * 64 + '"}')
        self.assertEqual(idlegrid.parse_manifest("job.yaml", idlegrid_bin=cli).name, "sweep")
        with self.assertRaises(idlegrid.InvalidArgument):
            idlegrid.parse_workflow_manifest("job.yaml", idlegrid_bin=cli)


class BuildImageTest(unittest.TestCase):
    """Grid.build_image runs the CLI's `image build` against the same coordinator."""

    def fake_cli(self, script):
        d = tempfile.mkdtemp()
        path = os.path.join(d, "idlegrid")
        with open(path, "w") as f:
            f.write("#!/bin/sh\n" + script)
        os.chmod(path, stat.S_IRWXU)
        return path, d

    def test_builds_with_the_grids_connection_and_returns_the_image(self):
        cli, d = self.fake_cli('echo "$@" > "$(dirname "$0")/argv"\n'
                               'echo "$IDLEGRID_ADDR $IDLEGRID_TOKEN" > "$(dirname "$0")/env"\n'
                               'echo "pushing 3 layers" \necho "sweep@sha256:' + "a" * 64 + '"\n')

        class Grid(idlegrid.Grid):
            def __init__(self):
                self._cli_env = {"IDLEGRID_ADDR": "10.0.0.1:7443", "IDLEGRID_TOKEN": "t0k",
                                 "IDLEGRID_CA_FILE": "/ca.crt"}
        image = Grid().build_image("ctx", file="ctx/Containerfile.gpu", name="sweep", allow_network=True,
                                   idlegrid_bin=cli)
        self.assertEqual(image, "sweep@sha256:" + "a" * 64)
        with open(os.path.join(d, "argv")) as f:
            self.assertEqual(f.read().split(), ["image", "build", "ctx", "--file", "ctx/Containerfile.gpu",
                                                "--name", "sweep", "--allow-network"])
        with open(os.path.join(d, "env")) as f:
            self.assertEqual(f.read().split(), ["10.0.0.1:7443", "t0k"])

    def test_a_failed_build_raises_with_the_clis_words(self):
        cli, _ = self.fake_cli('echo "error: podman build: RUN apt-get: no network" >&2\nexit 1\n')
        with self.assertRaises(idlegrid.IdlegridError) as e:
            g = idlegrid.Grid.__new__(idlegrid.Grid)
            g._cli_env = {}
            g.build_image("ctx", idlegrid_bin=cli)
        self.assertEqual(e.exception.reason, "podman build: RUN apt-get: no network")
        usage, _ = self.fake_cli('echo "error: no such directory: ctx" >&2\nexit 2\n')
        g = idlegrid.Grid.__new__(idlegrid.Grid)
        g._cli_env = {}
        with self.assertRaises(idlegrid.InvalidArgument):
            g.build_image("ctx", idlegrid_bin=usage)


if __name__ == "__main__":
    unittest.main()
