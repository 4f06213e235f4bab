import os
import tempfile
import unittest

import idlegrid
from idlegrid._proto import pb
from idlegrid.job import Job

from fakes import FakeGrid, digest_of, job, task

ITEMS = [{"seed": "10"}, {"seed": "20"}, {"seed": "30"}]


def out(i):
    return {"result.txt": f"seed {ITEMS[i]['seed']}\n".encode()}


class ResultsTest(unittest.TestCase):
    def test_yields_each_task_once_as_it_ends_with_its_item(self):
        updates = [
            job(pb.RUNNING, [task(0, pb.RUNNING), task(1, pb.RUNNING), task(2, pb.QUEUED)], ITEMS),
            job(pb.RUNNING, [task(0, pb.RUNNING), task(1, pb.SUCCEEDED, out(1)), task(2, pb.RUNNING)], ITEMS),
            job(pb.RUNNING, [task(0, pb.RUNNING), task(1, pb.SUCCEEDED, out(1)), task(2, pb.RUNNING)], ITEMS),
            job(pb.FAILED, [task(0, pb.FAILED, failure=pb.NONZERO_EXIT), task(1, pb.SUCCEEDED, out(1)),
                            task(2, pb.SUCCEEDED, out(2))], ITEMS),
        ]
        blobs = {digest_of(d): d for i in (1, 2) for d in out(i).values()}
        results = list(Job(FakeGrid(updates, blobs), "j-1").results(progress=False))
        self.assertEqual([(r.index, r.state) for r in results], [(1, "SUCCEEDED"), (0, "FAILED"), (2, "SUCCEEDED")])
        self.assertEqual([r.item["seed"] for r in results], ["20", "10", "30"])
        self.assertEqual(results[0].read_text("result.txt"), "seed 20\n")
        self.assertEqual(results[1].failure_reason, "NONZERO_EXIT")

    def test_a_task_left_lost_comes_last_not_ok(self):
        updates = [job(pb.LOST, [task(0, pb.LOST), task(1, pb.SUCCEEDED, out(1))], ITEMS[:2])]
        results = list(Job(FakeGrid(updates), "j-1").results(progress=False))
        self.assertEqual([(r.index, r.state, r.ok) for r in results], [(1, "SUCCEEDED", True), (0, "LOST", False)])

    def test_progress_bar_counts_ended_tasks(self):
        import io
        from unittest import mock
        updates = [job(pb.RUNNING, [task(0, pb.SUCCEEDED, out(0)), task(1, pb.RUNNING)], ITEMS[:2]),
                   job(pb.SUCCEEDED, [task(0, pb.SUCCEEDED, out(0)), task(1, pb.SUCCEEDED, out(1))], ITEMS[:2])]
        err = io.StringIO()
        with mock.patch("sys.stderr", err):
            status = Job(FakeGrid(updates), "j-1").wait(progress=True)
        self.assertEqual((status.state, status.ended, status.total, status.done), ("SUCCEEDED", 2, 2, True))
        self.assertIn("2/2", err.getvalue())
        self.assertIn("succeeded=2", err.getvalue())


