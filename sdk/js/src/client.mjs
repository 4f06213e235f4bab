// The coordinator's HTTPS/JSON API (docs/dashboard.md lists the routes).
// Requests go through node:https, not fetch: Node's fetch cannot be given a
// CA per request without the undici package, and a coordinator's API is
// served under its own CA (the client.yaml's caFile).
import fs from "node:fs";
import http from "node:http";
import https from "node:https";

import { download, hashFile } from "./download.mjs";
import { IdlegridError, errorOf } from "./errors.mjs";
import { isSettled } from "./spec.mjs";

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
// Upload pieces: under the API's 16 MiB request limit.
const PIECE_BYTES = 8 << 20;


export class Client {
  // `url`: "https://host:port" of the coordinator's HTTPS API; `token`: an
  // API token; `ca`: the CA's PEM (or `caFile`, its path) when the server's
  // certificate is not signed by a public CA.
  constructor({ url, token, ca, caFile } = {}) {
    if (!url) throw new IdlegridError("InvalidArgument", "url: the coordinator's HTTPS API address is required");
    this.url = new URL(url);
    this.token = token ?? "";
    this.ca = ca ?? (caFile ? fs.readFileSync(caFile, "utf8") : undefined);
  }

  // One request; resolves to the parsed JSON body, rejects with an
  // IdlegridError carrying the API's code and message.
  async request(method, path, body) {
    const res = await this.raw(method, path, body === undefined ? undefined : JSON.stringify(body));
    if (res.status >= 400) throw errorOf(res, `${method} ${path}`);
    const text = res.body.toString("utf8");
    try {
      return text ? JSON.parse(text) : {};
    } catch {
      throw new IdlegridError("Internal", `${method} ${path}: not JSON (HTTP ${res.status}): ${text.slice(0, 200)}`, res.status);
    }
  }

