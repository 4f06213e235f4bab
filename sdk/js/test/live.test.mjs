// The SDK against a real coordinator and agent (run by tests/e2e/
// sdk_js_e2e_test.cc, which starts them and sets IDLEGRID_URL, IDLEGRID_TOKEN,
// IDLEGRID_CA_FILE and IDLEGRID_TEST_IMAGE). Without IDLEGRID_URL every test
// here is skipped, saying why.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";

import { connect, mapSpec } from "../src/index.mjs";

const live = process.env.IDLEGRID_URL ? false : "IDLEGRID_URL is not set: no grid to run against";
const image = process.env.IDLEGRID_TEST_IMAGE;
const archive = process.env.IDLEGRID_TEST_ARCHIVE;  // the same image as an OCI archive

test("an item array runs, and its outputs arrive verified", { skip: live }, async () => {
  const grid = connect();
  const job = await grid.submit(mapSpec(image, [{ word: "alpha" }, { word: "beta" }, { word: 7 }], {
    command: ["/sim"],
    args: ["write", "{{.word}}"],
    cpu: 0.25,
    memory: 64 << 20,
    name: "js-map",
  }));
  assert.match(job.id, /^j-/);
  const seen = [];
  const done = await grid.wait(job.id, { intervalMs: 200, timeoutMs: 120_000, onUpdate: (j) => seen.push(j.state) });
  assert.ok(seen.length >= 1);
  assert.deepEqual(done.tasks.map((t) => t.state), ["SUCCEEDED", "SUCCEEDED", "SUCCEEDED"]);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "igjs-live-"));
  const results = await grid.results(done, dir);
  assert.deepEqual(results.map((r) => r.index), [0, 1, 2]);
  const words = ["alpha", "beta", "7"];
  for (const r of results) {
    assert.equal(fs.readFileSync(path.join(dir, `task-${r.index}`, "hello.txt"), "utf8"), `${words[r.index]} from task ${r.index}\n`);
    assert.equal(fs.readFileSync(path.join(dir, `task-${r.index}`, "sub", "index.txt"), "utf8"), `${r.index}\n`);
  }
  const logs = await grid.logs(job.id);
  const lines = logs.chunks.map((c) => `${c.taskIndex}:${c.text.trim()}`).sort();
  assert.deepEqual(lines, ["0:task 0 wrote its outputs", "1:task 1 wrote its outputs", "2:task 2 wrote its outputs"]);
  assert.ok((await grid.jobs()).some((j) => j.id === job.id));
});

test("an image archive pushed over HTTPS is one a job can name", { skip: live }, async () => {
  const grid = connect();
  const pushed = await grid.pushImage(archive);
  assert.match(pushed, /^sha256:[0-9a-f]{64}$/);
  const job = await grid.submit(mapSpec(pushed, [{ n: 1 }], { command: ["/sim"], args: ["write", "{{.n}}"], name: "js-pushed" }));
  const done = await grid.wait(job.id, { intervalMs: 200, timeoutMs: 120_000 });
  assert.deepEqual(done.tasks.map((t) => t.state), ["SUCCEEDED"]);
});

test("a job nothing can run waits, says why, and is cancelled then retried", { skip: live }, async () => {
  const grid = connect();
  const job = await grid.submit(mapSpec(image, [{ n: 1 }, { n: 2 }], {
    command: ["/sim"],
    args: ["write", "{{.n}}"],
    name: "js-waits",
    fields: { constraints: { regions: ["nowhere"] } },
  }));
  const why = await grid.explain(job.id);
  assert.equal(why.tasks.length, 2);
  assert.match(why.tasks[0].text, /region/);
  await grid.cancel(job.id, { tasks: [1] });
  let now = await grid.job(job.id);
  assert.deepEqual(now.tasks.map((t) => t.state), ["QUEUED", "CANCELLED"]);
  const page = await grid.tasks(job.id, { state: "cancelled" });
  assert.deepEqual([page.tasks.map((t) => t.index ?? 0), page.matched], [[1], 1]);
  const summary = await grid.job(job.id, { paged: true });
  assert.equal(summary.tasks, undefined);
  assert.equal(summary.summary.tasks, 2);
  await grid.retry(job.id, { tasks: [1] });
  now = await grid.job(job.id);
  assert.equal(now.tasks[1].state, "QUEUED");
  await grid.cancel(job.id);
  now = await grid.wait(job.id, { intervalMs: 100, timeoutMs: 30_000 });
  assert.deepEqual(now.tasks.map((t) => t.state), ["CANCELLED", "CANCELLED"]);
  await assert.rejects(grid.job("j-does-not-exist"), (e) => e.code === "NotFound" && e.status === 404);
});

test("an uploaded file is a job's input, and what the job made of it comes back", { skip: live }, async () => {
  const grid = connect();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "igjs-up-"));
  const file = path.join(dir, "data.txt");
  fs.writeFileSync(file, "uploaded over HTTPS in pieces\n".repeat(2000));
  const ref = await grid.upload(file, { pieceBytes: 16_384 });
  assert.equal(ref.size, fs.statSync(file).size);
  assert.deepEqual(await grid.upload(file), ref);  // already there: nothing sent again
  const job = await grid.submit({
    apiVersion: "idlegrid/v1",
    name: "js-input",
    image,
    command: ["/sim"],
    args: ["copy", "/in/data.txt"],
    outputPath: "/out",
    resources: { cpu: 0.25, memoryBytes: String(64 << 20) },
    inputs: [{ artifact: ref.digest, path: "/in/data.txt" }],
  });
  const done = await grid.wait(job.id, { intervalMs: 200, timeoutMs: 120_000 });
  assert.equal(done.tasks[0].state, "SUCCEEDED", JSON.stringify(done.tasks[0]));
  const [result] = await grid.results(done, path.join(dir, "results"));
  assert.deepEqual(fs.readFileSync(path.join(dir, "results", "task-0", "copy.txt")), fs.readFileSync(file));
  assert.equal(result.index, 0);
});
