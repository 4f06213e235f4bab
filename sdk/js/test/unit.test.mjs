// The SDK without a grid: specs as the HTTP API takes them, errors as the
// API reports them, and downloads that resume with a Range request and keep
// nothing that does not hash to its digest -- against a local HTTP server
// that serves ranges the way the coordinator does (206, Content-Range).
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";

import { Client, IdlegridError, download, isSettled, jobQuery, mapSpec } from "../src/index.mjs";

const blob = Buffer.from(Array.from({ length: 200_000 }, (_, i) => i % 251));
const digest = `sha256:${crypto.createHash("sha256").update(blob).digest("hex")}`;
const bad = `sha256:${"0".repeat(64)}`;
let server;
let client;
const seen = [];  // each request's Range header ("" for none)
const kept = new Map();  // digest -> bytes an upload left, as the coordinator keeps them
const stored = new Map();  // digest -> uploaded blob
const puts = [];  // each PUT's Content-Range

before(async () => {
  server = http.createServer((req, res) => {
    seen.push(req.headers.range ?? "");
    if (req.headers.authorization !== "Bearer t0k") {
      res.writeHead(401, { "Content-Type": "application/json" });
      return res.end(JSON.stringify({ code: "Unauthenticated", message: "missing or unknown token" }));
    }
    const put = /^\/v1\/artifacts\/(sha256:[0-9a-f]{64})\?/.exec(req.url);
    if (req.method === "PUT" && put) return receivePiece(req, res, put[1]);
    const stat = /^\/v1\/artifacts\/(sha256:[0-9a-f]{64})\/stat$/.exec(req.url);
    if (stat) {
      res.writeHead(200, { "Content-Type": "application/json" });
      return res.end(JSON.stringify({ digest: stat[1], present: stored.has(stat[1]), partialBytes: String(kept.get(stat[1])?.length ?? 0) }));
    }
    if (req.url === `/v1/artifacts/${bad}`) {  // serves bytes that are not the digest's
      res.writeHead(200);
      return res.end(Buffer.from("not the blob"));
    }
    if (req.url !== `/v1/artifacts/${digest}`) {
      res.writeHead(404, { "Content-Type": "application/json" });
      return res.end(JSON.stringify({ code: "NotFound", message: `no artifact ${req.url}` }));
    }
    const m = /^bytes=(\d+)-$/.exec(req.headers.range ?? "");
    if (!m) {
      res.writeHead(200);
      return res.end(blob);
    }
    const from = Number(m[1]);
    res.writeHead(206, { "Content-Range": `bytes ${from}-${blob.length - 1}/${blob.length}` });
    res.end(blob.subarray(from));
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  client = new Client({ url: `http://127.0.0.1:${server.address().port}`, token: "t0k" });
});

after(() => server.close());

// PUT with Content-Range, as the coordinator takes it: a piece must start
// where the kept bytes end (409 otherwise); the last one stores the blob.
function receivePiece(req, res, digest) {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const body = Buffer.concat(chunks);
    const range = req.headers["content-range"];
    puts.push(range);
    const [, start, end, total] = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(range).map(Number);
    const have = kept.get(digest) ?? Buffer.alloc(0);
    if (start !== have.length || end - start + 1 !== body.length) {
      res.writeHead(409, { "Content-Type": "application/json" });
      return res.end(JSON.stringify({ code: "FailedPrecondition", message: `kept ${have.length}, piece starts at ${start}` }));
    }
    const now = Buffer.concat([have, body]);
    if (now.length < total) {
      kept.set(digest, now);
      res.writeHead(202);
      return res.end("{}");
    }
    kept.delete(digest);
    stored.set(digest, now);
    res.writeHead(201);
    res.end(JSON.stringify({ digest, size: String(now.length) }));
  });
}

const tmp = () => fs.mkdtempSync(path.join(os.tmpdir(), "igjs-"));

test("mapSpec makes one task per item, values as the strings the job sees", () => {
  const spec = mapSpec("sim@sha256:abc", [{ seed: 1, lr: 0.1 }, { seed: 2, lr: 0.01, tag: true }], {
    args: ["--seed", "{{.seed}}"],
    cpu: 0.5,
    memory: 256 << 20,
    fields: { maxCost: 2.5 },
  });
  assert.equal(spec.arrayCount, 2);
  assert.deepEqual(spec.items[1].values, { seed: "2", lr: "0.01", tag: "true" });
  assert.deepEqual(spec.args, ["--seed", "{{.seed}}"]);
  assert.equal(spec.resources.memoryBytes, String(256 << 20));
  assert.equal(spec.maxCost, 2.5);
  assert.throws(() => mapSpec("img", []), (e) => e instanceof IdlegridError && e.code === "InvalidArgument");
  const budgeted = mapSpec("img", [{ a: 1 }, { a: 2 }, { a: 3 }, { a: 4 }], { budget: 10, runTimeout: 60 });
  assert.equal(budgeted.maxCost, 2.5);
  assert.throws(() => mapSpec("img", [{}], { budget: 1, fields: { maxCost: 1 } }), /not both/);
  assert.throws(() => mapSpec("img", [{}], { budget: 0 }), /positive number/);
  assert.throws(() => mapSpec("img", [{ nested: { a: 1 } }]), /values are strings, numbers or booleans/);
});

