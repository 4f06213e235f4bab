"""The connection to a coordinator's RequesterService over TLS, pinned to
the coordinator's own CA, authenticated by an API token."""
import hashlib
import json
import os
import shutil
import subprocess

import grpc
from google.protobuf import json_format

from ._proto import pb, pb_grpc
from .config import resolve_config
from .errors import ConfigError, IdlegridError, InvalidArgument, from_rpc_error
from .job import Job
from .spec import map_spec, spec_from
from .workflow import Workflow

# The coordinator's certificate names this host, whatever address it is
# reached at (the CLI does the same: src/cli/client.cc).
_SERVER_NAME = "idlegrid-coordinator"
_MAX_MESSAGE = 64 << 20
_CHUNK = 1 << 20
_DEFAULT_TIMEOUT = object()  # the Grid's own timeout (None means none)


def connect(address=None, ca_file=None, token=None, config_file=None, timeout=30.0):
    """A Grid for the coordinator the CLI would use: explicit values, then
    IDLEGRID_ADDR / IDLEGRID_CA_FILE / IDLEGRID_TOKEN, then $IDLEGRID_CONFIG
    or ~/.config/idlegrid/config.yaml (a coordinator's DATA_DIR/client.yaml
    works as is). `timeout`: seconds for each unary call. Raises ConfigError
    when something is missing or the CA file cannot be read; nothing is
    dialled until the first call."""
    config = resolve_config(address, ca_file, token, config_file)
    try:
        with open(config.ca_file, "rb") as f:
            ca = f.read()
    except OSError as e:
        raise ConfigError(f"CA file {config.ca_file}: {e.strerror}") from None
    credentials = grpc.composite_channel_credentials(
        grpc.ssl_channel_credentials(root_certificates=ca), grpc.access_token_call_credentials(config.token))
    channel = grpc.secure_channel(config.address, credentials, options=[
        ("grpc.ssl_target_name_override", _SERVER_NAME),
        ("grpc.max_receive_message_length", _MAX_MESSAGE),
    ])
    grid = Grid(channel, timeout)
    # What the CLI needs to reach the same coordinator (build_image runs it).
    grid._cli_env = {"IDLEGRID_ADDR": config.address, "IDLEGRID_CA_FILE": config.ca_file,
                     "IDLEGRID_TOKEN": config.token}
    return grid


