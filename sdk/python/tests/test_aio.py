"""idlegrid.aio over the canned grid: results arrive as tasks end, and their
outputs are downloaded off the event loop's thread and verified; wait and
cancel answer as the sync SDK does."""
import threading
import unittest

from idlegrid import aio
from idlegrid._proto import pb
from idlegrid.errors import DataLoss
from idlegrid.job import Job

from fakes import FakeGrid, digest_of, job, task

ITEMS = [{"seed": "1"}, {"seed": "2"}]
OUT = {0: {"r.txt": b"one\n"}, 1: {"r.txt": b"two\n"}}


def updates():
    return [
        job(pb.RUNNING, [task(0, pb.RUNNING), task(1, pb.RUNNING)], ITEMS),
        job(pb.RUNNING, [task(0, pb.SUCCEEDED, OUT[0]), task(1, pb.RUNNING)], ITEMS),
        job(pb.SUCCEEDED, [task(0, pb.SUCCEEDED, OUT[0]), task(1, pb.SUCCEEDED, OUT[1])], ITEMS),
    ]


class AioTest(unittest.IsolatedAsyncioTestCase):
    async def test_results_arrive_as_tasks_end_and_outputs_are_verified(self):
        blobs = {digest_of(d): d for o in OUT.values() for d in o.values()}
        grid = FakeGrid(updates(), blobs)
        threads = []
        serve = grid.download

        def download(digest):
            threads.append(threading.get_ident())
            yield from serve(digest)

        grid.download = download
        got = []
        async for r in aio.AsyncJob(Job(grid, "j-1")).results():
            got.append((r.index, r.item["seed"], await r.read_text("r.txt")))
        self.assertEqual(got, [(0, "1", "one\n"), (1, "2", "two\n")])
        self.assertEqual(len(threads), 2)
        self.assertNotIn(threading.get_ident(), threads, "an output was downloaded on the event loop's thread")

        corrupt = {digest_of(OUT[0]["r.txt"]): b"tampered", digest_of(OUT[1]["r.txt"]): OUT[1]["r.txt"]}
        first = await aio.AsyncJob(Job(FakeGrid(updates(), corrupt), "j-1")).results().__anext__()
        with self.assertRaises(DataLoss):
            await first.read_bytes("r.txt")

    async def test_wait_and_cancel(self):
        done = job(pb.SUCCEEDED, [task(0, pb.SUCCEEDED)])
        status = await aio.AsyncJob(Job(FakeGrid([done]), "j-1")).wait()
        self.assertEqual(status.state, "SUCCEEDED")
        cancelled = job(pb.CANCELLED, [task(0, pb.CANCELLED)])
        grid = FakeGrid(unary={"CancelJob": cancelled})
        status = await aio.AsyncJob(Job(grid, "j-1")).cancel(tasks=[0])
        self.assertEqual(status.state, "CANCELLED")
        self.assertEqual(list(grid.calls[-1][1].task_indices), [0])


if __name__ == "__main__":
    unittest.main()
