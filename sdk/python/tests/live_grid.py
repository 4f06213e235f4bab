"""The SDK against a live grid (run by tests/e2e/sdk_e2e_test.cc, which
starts a coordinator and an agent and pushes the pi-sim image):
    IDLEGRID_CONFIG=DATA_DIR/client.yaml IDLEGRID_TEST_IMAGE=pi-sim@sha256:...
    IDLEGRID_BIN=build/idlegrid python3 -m unittest -v live_grid
Every refusal must carry the coordinator's reason naming what is at fault."""
import asyncio
import hashlib
import os
import tempfile
import unittest

import idlegrid
import idlegrid.aio
from idlegrid._proto import pb
from idlegrid.artifacts import read_verified

IMAGE = os.environ.get("IDLEGRID_TEST_IMAGE", "")
NEVER_PUSHED = "ghost@sha256:" + "0123456789abcdef" * 4


class LiveGridTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not IMAGE:
            raise RuntimeError("IDLEGRID_TEST_IMAGE is not set: this suite needs a live grid")
        cls.grid = idlegrid.connect()

    def job_names(self):
        return sorted(j.spec.name for j in self.grid.call("ListJobs", pb.ListJobsRequest()).jobs)

    def map(self, items, args, **options):
        return self.grid.map(IMAGE, items, args=args, command=["/sim"], memory=256 * idlegrid.MiB, **options)

    def test_an_item_lacking_a_placeholders_value_is_refused_naming_the_item(self):
        before = self.job_names()
        with self.assertRaises(idlegrid.InvalidArgument) as e:
            self.map([{"samples": 1000}, {"samples": 2000}, {"sampels": 3000}], ["{{.samples}}", "/out"],
                     name="bad-item")
        self.assertEqual(e.exception.reason, "spec.args[0]: uses {{.samples}}, which array.items[2] does not have")
        self.assertEqual(e.exception.item_index, 2)
        self.assertEqual(self.job_names(), before, "nothing stored")

    def test_a_malformed_placeholder_is_refused_naming_the_field(self):
        with self.assertRaises(idlegrid.InvalidArgument) as e:
            self.map([{"samples": 1000}], ["{{samples}}", "/out"])
        self.assertIn("spec.args[0]", e.exception.reason)
        self.assertIn("{{samples}}", e.exception.reason)

    def test_an_item_value_the_wire_cannot_carry_names_the_item(self):
        with self.assertRaises(idlegrid.InvalidArgument) as e:
            self.map([{"samples": 1000}, {"samples": [2000]}], ["{{.samples}}", "/out"])
        self.assertEqual(e.exception.item_index, 1)
        self.assertIn("array.items[1]", e.exception.reason)

    def test_an_image_never_pushed_is_refused_naming_the_image(self):
        before = self.job_names()
        with self.assertRaises(idlegrid.FailedPrecondition) as e:
            self.grid.map(NEVER_PUSHED, [{"samples": 1000}], args=["{{.samples}}", "/out"], name="ghost")
        self.assertIn("sha256:" + "0123456789abcdef" * 4, e.exception.reason)
        self.assertIn("push it first", e.exception.reason)
        self.assertEqual(self.job_names(), before, "nothing stored")

    def test_an_image_not_pinned_by_digest_is_refused_naming_the_field(self):
        with self.assertRaises(idlegrid.InvalidArgument) as e:
            self.grid.map("pi-sim:latest", [{"samples": 1000}], args=["{{.samples}}"])
        self.assertTrue(e.exception.reason.startswith("spec.image: "), e.exception.reason)
        self.assertIn("pi-sim:latest", e.exception.reason)

    def test_an_unknown_job_is_not_found(self):
        with self.assertRaises(idlegrid.NotFound) as e:
            self.grid.job("j-doesnotexist").status()
        self.assertIn("j-doesnotexist", e.exception.reason)

    def test_a_wrong_token_is_unauthenticated(self):
        with idlegrid.connect(token="not-a-token") as other, self.assertRaises(idlegrid.Unauthenticated):
            other.jobs()

    def test_a_manifest_error_carries_the_parsers_file_line_and_column(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "job.yaml")
            with open(path, "w") as f:
                f.write(f"apiVersion: idlegrid/v1\nname: m\nimage: {IMAGE}\nargs: [\"{{{{.samples}}}}\"]\n"
                        "array:\n  items:\n    - {samples: 1}\n    - {other: 2}\n")
            with self.assertRaises(idlegrid.InvalidArgument) as e:
                self.grid.submit_manifest(path)
        self.assertEqual(e.exception.reason,
                         f"{path}:4:8: args[0]: uses {{{{.samples}}}}, which array.items[1] does not have")
        self.assertEqual(e.exception.item_index, 1)

    def test_a_manifest_runs_and_its_logs_and_outputs_come_back_verified(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "job.yaml")
            with open(path, "w") as f:
                f.write(f"apiVersion: idlegrid/v1\nname: from-manifest\nimage: {IMAGE}\ncommand: [/sim]\n"
                        "args: [\"{{.samples}}\", /out]\nresources: {cpu: 1, memory: 256Mi}\n"
                        "array: {items: [{samples: 1000}, {samples: 2000}]}\n")
            job = self.grid.submit_manifest(path)
            status = job.wait(progress=False)
            self.assertEqual((status.state, status.ended, status.total), ("SUCCEEDED", 2, 2), status.counts)
            text = "".join(c.text for c in job.logs())
            self.assertIn("task 0: 1000 samples, pi ~= ", text)
            self.assertIn("task 1: 2000 samples, pi ~= ", text)
            paths = job.fetch(os.path.join(d, "out"))
            self.assertEqual(sorted(os.path.relpath(p, d) for p in paths), ["out/task-0/result.txt",
                                                                           "out/task-1/result.txt"])
            with open(paths[1]) as f:
                self.assertTrue(f.read().startswith("task=1 samples=2000 "))

    def test_an_uploaded_artifact_comes_back_verified(self):
        data = bytes(range(256)) * 5000  # over one 1 MiB chunk
        with tempfile.NamedTemporaryFile() as f:
            f.write(data)
            f.flush()
            digest = self.grid.upload(f.name)
        self.assertEqual(digest, "sha256:" + hashlib.sha256(data).hexdigest())
        self.assertEqual(read_verified(self.grid.download(digest), digest, len(data)), data)

    def test_an_image_archive_is_pushed_and_runs(self):
        archive = os.environ.get("IDLEGRID_TEST_ARCHIVE", "")
        if not archive:
            self.fail("IDLEGRID_TEST_ARCHIVE is not set: the suite passes the pi-sim archive")
        image = self.grid.push_image(archive)
        self.assertTrue(image.startswith("sha256:"), image)
        self.assertTrue(IMAGE.endswith(image), f"{IMAGE} was pushed by the CLI; the SDK's push names {image}")
        job = self.grid.map(image, [{"samples": 500}], ["{{.samples}}", "/out"], name="pushed-by-sdk")
        self.assertEqual(job.wait(progress=False).state, "SUCCEEDED")

    def test_asyncio_map_and_results(self):
        async def run():
            grid = await idlegrid.aio.connect()
            try:
                job = await grid.map(IMAGE, [{"samples": 1000}, {"samples": 3000}], ["{{.samples}}", "/out"],
                                     name="async")
                got = {}
                async for r in job.results():
                    got[r.index] = (r.item["samples"], await r.read_text("result.txt"))
                return got
            finally:
                grid.close()
        got = asyncio.run(run())
        self.assertEqual(sorted(got), [0, 1])
        self.assertEqual(got[1][0], 3000)  # the item as given, an int
        self.assertTrue(got[1][1].startswith("task=1 samples=3000 "), got[1][1])

    def test_jobs_and_nodes_are_listed(self):
        job = self.map([{"samples": 1000}], ["{{.samples}}", "/out"], name="listed")
        self.assertIn(job.id, [j.id for j in self.grid.jobs()])
        self.assertEqual(len(self.grid.nodes()), 1)
        self.assertEqual(job.wait(progress=False).state, "SUCCEEDED")

    def test_a_page_of_tasks_is_read_by_state(self):
        job = self.map([{"samples": 1000 + i} for i in range(5)], ["{{.samples}}", "/out"], gpus=1, name="paged")
        job.cancel(tasks=[1, 3])
        cancelled, matched = job.tasks(state="cancelled")
        self.assertEqual(([t.index for t in cancelled], matched), ([1, 3], 2))
        page, matched = job.tasks(state=["queued"], offset=1, limit=2)
        self.assertEqual(([t.index for t in page], matched), ([2, 4], 3))
        summary = job.status(tasks=False)
        self.assertEqual((summary.total, len(summary.job.tasks)), (5, 0))
        job.cancel()

    def test_a_job_no_node_can_take_is_explained_then_cancelled(self):
        job = self.map([{"samples": 1000}], ["{{.samples}}", "/out"], gpus=1, name="needs-gpu")
        why = job.explain()
        self.assertEqual([w.index for w in why], [0])
        self.assertEqual(why[0].state, "QUEUED")
        self.assertEqual(why[0].feasible_nodes, 0)
        self.assertEqual(why[0].total_nodes, 1)
        self.assertTrue(why[0].text.startswith(f"{job.id}/0 "), why[0].text)
        self.assertIn("waiting", why[0].text)
        job.cancel()
        final = job.wait(progress=False)
        self.assertEqual(final.state, "CANCELLED")
        results = list(job.results(progress=False))
        self.assertEqual([(r.index, r.ok, r.failure_reason) for r in results], [(0, False, "USER_CANCEL")])
        with self.assertRaises(idlegrid.TaskFailed):
            results[0].read_text("result.txt")

    def workflow_manifest(self, d, samples_b, depends="[a]"):
        path = os.path.join(d, "wf.yaml")
        step = ("  - name: {name}\n    image: " + IMAGE + "\n    command: [/sim]\n"
                "    args: [\"{samples}\", /out]\n    resources: {{cpu: 1, memory: 256Mi}}\n")
        with open(path, "w") as f:
            f.write("apiVersion: idlegrid/v1\nkind: Workflow\nname: two-steps\nsteps:\n" +
                    step.format(name="a", samples=1000) + step.format(name="b", samples=samples_b) +
                    f"    dependsOn: {depends}\n")
        return path

    def test_a_workflow_runs_its_steps_in_order_and_a_resubmission_reuses_them(self):
        with tempfile.TemporaryDirectory() as d:
            wf = self.grid.submit_manifest(self.workflow_manifest(d, 2000))
            self.assertIsInstance(wf, idlegrid.Workflow)
            done = wf.wait(timeout=240)
            self.assertTrue(done.ok, done)
            self.assertEqual(done.steps, {"a": "succeeded", "b": "succeeded"})
            self.assertEqual(done.cached, frozenset())
            self.assertIn(wf.id, [w.id for w in self.grid.workflows()])
            text = "".join(c.text for c in wf.job("b").logs())
            self.assertIn("2000 samples, pi ~= ", text)
            again = self.grid.submit_manifest(self.workflow_manifest(d, 2000)).wait(timeout=240)
            self.assertTrue(again.ok, again)
            self.assertEqual(again.cached, frozenset({"a", "b"}))
            self.assertEqual(again.jobs, done.jobs, "the same jobs, nothing run again")

    def test_a_workflow_naming_an_unknown_step_is_refused_with_its_line(self):
        with tempfile.TemporaryDirectory() as d:
            path = self.workflow_manifest(d, 2000, depends="[nope]")
            with self.assertRaises(idlegrid.InvalidArgument) as e:
                self.grid.submit_manifest(path)
        self.assertTrue(e.exception.reason.startswith(f"{path}:"), e.exception.reason)
        self.assertIn("nope", e.exception.reason)


if __name__ == "__main__":
    unittest.main()