class OtherCallsTest(unittest.TestCase):
    def test_tasks_reads_one_page_the_coordinator_selects(self):
        page = job(pb.RUNNING, [task(7, pb.FAILED), task(9, pb.FAILED)])
        page.tasks_paged = True
        page.tasks_matched = 40
        grid = FakeGrid(unary={"GetJob": page})
        tasks, matched = Job(grid, "j-1").tasks(state="failed", tasks=[7, 9, 11], offset=10, limit=2)
        method, request = grid.calls[-1]
        self.assertEqual(method, "GetJob")
        self.assertTrue(request.paged)
        self.assertEqual((list(request.states), list(request.task_indices)), ([pb.FAILED], [7, 9, 11]))
        self.assertEqual((request.offset, request.limit), (10, 2))
        self.assertEqual(([t.index for t in tasks], matched), ([7, 9], 40))
        with self.assertRaisesRegex(ValueError, "'sleeping': not one of"):
            Job(grid, "j-1").tasks(state=["sleeping"])

    def test_wait_watches_the_summary_and_counts_every_task(self):
        summary = pb.Job(id="j-1", state=pb.SUCCEEDED, tasks_paged=True)  # no tasks in the message
        summary.task_counts["succeeded"] = 9000
        summary.task_counts["failed"] = 1000
        grid = FakeGrid([summary])
        status = Job(grid, "j-1").wait(progress=False)
        self.assertTrue(grid.calls[-1][1].paged, "a wait never streams every task")
        self.assertEqual((status.total, status.ended, status.done), (10000, 10000, True))

    def test_cancel_some_tasks_by_index_and_state(self):
        j = job(pb.RUNNING, [task(0, pb.CANCELLED), task(1, pb.RUNNING)], ITEMS[:2])
        grid = FakeGrid(unary={"CancelJob": j})
        status = Job(grid, "j-1").cancel(tasks=[0, 3], states=["queued", "RUNNING"])
        method, request = grid.calls[-1]
        self.assertEqual(method, "CancelJob")
        self.assertEqual(list(request.task_indices), [0, 3])
        self.assertEqual(list(request.states), [pb.QUEUED, pb.RUNNING])
        self.assertEqual(status.counts, dict(j.task_counts))
        Job(grid, "j-1").cancel()
        self.assertEqual((list(grid.calls[-1][1].task_indices), list(grid.calls[-1][1].states)), ([], []))

    def test_cancel_refuses_unknown_states_and_bad_indices_before_calling(self):
        grid = FakeGrid(unary={})
        with self.assertRaisesRegex(ValueError, "'sleeping': not one of"):
            Job(grid, "j-1").cancel(states=["sleeping"])
        with self.assertRaisesRegex(ValueError, "task index -1"):
            Job(grid, "j-1").cancel(tasks=[-1])
        self.assertEqual(grid.calls, [])

    def test_retry_failed_and_named_tasks(self):
        j = job(pb.RUNNING, [task(0, pb.QUEUED), task(1, pb.SUCCEEDED, out(1))], ITEMS[:2])
        grid = FakeGrid(unary={"RetryJob": j})
        status = Job(grid, "j-1").retry()
        self.assertEqual(grid.calls[-1][0], "RetryJob")
        self.assertTrue(grid.calls[-1][1].failed)
        self.assertEqual(status.state, "RUNNING")
        Job(grid, "j-1").retry(failed=False, tasks=[1])
        self.assertFalse(grid.calls[-1][1].failed)
        self.assertEqual(list(grid.calls[-1][1].task_indices), [1])
        with self.assertRaisesRegex(ValueError, "say which tasks"):
            Job(grid, "j-1").retry(failed=False)

    def test_fetch_saves_succeeded_tasks_as_the_cli_does(self):
        j = job(pb.FAILED, [task(0, pb.SUCCEEDED, out(0)), task(1, pb.FAILED)], ITEMS[:2])
        grid = FakeGrid(blobs={digest_of(d): d for d in out(0).values()}, unary={"GetJob": j})
        with tempfile.TemporaryDirectory() as d:
            paths = Job(grid, "j-1").fetch(d)
            self.assertEqual([os.path.relpath(p, d) for p in paths], ["task-0/result.txt"])
            with open(paths[0]) as f:
                self.assertEqual(f.read(), "seed 10\n")

    def test_logs_follow_and_explain(self):
        grid = FakeGrid(logs=[pb.LogChunk(task_index=1, stream="stdout", data=b"hi\n", seq=4)],
                        unary={"ExplainJob": pb.ExplainJobResponse(job_id="j-1", tasks=[pb.TaskExplanation(
                            index=2, state=pb.QUEUED, summary="no node has a GPU", text="...", total_nodes=3)])})
        chunks = list(Job(grid, "j-1").logs(follow=True))
        self.assertEqual((chunks[0].task_index, chunks[0].text, chunks[0].seq), (1, "hi\n", 4))
        self.assertTrue(grid.calls[0][1].follow)
        why = Job(grid, "j-1").explain()
        self.assertEqual((why[0].index, why[0].state, why[0].summary, why[0].total_nodes),
                         (2, "QUEUED", "no node has a GPU", 3))

    def test_items_given_to_map_come_back_with_their_types(self):
        typed = [{"lr": 0.1, "layers": 3, "tag": "007", "warm": True}]
        done = [job(pb.SUCCEEDED, [task(0, pb.SUCCEEDED)], [{"lr": "0.1", "layers": "3", "tag": "007",
                                                            "warm": "true"}])]
        from_map = list(Job(FakeGrid(done), "j-1", typed).results(progress=False))
        self.assertEqual(from_map[0].item, {"lr": 0.1, "layers": 3, "tag": "007", "warm": True})
        by_id = list(Job(FakeGrid(done), "j-1").results(progress=False))  # read by id: the wire's strings
        self.assertEqual(by_id[0].item, {"lr": "0.1", "layers": "3", "tag": "007", "warm": "true"})

    def test_abandon_and_delete(self):
        lost = job(pb.FAILED, [task(0, pb.FAILED, failure=pb.NODE_LOST)])
        grid = FakeGrid(unary={"ResolveLost": lost, "DeleteJob": pb.DeleteJobResponse()})
        status = Job(grid, "j-1").abandon()
        self.assertEqual(status.state, "FAILED")
        self.assertEqual(grid.calls[-1][0], "ResolveLost")
        self.assertEqual((grid.calls[-1][1].job_id, grid.calls[-1][1].retry), ("j-1", False))
        Job(grid, "j-1").resolve_lost(retry=True)
        self.assertTrue(grid.calls[-1][1].retry)
        Job(grid, "j-1").delete()
        self.assertEqual((grid.calls[-1][0], grid.calls[-1][1].job_id), ("DeleteJob", "j-1"))

    def test_status_and_cancel(self):
        j = job(pb.CANCELLED, [task(0, pb.CANCELLED)])
        status = Job(FakeGrid(unary={"CancelJob": j}), "j-1").cancel()
        self.assertEqual((status.state, status.counts, status.done), ("CANCELLED", {"cancelled": 1}, True))
        self.assertIsInstance(idlegrid.Job(None, "j-9"), Job)


if __name__ == "__main__":
    unittest.main()
