"""RPC errors as typed exceptions.

A compile error, a crash, a hang or a wrong answer is *not* an exception: it
is a Verdict with a `stage`. These are for requests the server could not judge
at all (a malformed request, an unknown problem, a full queue, no server).
"""

from __future__ import annotations

from typing import Any, Optional

import grpc

REQUEST_ID_HEADER = "x-request-id"


class KernelEvalError(Exception):
    """A failed call. `code` is the grpc.StatusCode, `details` the server's message,
    `request_id` the server's x-request-id for the call (for its logs) when it sent one."""

    def __init__(self, code: grpc.StatusCode, details: str, request_id: Optional[str] = None):
        self.code = code
        self.details = details
        self.request_id = request_id
        super().__init__(f"{code.name}: {details}" if details else code.name)


class InvalidArgument(KernelEvalError):
    """The request is malformed (empty source, unknown enum, group too large, ...)."""


class NotFound(KernelEvalError):
    """Unknown problem or device."""


class FailedPrecondition(KernelEvalError):
    """A valid request the server cannot serve in its state (e.g. CUDA asked of a CPU-only server)."""


class ResourceExhausted(KernelEvalError):
    """The server's queue is full: back off and retry later."""


class Unavailable(KernelEvalError):
    """No server reachable (after the client's retries), or a worker is down."""


class Unauthenticated(KernelEvalError):
    """Missing or wrong bearer token."""


class PermissionDenied(KernelEvalError):
    """The token is valid but not allowed to do this."""


class DeadlineExceeded(KernelEvalError):
    """The call's timeout passed before the server answered."""


class Cancelled(KernelEvalError):
    """The call was cancelled (by the client, or the server shutting down)."""


class Internal(KernelEvalError):
    """A server bug."""


_BY_CODE: dict[grpc.StatusCode, type[KernelEvalError]] = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgument,
    grpc.StatusCode.OUT_OF_RANGE: InvalidArgument,
    grpc.StatusCode.NOT_FOUND: NotFound,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPrecondition,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhausted,
    grpc.StatusCode.UNAVAILABLE: Unavailable,
    grpc.StatusCode.UNAUTHENTICATED: Unauthenticated,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDenied,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceeded,
    grpc.StatusCode.CANCELLED: Cancelled,
    grpc.StatusCode.INTERNAL: Internal,
}


def _metadata_value(metadata: Any, key: str) -> Optional[str]:
    for item in metadata or ():
        item_key, value = (item.key, item.value) if hasattr(item, "key") else item
        if item_key == key:
            return value.decode() if isinstance(value, bytes) else value
    return None


def request_id_of(call: Any) -> Optional[str]:
    """The server's x-request-id from a finished call or RpcError, if any."""
    for getter in ("initial_metadata", "trailing_metadata"):
        method = getattr(call, getter, None)
        if method is None:
            continue
        try:
            metadata = method()
        except Exception:  # noqa: BLE001 - a call that never started has none
            continue
        value = _metadata_value(metadata, REQUEST_ID_HEADER)
        if value:
            return value
    return None


def error_for(code: grpc.StatusCode, details: str, request_id: Optional[str] = None) -> KernelEvalError:
    """The typed exception for a status code (KernelEvalError itself for the rest)."""
    return _BY_CODE.get(code, KernelEvalError)(code, details, request_id)


def from_rpc_error(error: grpc.RpcError) -> KernelEvalError:
    """grpc.RpcError (sync) or grpc.aio.AioRpcError -> the typed exception."""
    code = error.code() if callable(getattr(error, "code", None)) else grpc.StatusCode.UNKNOWN
    details = error.details() if callable(getattr(error, "details", None)) else str(error)
    return error_for(code or grpc.StatusCode.UNKNOWN, details or "", request_id_of(error))
