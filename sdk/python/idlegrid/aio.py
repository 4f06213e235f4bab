"""asyncio variants of the SDK's calls, for programs that already run an
event loop (a web service, a notebook's), so a wait or a download does not
block it:

    import idlegrid.aio
    grid = await idlegrid.aio.connect()
    job = await grid.map(image, items, args=["--seed", "{{.seed}}"])
    async for r in job.results():
        print(r.index, r.item)

Each call runs the synchronous SDK's in a worker thread (asyncio.to_thread):
the same checks, errors and verification, one gRPC channel. results()
yields each task as it ends, as the synchronous one does."""
import asyncio

from .grid import connect as _connect


async def connect(*args, **kwargs):
    """As idlegrid.connect(), returning an AsyncGrid."""
    return AsyncGrid(await asyncio.to_thread(_connect, *args, **kwargs))


class AsyncGrid:
    def __init__(self, grid):
        self.sync = grid  # the idlegrid.Grid underneath

    async def map(self, image, items, args=None, **options):
        return AsyncJob(await asyncio.to_thread(self.sync.map, image, list(items), args, **options))

    async def submit(self, spec):
        return AsyncJob(await asyncio.to_thread(self.sync.submit, spec))

    def job(self, job_id):
        return AsyncJob(self.sync.job(job_id))

    async def upload(self, path, public=False):
        return await asyncio.to_thread(self.sync.upload, path, public)

    async def push_image(self, archive, public=False):
        return await asyncio.to_thread(self.sync.push_image, archive, public)

    def close(self):
        self.sync.close()


class AsyncJob:
    def __init__(self, job):
        self.sync = job  # the idlegrid.Job underneath
        self.id = job.id

    def __repr__(self):
        return f"AsyncJob({self.id!r})"

    async def status(self):
        return await asyncio.to_thread(self.sync.status)

    async def wait(self):
        return await asyncio.to_thread(self.sync.wait, False)

    async def cancel(self, tasks=None, states=None):
        return await asyncio.to_thread(self.sync.cancel, tasks, states)

    async def retry(self, failed=True, tasks=None):
        return await asyncio.to_thread(self.sync.retry, failed, tasks)

    async def explain(self):
        return await asyncio.to_thread(self.sync.explain)

    async def fetch(self, directory):
        return await asyncio.to_thread(self.sync.fetch, directory)

    async def results(self):
        """Each task's AsyncTaskResult as it ends (an async iterator)."""
        results = iter(self.sync.results(progress=False))
        done = object()
        while True:
            r = await asyncio.to_thread(next, results, done)
            if r is done:
                return
            yield AsyncTaskResult(r)


class AsyncTaskResult:
    """A TaskResult whose outputs are downloaded (and verified) off the event
    loop; its plain fields are the sync result's (index, item, ok, state, ...)."""

    def __init__(self, result):
        self.sync = result

    def __getattr__(self, name):
        return getattr(self.sync, name)

    def __repr__(self):
        return f"Async{self.sync!r}"

    async def read_bytes(self, name):
        return await asyncio.to_thread(self.sync.read_bytes, name)

    async def read_text(self, name, encoding="utf-8"):
        return await asyncio.to_thread(self.sync.read_text, name, encoding)

    async def save(self, directory):
        return await asyncio.to_thread(self.sync.save, directory)
