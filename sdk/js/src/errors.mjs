// An error the coordinator (or the SDK) reported: `code` is the API's
// ("NotFound", "InvalidArgument", "Unauthenticated", ...), `status` the HTTP
// status when there was a response.
export class IdlegridError extends Error {
  constructor(code, message, status = 0) {
    super(`${code}: ${message}`);
    this.name = "IdlegridError";
    this.code = code;
    this.status = status;
  }
}

// The API's error in a raw response ({code, message} JSON), or its status alone.
export function errorOf(res, what) {
  let body = {};
  try {
    body = JSON.parse(res.body.toString("utf8") || "{}");
  } catch {}
  return new IdlegridError(body.code ?? "Unknown", body.message ?? `${what}: HTTP ${res.status}`, res.status);
}