test("a job is settled only when every task ended", () => {
  assert.equal(isSettled({ tasks: [{ state: "SUCCEEDED" }, { state: "FAILED" }] }), true);
  assert.equal(isSettled({ state: "FAILED", tasks: [{ state: "FAILED" }, { state: "QUEUED" }] }), false);
  assert.equal(isSettled({ tasks: [] }), false);
  // The coordinator's word, when it gives it (a summary has no tasks to look at).
  assert.equal(isSettled({ settled: true, summary: { tasks: 10000 } }), true);
  assert.equal(isSettled({ summary: { tasks: 10000 } }), false);
});

test("a paged read asks the coordinator for one page", () => {
  assert.equal(jobQuery(), "");
  assert.equal(jobQuery({ paged: true }), "?paged=1");
  assert.equal(jobQuery({ state: ["failed", "lost"], offset: 50, limit: 25 }), "?state=failed%2Clost&offset=50&limit=25");
  assert.equal(jobQuery({ tasks: [3, 7, 8], paged: true }), "?tasks=3%2C7%2C8");
  assert.equal(jobQuery({ tasks: "3,7-9" }), "?tasks=3%2C7-9");
});

test("the API's errors arrive with their code and HTTP status", async () => {
  const anonymous = new Client({ url: client.url.href, token: "" });
  await assert.rejects(anonymous.job("j-1"), (e) => e.code === "Unauthenticated" && e.status === 401);
  await assert.rejects(client.job("j-1"), (e) => e.code === "NotFound" && /no artifact|j-1/.test(e.message));
  assert.throws(() => new Client({}), /url/);
});

test("a download is verified, and an interrupted one resumes from its partial file", async () => {
  const dir = tmp();
  const whole = path.join(dir, "whole.bin");
  seen.length = 0;
  await download(client, digest, whole, blob.length);
  assert.deepEqual(fs.readFileSync(whole), blob);
  assert.deepEqual(seen, [""]);

  const resumed = path.join(dir, "sub", "resumed.bin");
  fs.mkdirSync(path.dirname(resumed));
  fs.writeFileSync(`${resumed}.part`, blob.subarray(0, 70_000));  // what an interrupted call left
  seen.length = 0;
  await download(client, digest, resumed, blob.length);
  assert.deepEqual(seen, ["bytes=70000-"]);
  assert.deepEqual(fs.readFileSync(resumed), blob);
  assert.equal(fs.existsSync(`${resumed}.part`), false);

  seen.length = 0;
  await download(client, digest, resumed, blob.length);  // already here: nothing asked
  assert.deepEqual(seen, []);
});

test("bytes that do not hash to the digest are removed, never kept", async () => {
  const target = path.join(tmp(), "bad.bin");
  await assert.rejects(download(client, bad, target), (e) => e.code === "DataLoss");
  assert.equal(fs.existsSync(target), false);
  assert.equal(fs.existsSync(`${target}.part`), false);
  await assert.rejects(download(client, "sha256:xyz", target), (e) => e.code === "InvalidArgument");
  const missing = `sha256:${"1".repeat(64)}`;
  await assert.rejects(download(client, missing, target), (e) => e.code === "NotFound" && e.status === 404);
  assert.equal(fs.existsSync(`${target}.part`), false);
});

test("results() refuses an output path that would leave its directory", async () => {
  const job = {
    tasks: [{ index: 0, state: "SUCCEEDED", attempts: [{ state: "SUCCEEDED", outputs: [{ path: "../../etc/x", digest, size: String(blob.length) }] }] }],
  };
  await assert.rejects(client.results(job, tmp()), /not a relative path inside/);
});

test("an upload goes in pieces, and an interrupted one on from the kept bytes", async () => {
  const file = path.join(tmp(), "input.bin");
  fs.writeFileSync(file, blob.subarray(0, 100_000));
  const want = `sha256:${crypto.createHash("sha256").update(blob.subarray(0, 100_000)).digest("hex")}`;
  kept.set(want, blob.subarray(0, 45_000));  // what an interrupted upload left
  puts.length = 0;
  const ref = await client.upload(file, { pieceBytes: 30_000 });
  assert.deepEqual(ref, { digest: want, size: 100_000 });
  assert.deepEqual(puts, ["bytes 45000-74999/100000", "bytes 75000-99999/100000"]);
  assert.deepEqual(stored.get(want), blob.subarray(0, 100_000));
  puts.length = 0;
  await client.upload(file);  // already stored: nothing sent
  assert.deepEqual(puts, []);
  const empty = path.join(tmp(), "empty.bin");
  fs.writeFileSync(empty, "");
  await assert.rejects(client.upload(empty), (e) => e.code === "InvalidArgument");
});
