"""idlegrid: the requester's Python SDK.

    import idlegrid
    grid = idlegrid.connect()   # reads the same client.yaml as the CLI
    job = grid.map("sim@sha256:...", [{"seed": s} for s in range(100)], args=["--seed", "{{.seed}}"])
    for r in job.results():
        print(r.index, r.read_text("result.json"))

See docs/sdk-python.md.
"""
from pkgutil import extend_path

# The generated protocol modules live in idlegrid.v1: inside an installed
# package, or in a separate directory on sys.path (build/gen/python/idlegrid/v1
# from the CMake target idlegrid_python_stubs), which this lets the package find.
__path__ = extend_path(__path__, __name__)

from .config import ClientConfig, resolve_config  # noqa: E402
from .errors import *  # noqa: E402,F401,F403
from .errors import IdlegridError  # noqa: E402
from .grid import Grid, connect, parse_manifest, parse_workflow_manifest  # noqa: E402
from .job import Explanation, Job, JobStatus, LogChunk  # noqa: E402
from .results import TaskResult  # noqa: E402
from .spec import GiB, KiB, MiB, item_values, map_spec  # noqa: E402
from .workflow import Workflow, WorkflowStatus  # noqa: E402

__version__ = "0.1.0"