class Grid:
    """A requester's handle on one coordinator. Safe to share between
    threads (gRPC channels are); close() or use as a context manager."""

    def __init__(self, channel, timeout=30.0):
        self._channel = channel
        self._stub = pb_grpc.RequesterServiceStub(channel)
        self.timeout = timeout
        self._cli_env = {}  # connect() fills it: the CLI then reaches this coordinator

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self._channel.close()

    # --- jobs ---------------------------------------------------------------

    def map(self, image, items, args=None, **options):
        """Submits an item array: one task of `image` per entry of `items`
        (dicts), each task's {{.name}} placeholders in `args` and `env`
        filled from its item. Options as spec.map_spec (gpus, cpu, memory,
        env, command, name, retries, ...). Returns the Job. The coordinator
        checks every item at submit: InvalidArgument naming the item
        ("array.items[3]"; also e.item_index) for one that lacks a value,
        FailedPrecondition naming the image when it was never pushed."""
        items = list(items)
        job = self.submit(map_spec(image, items, args, **options))
        return Job(self, job.id, items)  # results give back each item as given (0.1, not "0.1")

    def submit(self, spec):
        """Submits a JobSpec (or a dict in protobuf's JSON mapping); returns the Job."""
        response = self.call("SubmitJob", pb.SubmitJobRequest(spec=spec_from(spec)))
        return Job(self, response.job.id)

    def submit_manifest(self, path, idlegrid_bin=None):
        """Submits a YAML manifest: a job (docs/manifest.md; returns the Job)
        or a `kind: Workflow` (docs/workflows.md; returns the Workflow). It
        is parsed by the one manifest parser there is, the CLI's (`idlegrid
        validate FILE --json`, from $IDLEGRID_BIN or PATH), so errors carry
        its file:line:col; the spec it prints is submitted here."""
        spec = _parse(path, idlegrid_bin)
        if isinstance(spec, pb.WorkflowSpec):
            return self.submit_workflow(spec)
        return self.submit(spec)

    def submit_workflow(self, spec):
        """Submits a WorkflowSpec (or a workflow manifest's path); returns
        the Workflow. Steps whose cache key matches an earlier succeeded run
        of this account are reused, not run (docs/workflows.md)."""
        if not isinstance(spec, pb.WorkflowSpec):
            spec = parse_workflow_manifest(spec)
        response = self.call("SubmitWorkflow", pb.SubmitWorkflowRequest(spec=spec))
        return Workflow(self, response.id)

    def workflow(self, workflow_id):
        """A handle on an existing workflow ("w-..."; nothing is checked until used)."""
        return Workflow(self, workflow_id)

    def workflows(self):
        """The workflows this token may see, as handles."""
        return [Workflow(self, w.id) for w in self.call("ListWorkflows", pb.ListWorkflowsRequest()).workflows]

    def job(self, job_id):
        """A handle on an existing job (nothing is checked until used)."""
        return Job(self, job_id)

    def jobs(self):
        """The jobs this token may see, as handles."""
        return [Job(self, j.id) for j in self.call("ListJobs", pb.ListJobsRequest()).jobs]

    def nodes(self):
        """The fleet as the coordinator accounts it (Node messages)."""
        return list(self.call("ListNodes", pb.ListNodesRequest()).nodes)

    # --- artifacts ----------------------------------------------------------

    def upload(self, path, public=False, kind="input"):
        """Uploads a file as an input artifact; returns its "sha256:" digest,
        which the coordinator has verified (map(..., inputs={"/in": digest}))."""
        digest = "sha256:" + _sha256_file(path)
        size = os.path.getsize(path)

        def chunks():
            with open(path, "rb") as f:
                first = pb.ArtifactChunk(digest=digest, size=size, kind=kind, public=public)
                while True:
                    data = f.read(_CHUNK)
                    if first is not None:
                        first.data = data
                        yield first
                        first = None
                    elif data:
                        yield pb.ArtifactChunk(data=data)
                    if not data:
                        return
        ref = self.call("UploadArtifact", chunks(), timeout=None)
        return ref.digest

    def push_image(self, archive, public=False):
        """Pushes an OCI image archive (`podman save --format oci-archive`,
        `idlegrid image build`) as one artifact and registers it, as `idlegrid
        image push` does with a coordinator that takes whole archives; returns
        the image to name in a spec ("sha256:<manifest digest>"). The
        coordinator reads the archive and refuses one that is not an image.
        (The CLI's push moves only the layers the coordinator lacks.)"""
        digest = self.upload(archive, public=public, kind="image")
        return self.call("RegisterImage", pb.RegisterImageRequest(archive_digest=digest)).image

    def build_image(self, context, file=None, name=None, allow_network=False, public=False, idlegrid_bin=None):
        """Builds the directory `context` (its Containerfile or Dockerfile,
        or `file`) with podman and pushes it to this coordinator, as `idlegrid
        image build` does (the CLI, from $IDLEGRID_BIN or PATH): RUN steps
        without a network unless `allow_network`, no base image pulled (make
        one with `idlegrid image base` or `podman import`). Returns the image
        to name in a spec ("NAME@sha256:..." with `name`, else "sha256:...").
        A build that fails raises with podman's own words."""
        argv = [_cli(idlegrid_bin), "image", "build", str(context)]
        if file is not None:
            argv += ["--file", str(file)]
        if name is not None:
            argv += ["--name", str(name)]
        if allow_network:
            argv.append("--allow-network")
        if public:
            argv.append("--public")
        run = subprocess.run(argv, capture_output=True, text=True, check=False, env={**os.environ, **self._cli_env})
        if run.returncode != 0:
            reason = run.stderr.strip().removeprefix("error: ") or f"{argv[0]} image build failed"
            raise (InvalidArgument if run.returncode == 2 else IdlegridError)(reason)
        lines = run.stdout.strip().splitlines()
        if not lines:
            raise IdlegridError(f"{argv[0]} image build printed no image")
        return lines[-1].strip()

    def download(self, digest):
        """The DownloadArtifact stream of `digest` (unverified chunks: see
        artifacts.read_verified / save_verified)."""
        return self.stream("DownloadArtifact", pb.DownloadArtifactRequest(digest=digest))

    # --- calls --------------------------------------------------------------

    def call(self, method, request, timeout=_DEFAULT_TIMEOUT):
        """A unary (or client-streaming) call; typed errors with the server's reason."""
        if timeout is _DEFAULT_TIMEOUT:
            timeout = self.timeout
        try:
            return getattr(self._stub, method)(request, timeout=timeout)
        except grpc.RpcError as e:
            raise from_rpc_error(e) from None

    def stream(self, method, request):
        """A server stream's messages; typed errors; cancelled if the caller stops early."""
        call = getattr(self._stub, method)(request)
        try:
            yield from call
        except grpc.RpcError as e:
            raise from_rpc_error(e) from None
        finally:
            call.cancel()


def parse_manifest(path, idlegrid_bin=None):
    """The JobSpec of a manifest file, as `idlegrid validate --json` parses it.
    InvalidArgument with the parser's file:line:col message when it is wrong."""
    spec = _parse(path, idlegrid_bin)
    if not isinstance(spec, pb.JobSpec):
        raise InvalidArgument(f"{path} is a workflow (kind: Workflow), not a job: use submit_workflow")
    return spec


def parse_workflow_manifest(path, idlegrid_bin=None):
    """The WorkflowSpec of a `kind: Workflow` manifest file, as `idlegrid
    validate --json` parses it (graph errors name the line and the field)."""
    spec = _parse(path, idlegrid_bin)
    if not isinstance(spec, pb.WorkflowSpec):
        raise InvalidArgument(f"{path} is a job manifest, not a workflow (it has no kind: Workflow)")
    return spec


def _cli(idlegrid_bin):
    """The idlegrid CLI: the one given, else $IDLEGRID_BIN, else on PATH."""
    binary = idlegrid_bin or os.environ.get("IDLEGRID_BIN") or shutil.which("idlegrid")
    if not binary:
        raise ConfigError("this needs the idlegrid CLI (its manifest parser, its image build): "
                          "put it on PATH or set IDLEGRID_BIN")
    return binary


def _parse(path, idlegrid_bin):
    """A JobSpec or WorkflowSpec: whichever the CLI's parser printed."""
    binary = _cli(idlegrid_bin)
    run = subprocess.run([binary, "validate", str(path), "--json"], capture_output=True, text=True, check=False)
    if run.returncode != 0:
        raise InvalidArgument(run.stderr.strip().removeprefix("error: ") or f"{binary} validate failed")
    parsed = json.loads(run.stdout)
    kind = pb.WorkflowSpec if "steps" in parsed else pb.JobSpec
    return json_format.ParseDict(parsed, kind())


def _sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(_CHUNK), b""):
            h.update(block)
    return h.hexdigest()


__all__ = ["Grid", "connect", "parse_manifest", "parse_workflow_manifest"]
