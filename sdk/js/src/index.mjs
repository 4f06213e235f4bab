// idlegrid's requester SDK for Node.js (18 or later), over the coordinator's
// HTTPS/JSON API. See sdk/js/README.md.
//
//   import { connect, mapSpec } from "idlegrid";
//   const grid = connect();  // IDLEGRID_URL, IDLEGRID_TOKEN, IDLEGRID_CA_FILE
//   const job = await grid.submit(mapSpec("sim@sha256:...", [{ seed: 1 }, { seed: 2 }], { args: ["--seed", "{{.seed}}"] }));
//   const done = await grid.wait(job.id);
//   for (const r of await grid.results(done, "results")) console.log(r.index, r.files);
export { Client, connect, jobQuery } from "./client.mjs";
export { IdlegridError } from "./errors.mjs";
export { mapSpec, isSettled, TERMINAL_STATES } from "./spec.mjs";
export { download } from "./download.mjs";
