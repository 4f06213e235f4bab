// Artifacts by digest over GET /v1/artifacts/DIGEST, resumable: bytes go to
// PATH.part, an interrupted download continues from its length with a
// `Range: bytes=N-` request, and the file is renamed into place only once
// the whole hashes to the digest (a mismatch removes the partial file).
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";

import { IdlegridError, errorOf } from "./errors.mjs";

// Resolves to `target` once it holds the blob `digest` ("sha256:<hex>").
export async function download(client, digest, target, expectedSize = 0) {
  if (!/^sha256:[0-9a-f]{64}$/.test(digest)) {
    throw new IdlegridError("InvalidArgument", `digest must be sha256:<64 hex>, got '${digest}'`);
  }
  fs.mkdirSync(path.dirname(target), { recursive: true });
  if (fs.existsSync(target) && (await hashFile(target)) === digest) return target;  // already here
  const part = `${target}.part`;
  let have = fs.existsSync(part) ? fs.statSync(part).size : 0;
  if (expectedSize > 0 && have > expectedSize) {
    fs.rmSync(part);
    have = 0;
  }
  if (have > 0 && (await hashFile(part)) === digest) {
    fs.renameSync(part, target);  // it was complete when interrupted
    return target;
  }
  const headers = have > 0 ? { Range: `bytes=${have}-` } : {};
  const out = fs.openSync(part, have > 0 ? "a" : "w");
  let res;
  try {
    // Only a 200 or 206 body is the blob's; an error's stays in res.body.
    res = await client.raw("GET", `/v1/artifacts/${digest}`, undefined, headers, (chunk, status) => {
      if (status !== 200 && status !== 206) return false;
      fs.writeSync(out, chunk);
      return true;
    });
  } finally {
    fs.closeSync(out);
  }
  if (res.status === 200 && have > 0) {
    // The server sent the whole blob, not the range: what was appended follows stale bytes.
    fs.rmSync(part);
    return download(client, digest, target, expectedSize);
  }
  if (res.status !== 200 && res.status !== 206) {
    if (have === 0) fs.rmSync(part, { force: true });  // a partial file stays, to resume later
    throw errorOf(res, `GET ${digest}`);
  }
  const got = await hashFile(part);
  if (got !== digest) {
    fs.rmSync(part);
    throw new IdlegridError("DataLoss", `artifact ${digest}: the bytes received hash to ${got}; removed, download again`);
  }
  fs.renameSync(part, target);
  return target;
}

export function hashFile(file) {
  return new Promise((resolve, reject) => {
    const h = crypto.createHash("sha256");
    fs.createReadStream(file)
      .on("data", (c) => h.update(c))
      .on("end", () => resolve(`sha256:${h.digest("hex")}`))
      .on("error", reject);
  });
}
