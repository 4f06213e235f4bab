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
