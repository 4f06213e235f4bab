import os
import tempfile
import unittest

import idlegrid
from idlegrid._proto import pb
from idlegrid.results import TaskResult, newly_settled, succeeded_attempt

from fakes import FakeGrid, digest_of, job, task


class SettledTest(unittest.TestCase):
    def test_only_ended_tasks_not_seen_before_in_index_order(self):
        j = job(pb.RUNNING, [task(2, pb.SUCCEEDED), task(0, pb.RUNNING), task(1, pb.FAILED), task(3, pb.CANCELLED),
                             task(4, pb.LOST), task(5, pb.QUEUED)])
        self.assertEqual([t.index for t in newly_settled(j, set())], [1, 2, 3])
        self.assertEqual([t.index for t in newly_settled(j, {2})], [1, 3])

    def test_the_result_is_the_last_succeeded_attempt(self):
        t = task(0, pb.SUCCEEDED, attempts=[pb.FAILED, pb.SUCCEEDED, pb.CANCELLED])
        self.assertEqual(succeeded_attempt(t).id, "a-0-1")
        self.assertIsNone(succeeded_attempt(task(0, pb.FAILED)))


class TaskResultTest(unittest.TestCase):
    def setUp(self):
        self.files = {"result.json": b'{"pi": 3.14}\n', "sub/index.txt": b"0\n"}
        self.grid = FakeGrid(blobs={digest_of(d): d for d in self.files.values()})
        self.result = TaskResult(task(0, pb.SUCCEEDED, self.files), {"seed": "1"}, self.grid.download)

    def test_reads_outputs_verified_and_once(self):
        self.assertEqual(self.result.read_text("result.json"), '{"pi": 3.14}\n')
        self.assertEqual(self.result.read_bytes("result.json"), b'{"pi": 3.14}\n')
        self.assertEqual(self.grid.downloads, [digest_of(self.files["result.json"])])
        self.assertEqual(self.result.item, {"seed": "1"})
        self.assertTrue(self.result.ok)

    def test_bytes_that_are_not_the_digest_are_refused(self):
        self.grid.blobs[digest_of(self.files["result.json"])] = b'{"pi": 4.00}\n'
        with self.assertRaises(idlegrid.IntegrityError) as e:
            self.result.read_bytes("result.json")
        self.assertIn(digest_of(self.files["result.json"]), e.exception.reason)

    def test_a_short_download_is_refused(self):
        self.grid.blobs[digest_of(self.files["sub/index.txt"])] = b"0"
        with self.assertRaises(idlegrid.IntegrityError):
            self.result.read_bytes("sub/index.txt")

    def test_an_unknown_output_lists_those_there_are(self):
        with self.assertRaises(idlegrid.NotFound) as e:
            self.result.read_text("missing.txt")
        self.assertIn("result.json, sub/index.txt", e.exception.reason)

    def test_a_failed_task_has_no_outputs_to_read(self):
        r = TaskResult(task(4, pb.FAILED, failure=pb.NONZERO_EXIT, message="exit code 3"), {}, self.grid.download)
        self.assertFalse(r.ok)
        with self.assertRaises(idlegrid.TaskFailed) as e:
            r.read_text("result.json")
        self.assertEqual((e.exception.index, e.exception.state, e.exception.failure_reason), (4, "FAILED", "NONZERO_EXIT"))

    def test_save_writes_every_output_and_nothing_unverified(self):
        with tempfile.TemporaryDirectory() as d:
            paths = self.result.save(d)
            self.assertEqual(sorted(os.path.relpath(p, d) for p in paths), ["result.json", "sub/index.txt"])
            with open(os.path.join(d, "sub/index.txt"), "rb") as f:
                self.assertEqual(f.read(), b"0\n")
        self.grid.blobs[digest_of(self.files["sub/index.txt"])] = b"1\n"
        with tempfile.TemporaryDirectory() as d:
            with self.assertRaises(idlegrid.IntegrityError):
                self.result.save(d)
            self.assertEqual(sorted(os.listdir(os.path.join(d, "sub"))), [], "no partial file left")

    def test_an_output_path_escaping_the_directory_is_refused(self):
        for bad in ("../x", "/etc/passwd", "a//b", "a/../../b"):
            r = TaskResult(task(0, pb.SUCCEEDED, {bad: b"x"}), {}, FakeGrid(blobs={digest_of(b"x"): b"x"}).download)
            with tempfile.TemporaryDirectory() as d, self.assertRaises(idlegrid.DataLoss):
                r.save(d)


if __name__ == "__main__":
    unittest.main()
