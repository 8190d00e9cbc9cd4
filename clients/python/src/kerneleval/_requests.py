"""Request messages from keyword arguments (shared by Client and AsyncClient)."""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Optional, Sequence, Union

import grpc
from google.protobuf.message import Message

from kerneleval import pb
from kerneleval.errors import InvalidArgument

ProblemRef = Union[str, Message]  # a built-in id, or a pb.Problem carried in full
SubmissionLike = Union[str, Message, Mapping[str, Any]]

_REWARD_MODES = {
    None: pb.REWARD_MODE_UNSPECIFIED,
    "": pb.REWARD_MODE_UNSPECIFIED,
    "speedup": pb.REWARD_MODE_SPEEDUP,
    "roofline": pb.REWARD_MODE_ROOFLINE,
}
_BACKENDS = {None: pb.BACKEND_AUTO, "": pb.BACKEND_AUTO, "auto": pb.BACKEND_AUTO, "cuda": pb.BACKEND_CUDA, "cpu": pb.BACKEND_CPU}


def reward_settings(mode: Optional[str] = None, partial_credit: Optional[bool] = None) -> Message:
    """mode "speedup" | "roofline" | None (the server's default); partial_credit
    True | False | None (the server's default)."""
    if isinstance(mode, int):
        mode_value = mode
    else:
        try:
            mode_value = _REWARD_MODES[mode.lower() if isinstance(mode, str) else mode]
        except KeyError:
            raise ValueError(f"kerneleval: reward mode {mode!r} is not 'speedup' or 'roofline'") from None
    settings = pb.RewardSettings(mode=mode_value)
    if partial_credit is not None:
        settings.partial_credit = bool(partial_credit)
    return settings


def backend_value(backend: Optional[str]) -> int:
    if isinstance(backend, int):
        return backend
    try:
        return _BACKENDS[backend.lower() if isinstance(backend, str) else backend]
    except KeyError:
        raise ValueError(f"kerneleval: backend {backend!r} is not 'auto', 'cuda' or 'cpu'") from None


def compile_options(options: Optional[Iterable[str]] = None, arch: Optional[str] = None,
                    instantiate: Optional[Iterable[str]] = None) -> Message:
    return pb.CompileOptions(options=list(options or ()), arch=arch or "",
                             name_expressions=list(instantiate or ()))


