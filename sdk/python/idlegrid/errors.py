"""Typed errors. Every failure the coordinator reports arrives as one of
these, carrying its reason unchanged (the coordinator's reasons name the
field, item, image or job at fault). Mapped once, here, from gRPC codes."""
import re

import grpc


class IdlegridError(Exception):
    """Base of every idlegrid error. `reason` is the coordinator's (or the
    SDK's) own words; `code` the gRPC status code name, e.g. "NOT_FOUND"."""

    code = "UNKNOWN"

    def __init__(self, reason, code=None):
        super().__init__(reason)
        self.reason = reason
        if code is not None:
            self.code = code

    @property
    def item_index(self):
        """The index of the item array entry the reason names
        ("array.items[3]"), or None: which of map()'s items is at fault."""
        found = re.search(r"array\.items\[(\d+)\]", self.reason)
        return int(found.group(1)) if found else None


class Cancelled(IdlegridError):
    code = "CANCELLED"


class InvalidArgument(IdlegridError):
    """The request is wrong as written: a malformed spec, item or argument."""
    code = "INVALID_ARGUMENT"


class ConfigError(InvalidArgument):
    """No usable client configuration (address, CA file, token)."""


class DeadlineExceeded(IdlegridError):
    code = "DEADLINE_EXCEEDED"


class NotFound(IdlegridError):
    """No such job, artifact, output or receipt (or not one this token may see)."""
    code = "NOT_FOUND"


class AlreadyExists(IdlegridError):
    code = "ALREADY_EXISTS"


class PermissionDenied(IdlegridError):
    """The token may not do this (scope, role or another account's object)."""
    code = "PERMISSION_DENIED"


class ResourceExhausted(IdlegridError):
    """A quota or rate limit was reached."""
    code = "RESOURCE_EXHAUSTED"


class FailedPrecondition(IdlegridError):
    """Valid, but not now or not here: an image or input not pushed yet, a
    feature this coordinator does not run, a job not settled yet."""
    code = "FAILED_PRECONDITION"


class Aborted(IdlegridError):
    code = "ABORTED"


class OutOfRange(IdlegridError):
    code = "OUT_OF_RANGE"


class Unimplemented(IdlegridError):
    code = "UNIMPLEMENTED"


class Internal(IdlegridError):
    code = "INTERNAL"


class Unavailable(IdlegridError):
    """The coordinator cannot be reached (address, TLS, or it is down)."""
    code = "UNAVAILABLE"


class DataLoss(IdlegridError):
    code = "DATA_LOSS"


class IntegrityError(DataLoss):
    """Downloaded bytes do not match their sha256 digest or size."""


class Unauthenticated(IdlegridError):
    """The token is missing, unknown, expired or revoked."""
    code = "UNAUTHENTICATED"


class TaskFailed(IdlegridError):
    """A task ended without success, so it has no outputs to read. `index`,
    `state` ("FAILED", "CANCELLED", "LOST") and `failure_reason`
    ("NONZERO_EXIT", ...) say which and why."""
    code = "FAILED_PRECONDITION"

    def __init__(self, index, state, failure_reason, message):
        detail = f": {message}" if message else ""
        super().__init__(f"task {index} ended {state} ({failure_reason}){detail}")
        self.index = index
        self.state = state
        self.failure_reason = failure_reason
        self.message = message


_BY_CODE = {cls.code: cls for cls in (
    Cancelled, InvalidArgument, DeadlineExceeded, NotFound, AlreadyExists, PermissionDenied,
    ResourceExhausted, FailedPrecondition, Aborted, OutOfRange, Unimplemented, Internal,
    Unavailable, DataLoss, Unauthenticated)}


def from_status(code_name, reason):
    """The error for a gRPC status code name ("NOT_FOUND") and its details."""
    return _BY_CODE.get(code_name, IdlegridError)(reason, code_name)


def from_rpc_error(error):
    """The typed error for a grpc.RpcError (a failed call or stream)."""
    code = error.code() if hasattr(error, "code") else None
    name = code.name if isinstance(code, grpc.StatusCode) else "UNKNOWN"
    reason = error.details() if hasattr(error, "details") else None
    return from_status(name, reason or str(error))


__all__ = [name for name, value in globals().items()
           if isinstance(value, type) and issubclass(value, IdlegridError)] + ["from_status", "from_rpc_error"]