  // The response as bytes: { status, headers, body }. `headers` are added
  // to the request's; `sink(chunk, status)`, when given, receives the body's
  // chunks instead, unless it returns false for one (that chunk is kept in body).
  raw(method, path, body, headers = {}, sink = null, bytes = null) {
    const lib = this.url.protocol === "http:" ? http : https;
    const options = {
      method,
      hostname: this.url.hostname,
      port: this.url.port,
      path,
      headers: { ...headers, ...(this.token ? { Authorization: `Bearer ${this.token}` } : {}) },
      ...(this.ca ? { ca: this.ca } : {}),
    };
    if (body !== undefined) options.headers["Content-Type"] = "application/json";
    if (bytes) options.headers["Content-Length"] = bytes.length;
    return new Promise((resolve, reject) => {
      const req = lib.request(options, (res) => {
        const chunks = [];
        res.on("data", (c) => {
          if (!sink || sink(c, res.statusCode) === false) chunks.push(c);
        });
        res.on("end", () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }));
        res.on("error", reject);
      });
      req.on("error", (e) => reject(new IdlegridError("Unavailable", `${method} ${path}: ${e.message}`)));
      if (body !== undefined) req.write(body);
      if (bytes) req.write(bytes);
      req.end();
    });
  }

  // --- jobs ---
  async submit(spec) {
    return (await this.request("POST", "/v1/jobs", { spec })).job;
  }
  // The job with every task; with any of `state` ("failed" or a list),
  // `tasks` ("3,7-9" or a list of indices), `offset`, `limit` (at most 1000),
  // one page of the tasks the coordinator selects (`tasksMatched` says how
  // many matched); `{ paged: true }` alone: counts and summary, no tasks.
  job(id, { state, tasks, offset, limit, paged } = {}) {
    return this.request("GET", `/v1/jobs/${encodeURIComponent(id)}${jobQuery({ state, tasks, offset, limit, paged })}`);
  }
  // One page of the job's tasks: { tasks, matched } (see job()).
  async tasks(id, { state, tasks, offset = 0, limit = 50 } = {}) {
    const page = await this.job(id, { state, tasks, offset, limit });
    return { tasks: page.tasks ?? [], matched: Number(page.tasksMatched ?? 0) };
  }
  async jobs() {
    return (await this.request("GET", "/v1/jobs")).jobs ?? [];
  }
  explain(id) {
    return this.request("GET", `/v1/jobs/${encodeURIComponent(id)}/explain`);
  }
  // The whole job, or only `tasks` (indices) and/or tasks in `states` ("QUEUED", ...).
  cancel(id, { tasks = [], states = [] } = {}) {
    return this.request("POST", `/v1/jobs/${encodeURIComponent(id)}/cancel`, { taskIndices: tasks, states });
  }
  // Every failed task (`failed`), or the listed failed or cancelled `tasks`.
  retry(id, { failed = false, tasks = [] } = {}) {
    return this.request("POST", `/v1/jobs/${encodeURIComponent(id)}/retry`, { failed, taskIndices: tasks });
  }
  delete(id) {
    return this.request("DELETE", `/v1/jobs/${encodeURIComponent(id)}`);
  }
  // Log chunks after the cursor `after` ({ taskIndex, stream, text, seq }),
  // of `task` and `stream` ("stdout" or "stderr") when given, and the cursor
  // to ask from next.
  async logs(id, { after = 0, task, stream } = {}) {
    let query = `?after=${after}`;
    if (task !== undefined) query += `&task=${Number(task)}`;
    if (stream !== undefined) query += `&stream=${encodeURIComponent(stream)}`;
    const r = await this.request("GET", `/v1/jobs/${encodeURIComponent(id)}/logs${query}`);
    const chunks = (r.chunks ?? []).map((c) => ({
      taskIndex: c.taskIndex ?? 0,
      stream: c.stream ?? "stdout",
      text: Buffer.from(c.data ?? "", "base64").toString("utf8"),
      seq: Number(c.seq ?? 0),
    }));
    return { chunks, next: Number(r.next ?? after) };
  }

  // Uploads a file as an artifact (an input for jobs), in pieces of
  // `pieceBytes` (8 MiB at most), each a PUT with its Content-Range; an
  // interrupted upload goes on from what the coordinator kept. Resolves to
  // { digest, size }.
  async upload(file, { makePublic = false, kind = "input", pieceBytes = PIECE_BYTES } = {}) {
    pieceBytes = Math.max(1, Math.min(pieceBytes, PIECE_BYTES));
    const digest = await hashFile(file);
    const size = fs.statSync(file).size;
    if (size === 0) throw new IdlegridError("InvalidArgument", `${file} is empty: an artifact has at least one byte`);
    const base = `/v1/artifacts/${digest}`;
    const stat = await this.request("GET", `${base}/stat`);
    if (stat.present) return { digest, size };
    const query = `?kind=${encodeURIComponent(kind)}${makePublic ? "&public=true" : ""}`;
    const fd = fs.openSync(file, "r");
    try {
      let offset = Number(stat.partialBytes ?? 0);
      do {
        const piece = Buffer.alloc(Math.min(pieceBytes, size - offset));
        fs.readSync(fd, piece, 0, piece.length, offset);
        const headers = { "Content-Type": "application/octet-stream",
                          "Content-Range": `bytes ${offset}-${offset + piece.length - 1}/${size}` };
        const res = await this.raw("PUT", base + query, undefined, headers, null, piece);
        if (res.status >= 400) throw errorOf(res, `PUT ${digest}`);
        offset += piece.length;
      } while (offset < size);
    } finally {
      fs.closeSync(fd);
    }
    return { digest, size };
  }

  // Pushes an OCI image archive (`podman save --format oci-archive`,
  // `idlegrid image build`) as an artifact and registers it (POST
  // /v1/images); resolves to the image to name in a spec ("sha256:...").
  async pushImage(archive, { makePublic = false } = {}) {
    const { digest } = await this.upload(archive, { makePublic, kind: "image" });
    return (await this.request("POST", "/v1/images", { archiveDigest: digest })).image;
  }

  // Polls the job's counts and summary (never its tasks, however many)
  // until it settles; `onUpdate(job)` sees each one read. Resolves to the
  // settled job with every task (what results() reads).
  async wait(id, { intervalMs = 500, timeoutMs = 0, onUpdate = null } = {}) {
    const deadline = timeoutMs > 0 ? Date.now() + timeoutMs : Infinity;
    for (;;) {
      const summary = await this.job(id, { paged: true });
      if (onUpdate) onUpdate(summary);
      if (isSettled(summary)) return this.job(id);
      if (Date.now() >= deadline) throw new IdlegridError("DeadlineExceeded", `job ${id} did not settle in ${timeoutMs} ms`);
      await sleep(intervalMs);
    }
  }

  // Downloads the outputs of each succeeded task into dir/task-N/, each file
  // checked against its digest (a partial file from an interrupted call is
  // resumed). Returns [{ index, files: [paths] }] in task order.
  async results(job, dir) {
    const out = [];
    for (const task of job.tasks ?? []) {
      if (task.state !== "SUCCEEDED") continue;
      const attempt = [...(task.attempts ?? [])].reverse().find((a) => a.state === "SUCCEEDED");
      if (!attempt) continue;
      const index = task.index ?? 0;
      const files = [];
      for (const o of attempt.outputs ?? []) {
        const target = safeJoin(`${dir}/task-${index}`, o.path);
        await download(this, o.digest, target, Number(o.size ?? 0));
        files.push(target);
      }
      out.push({ index, files });
    }
    return out;
  }
}

// The query string of a paged job read ("" for the whole job).
export function jobQuery({ state, tasks, offset, limit, paged } = {}) {
  const parts = [];
  const list = (v) => (Array.isArray(v) ? v.join(",") : String(v));
  if (state !== undefined) parts.push(`state=${encodeURIComponent(list(state))}`);
  if (tasks !== undefined) parts.push(`tasks=${encodeURIComponent(list(tasks))}`);
  if (offset !== undefined) parts.push(`offset=${Number(offset)}`);
  if (limit !== undefined) parts.push(`limit=${Number(limit)}`);
  if (paged && parts.length === 0) parts.push("paged=1");
  return parts.length ? `?${parts.join("&")}` : "";
}

// dir/rel, refusing a path that would leave dir (an output path is the
// job's to choose: never trusted to name a place outside).
function safeJoin(dir, rel) {
  const parts = String(rel).split("/").filter((p) => p !== "" && p !== ".");
  if (parts.length === 0 || parts.includes("..")) {
    throw new IdlegridError("InvalidArgument", `output path '${rel}' is not a relative path inside the output directory`);
  }
  return `${dir}/${parts.join("/")}`;
}

// A client from the environment: IDLEGRID_URL, IDLEGRID_TOKEN and
// IDLEGRID_CA_FILE, each overridden by `options`.
export function connect(options = {}) {
  return new Client({
    url: options.url ?? process.env.IDLEGRID_URL,
    token: options.token ?? process.env.IDLEGRID_TOKEN,
    ca: options.ca,
    caFile: options.caFile ?? process.env.IDLEGRID_CA_FILE,
  });
}
