"""kerneleval: Python client of the kerneleval server (CUDA kernel grading over gRPC).

    from kerneleval import Client
    client = Client("localhost:50051")
    verdict = client.evaluate("vector_add", source)

Also: kerneleval.rewards (a GRPO reward function for TRL), kerneleval.openenv_env
(an OpenEnv environment; needs the `openenv` extra), kerneleval.pb (the messages).
"""

from kerneleval.client import AsyncClient, Client
from kerneleval.errors import (
    Cancelled,
    DeadlineExceeded,
    FailedPrecondition,
    Internal,
    InvalidArgument,
    KernelEvalError,
    NotFound,
    PermissionDenied,
    ResourceExhausted,
    Unauthenticated,
    Unavailable,
)
from kerneleval.results import (
    NOT_EVALUATED,
    CompileResult,
    Compiled,
    CorrectnessDone,
    CorrectnessReport,
    DeviceInfo,
    Diagnostic,
    Event,
    GroupResult,
    KernelInfo,
    Mismatch,
    OutputCheck,
    ProblemInfo,
    ProblemSummary,
    Queued,
    RewardSettings,
    TimingProgress,
    TimingReport,
    TimingStats,
    Verdict,
    message_to_dict,
)

__version__ = "0.1.0"

__all__ = [
    "NOT_EVALUATED",
    "AsyncClient",
    "Cancelled",
    "Client",
    "CompileResult",
    "Compiled",
    "CorrectnessDone",
    "CorrectnessReport",
    "DeadlineExceeded",
    "DeviceInfo",
    "Diagnostic",
    "Event",
    "FailedPrecondition",
    "GroupResult",
    "Internal",
    "InvalidArgument",
    "KernelEvalError",
    "KernelInfo",
    "Mismatch",
    "NotFound",
    "OutputCheck",
    "PermissionDenied",
    "ProblemInfo",
    "ProblemSummary",
    "Queued",
    "ResourceExhausted",
    "RewardSettings",
    "TimingProgress",
    "TimingReport",
    "TimingStats",
    "Unauthenticated",
    "Unavailable",
    "Verdict",
    "message_to_dict",
]