def utf8_problem(text: str) -> Optional[str]:
    """Why `text` cannot be sent (None: it can): protobuf strings are UTF-8,
    and a lone surrogate such as "\\ud800" has no UTF-8 form."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        return f"not encodable as UTF-8 ({error.reason}: {text[error.start:error.end]!r} at character {error.start})"
    return None


def check_utf8(text: str, field: str) -> None:
    """InvalidArgument naming `field` (as the server would) when `text` cannot
    be sent (protobuf would raise UnicodeEncodeError instead)."""
    problem = utf8_problem(text)
    if problem is not None:
        raise InvalidArgument(grpc.StatusCode.INVALID_ARGUMENT, f"{field}: {problem}")


def submission(
    item: SubmissionLike,
    options: Optional[Iterable[str]] = None,
    arch: Optional[str] = None,
    launch_plan: Optional[Message] = None,
    field: str = "submission.source",
) -> Message:
    """A pb.Submission from source text, a pb.Submission, or a mapping with
    "source" and optionally "compile_options" (list), "arch", "launch_plan"."""
    if isinstance(item, Message):
        return item
    if isinstance(item, Mapping):
        return submission(
            item["source"],
            item.get("compile_options", options),
            item.get("arch", arch),
            item.get("launch_plan", launch_plan),
            field,
        )
    if not isinstance(item, str):
        raise TypeError(f"kerneleval: a submission is source text, got {type(item).__name__}")
    check_utf8(item, field)
    result = pb.Submission(source=item, compile_options=compile_options(options, arch))
    if launch_plan is not None:
        result.launch_plan.CopyFrom(launch_plan)
    return result


def _invalid(field: str, error: Exception) -> InvalidArgument:
    """InvalidArgument naming `field` for a value protobuf refused (out of range,
    wrong type), as the server would name it."""
    reason = str(error) or type(error).__name__
    return InvalidArgument(grpc.StatusCode.INVALID_ARGUMENT, f"{field}: {reason[:1].lower()}{reason[1:]}")


def _limits(limits: Union[None, Message, Mapping[str, Any]]) -> Optional[Message]:
    if limits is None:
        return None
    if isinstance(limits, Message):
        return limits
    message = pb.EvaluationLimits()
    for name, value in dict(limits).items():  # one at a time, to name the one refused
        try:
            message.MergeFrom(pb.EvaluationLimits(**{name: value}))
        except (ValueError, TypeError) as error:
            raise _invalid(f"limits.{name}", error) from None
    return message


def _set_problem(request: Message, problem: ProblemRef) -> None:
    if isinstance(problem, str):
        if not problem:
            raise ValueError("kerneleval: empty problem id")
        request.problem_id = problem
    elif isinstance(problem, Message):
        request.problem.CopyFrom(problem)
    else:
        raise TypeError(f"kerneleval: problem is an id or a pb.Problem, got {type(problem).__name__}")


def _set_common(
    request: Message,
    *,
    reward_mode: Optional[str],
    partial_credit: Optional[bool],
    backend: Optional[str],
    seed: Optional[int],
    device: Optional[str],
    client_id: Optional[str],
    limits: Union[None, Message, Mapping[str, Any]],
) -> None:
    request.reward.CopyFrom(reward_settings(reward_mode, partial_credit))
    request.backend = backend_value(backend)
    if seed is not None:
        try:
            request.seed = int(seed)
        except (ValueError, TypeError) as error:
            raise _invalid("seed", error) from None
    request.device = device or ""
    request.client_id = client_id or ""
    limits_message = _limits(limits)
    if limits_message is not None:
        request.limits.CopyFrom(limits_message)


def evaluate_request(
    problem: ProblemRef,
    source: SubmissionLike,
    *,
    compile_options: Optional[Iterable[str]] = None,
    arch: Optional[str] = None,
    launch_plan: Optional[Message] = None,
    reward_mode: Optional[str] = None,
    partial_credit: Optional[bool] = None,
    backend: Optional[str] = None,
    seed: Optional[int] = None,
    device: Optional[str] = None,
    client_id: Optional[str] = None,
    limits: Union[None, Message, Mapping[str, Any]] = None,
    skip_timing: bool = False,
) -> Message:
    request = pb.EvaluateRequest(skip_timing=bool(skip_timing))
    _set_problem(request, problem)
    request.submission.CopyFrom(submission(source, compile_options, arch, launch_plan))
    _set_common(
        request,
        reward_mode=reward_mode,
        partial_credit=partial_credit,
        backend=backend,
        seed=seed,
        device=device,
        client_id=client_id,
        limits=limits,
    )
    return request


def group_request(
    problem: ProblemRef,
    sources: Sequence[SubmissionLike],
    *,
    compile_options: Optional[Iterable[str]] = None,
    arch: Optional[str] = None,
    reward_mode: Optional[str] = None,
    partial_credit: Optional[bool] = None,
    backend: Optional[str] = None,
    seed: Optional[int] = None,
    device: Optional[str] = None,
    client_id: Optional[str] = None,
    limits: Union[None, Message, Mapping[str, Any]] = None,
    skip_timing: bool = False,
) -> Message:
    if isinstance(sources, (str, Message)):
        raise TypeError("kerneleval: evaluate_group takes a list of submissions")
    options = list(compile_options) if compile_options is not None else None
    request = pb.EvaluateGroupRequest(
        submissions=[
            submission(s, options, arch, field=f"submissions[{i}].source") for i, s in enumerate(sources)
        ],
        skip_timing=bool(skip_timing),
    )
    _set_problem(request, problem)
    _set_common(
        request,
        reward_mode=reward_mode,
        partial_credit=partial_credit,
        backend=backend,
        seed=seed,
        device=device,
        client_id=client_id,
        limits=limits,
    )
    return request


def compile_request(
    source: str,
    *,
    options: Optional[Iterable[str]] = None,
    arch: Optional[str] = None,
    include_ptx: bool = False,
    include_cubin: bool = False,
    client_id: Optional[str] = None,
    instantiate: Optional[Iterable[str]] = None,
) -> Message:
    check_utf8(source, "source")
    return pb.CompileRequest(
        source=source,
        options=compile_options(options, arch, instantiate),
        include_ptx=include_ptx,
        include_cubin=include_cubin,
        client_id=client_id or "",
    )
