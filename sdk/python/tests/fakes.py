"""Test doubles: Job and Task messages, and a Grid whose calls, streams and
downloads are canned (the SDK's logic without a coordinator)."""
import hashlib

from idlegrid._proto import pb


def digest_of(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def task(index, state, outputs=None, failure=pb.FAILURE_REASON_UNSPECIFIED, message="", attempts=None):
    t = pb.Task(job_id="j-1", index=index, state=state, failure_reason=failure, message=message)
    for a_state in attempts or ([state] if state != pb.QUEUED else []):
        t.attempts.add(id=f"a-{index}-{len(t.attempts)}", state=a_state)
    for path, data in (outputs or {}).items():
        t.attempts[-1].outputs.add(path=path, digest=digest_of(data), size=len(data))
    return t


def job(state, tasks, items=None):
    j = pb.Job(id="j-1", state=state)
    for i in items or []:
        j.spec.items.add().values.update(i)
    j.tasks.extend(tasks)
    for t in tasks:
        name = pb.TaskState.Name(t.state).lower()  # as the coordinator names them
        j.task_counts[name] = j.task_counts[name] + 1
    return j


class FakeGrid:
    """`blobs`: digest -> bytes served (corrupt them to test verification)."""

    def __init__(self, watch=(), blobs=None, logs=(), unary=None):
        self.watch = list(watch)
        self.blobs = dict(blobs or {})
        self.logs = list(logs)
        self.unary = dict(unary or {})
        self.calls = []
        self.downloads = []

    def call(self, method, request, timeout=None):
        self.calls.append((method, request))
        return self.unary[method]

    def stream(self, method, request):
        self.calls.append((method, request))
        yield from {"WatchJob": self.watch, "StreamLogs": self.logs}[method]

    def download(self, digest):
        self.downloads.append(digest)
        data = self.blobs[digest]
        half = len(data) // 2
        yield pb.ArtifactChunk(digest=digest, size=len(data), data=data[:half])
        yield pb.ArtifactChunk(data=data[half:])
