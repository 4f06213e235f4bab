"""Building a JobSpec from Python values. Pure: no I/O. The rules a spec
must follow (names, placeholders, limits) are the coordinator's alone
(src/manifest/validate.cc); here only what the wire cannot carry is refused,
and each refusal names the item at fault as the coordinator's would."""
from google.protobuf import json_format

from ._proto import pb
from .errors import InvalidArgument

API_VERSION = "idlegrid/v1"

KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30


def item_values(index, item):
    """Item `index` of an item array as the wire's string map. Values are
    scalars: str as is, bool as "true"/"false" (as a manifest writes them),
    int and float as Python prints them. InvalidArgument names the item."""
    where = f"array.items[{index}]"
    if not isinstance(item, dict):
        raise InvalidArgument(f"{where}: must be a dict of placeholder names to values, got {type(item).__name__}")
    values = {}
    for name, value in item.items():
        if not isinstance(name, str):
            raise InvalidArgument(f"{where}: key {name!r} must be a string")
        if isinstance(value, bool):
            values[name] = "true" if value else "false"
        elif isinstance(value, (str, int, float)):
            values[name] = str(value)
        else:
            raise InvalidArgument(f"{where}: the value of {name!r} must be a string, number or boolean, "
                                  f"got {type(value).__name__}")
    return values


def map_spec(image, items, args=None, *, command=None, env=None, name="map", gpus=0, gpu_memory=0,
             cpu=0.0, memory=0, output="/out", retries=0, idempotent=False, run_timeout=0,
             queue_timeout=0, inputs=None, budget=None, **fields):
    """The JobSpec of an item array: one task per entry of `items`, whose
    values fill the {{.name}} placeholders in `args` and `env` values.
    Sizes are bytes (`memory=512 * MiB`), timeouts seconds; 0 means the
    coordinator's default. `inputs` maps container paths to artifact
    digests. Any other JobSpec field may be given by its proto name
    (`max_cost=2.5`, `constraints={"gpu_models": ["H100"]}`).

    `budget` bounds what the whole job may cost: it is split evenly into each
    task's `max_cost` (budget / tasks), which the coordinator enforces over
    all of a task's attempts and, with its ledger on, escrows at submit; so
    the job never costs more, though a task cannot use another's share. Like
    max_cost it needs a `run_timeout` (to price a run before it starts)."""
    items = list(items)
    if not items:
        raise InvalidArgument("array.items: map() needs at least one item")
    if budget is not None:
        if "max_cost" in fields:
            raise InvalidArgument("budget: give budget (the whole job's) or max_cost (each task's), not both")
        if isinstance(budget, bool) or not isinstance(budget, (int, float)) or not budget > 0:
            raise InvalidArgument(f"budget: a positive number of credits, got {budget!r}")
        fields["max_cost"] = float(budget) / len(items)
    spec = pb.JobSpec(api_version=API_VERSION, name=name, image=image, command=list(command or []),
                      args=[str(a) for a in (args or [])], env={k: str(v) for k, v in (env or {}).items()},
                      output_path=output, retries=retries, idempotent=idempotent,
                      run_timeout_seconds=int(run_timeout), queue_timeout_seconds=int(queue_timeout),
                      array_count=len(items))
    spec.resources.gpus = gpus
    spec.resources.gpu_memory_bytes = int(gpu_memory)
    spec.resources.cpu = float(cpu)
    spec.resources.memory_bytes = int(memory)
    for path, digest in (inputs or {}).items():
        spec.inputs.add(artifact=digest, path=path)
    for index, item in enumerate(items):
        spec.items.add().values.update(item_values(index, item))
    if fields:
        try:
            json_format.ParseDict(fields, spec, ignore_unknown_fields=False)
        except json_format.ParseError as e:
            raise InvalidArgument(f"spec: {e}") from None
    return spec


def spec_from(value):
    """A JobSpec from a JobSpec, or from a dict in protobuf's JSON mapping
    (camelCase or proto field names), as the HTTP API takes it."""
    if isinstance(value, pb.JobSpec):
        return value
    if not isinstance(value, dict):
        raise InvalidArgument(f"spec: expected a JobSpec or a dict, got {type(value).__name__}")
    try:
        spec = json_format.ParseDict(value, pb.JobSpec())
    except json_format.ParseError as e:
        raise InvalidArgument(f"spec: {e}") from None
    if not spec.api_version:
        spec.api_version = API_VERSION
    return spec
