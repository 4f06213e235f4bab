// Job specs in the protobuf JSON form the HTTP API takes (camelCase), and
// what "settled" means. Pure.
import { IdlegridError } from "./errors.mjs";

export const TERMINAL_STATES = new Set(["SUCCEEDED", "FAILED", "CANCELLED"]);

// The spec of an item array: one task per item, whose values fill the
// {{.name}} placeholders in `args` and `env` values. Item values are sent
// as the strings the job sees (numbers and booleans as JSON writes them).
// Sizes are bytes, timeouts seconds; other JobSpec fields go in `fields`
// by their JSON names (e.g. { maxCost: 2.5 }). `budget` bounds the whole
// job's cost: split evenly into each task's maxCost (budget / tasks), which
// the coordinator enforces (and escrows with its ledger on); it needs a
// runTimeout, as maxCost does.
export function mapSpec(image, items, options = {}) {
  if (!Array.isArray(items) || items.length === 0) {
    throw new IdlegridError("InvalidArgument", "array.items: mapSpec() needs at least one item");
  }
  const { budget } = options;
  if (budget !== undefined) {
    if (options.fields?.maxCost !== undefined) {
      throw new IdlegridError("InvalidArgument", "budget: give budget (the whole job's) or fields.maxCost (each task's), not both");
    }
    if (typeof budget !== "number" || !(budget > 0)) {
      throw new IdlegridError("InvalidArgument", `budget: a positive number of credits, got ${JSON.stringify(budget)}`);
    }
  }
  const { args = [], command = [], env = {}, name = "map", cpu = 0, memory = 0, gpus = 0, gpuMemory = 0,
          output = "/out", retries = 0, runTimeout = 0, fields = {} } = options;
  const spec = {
    apiVersion: "idlegrid/v1",
    name,
    image,
    command: command.map(String),
    args: args.map(String),
    env: Object.fromEntries(Object.entries(env).map(([k, v]) => [k, String(v)])),
    outputPath: output,
    retries,
    runTimeoutSeconds: runTimeout,
    arrayCount: items.length,
    resources: { cpu, memoryBytes: String(memory), gpus, gpuMemoryBytes: String(gpuMemory) },
    items: items.map((item, i) => ({ values: itemValues(i, item) })),
    ...fields,
  };
  if (budget !== undefined) spec.maxCost = budget / items.length;
  return spec;
}

function itemValues(index, item) {
  if (item === null || typeof item !== "object" || Array.isArray(item)) {
    throw new IdlegridError("InvalidArgument", `array.items[${index}]: an item is an object of values`);
  }
  const out = {};
  for (const [k, v] of Object.entries(item)) {
    if (v !== null && typeof v === "object") {
      throw new IdlegridError("InvalidArgument", `array.items[${index}].${k}: values are strings, numbers or booleans`);
    }
    out[k] = String(v);
  }
  return out;
}

// Settled: every task ended (a job's state alone may say FAILED while
// retries are still queued). The coordinator says so (`settled`, which also
// counts a job whose LOST tasks await a decision); an older one did not, and
// then every task is looked at.
export function isSettled(job) {
  if (job.settled !== undefined || job.summary !== undefined) return job.settled === true;
  const tasks = job.tasks ?? [];
  return tasks.length > 0 && tasks.every((t) => TERMINAL_STATES.has(t.state));
}
