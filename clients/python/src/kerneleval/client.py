"""Client and AsyncClient of kerneleval.v1.KernelEval.

    from kerneleval import Client
    with Client("localhost:50051", token="...") as client:
        verdict = client.evaluate("vector_add", source, reward_mode="speedup")
        print(verdict.correct, verdict.stage, verdict.speedup, verdict.reward)

Both clients are safe to share between threads (AsyncClient: between tasks of
one event loop). See kerneleval._channel for targets, balancing and retries.
"""

from __future__ import annotations

import itertools
import threading
from typing import Any, AsyncIterator, Iterator, Mapping, Optional, Sequence, Union

import grpc
import grpc.aio
from google.protobuf.message import Message

from kerneleval import _channel, _requests, pb
from kerneleval.errors import error_for, from_rpc_error
from kerneleval.results import (
    CompileResult,
    DeviceInfo,
    Event,
    GroupResult,
    ProblemInfo,
    ProblemSummary,
    Verdict,
    event_from_proto,
)

_UNSET: Any = object()


class _ClientBase:
    """What both clients share: channel plans, defaults, metadata."""

    def __init__(
        self,
        target: Optional[_channel.Target] = None,
        token: Optional[str] = None,
        tls: _channel.Tls = False,
        timeout: Optional[float] = None,
        *,
        lb_policy: Optional[str] = None,
        max_attempts: int = 4,
        wait_for_ready: bool = False,
        max_message_bytes: int = _channel.DEFAULT_MAX_MESSAGE_BYTES,
        options: Optional[Sequence[tuple[str, Any]]] = None,
        client_id: Optional[str] = None,
    ):
        """
        target: "host:port", "dns:///name:port", a list of "host:port" (client-side
            round robin), or None: $KERNELEVAL_SERVER, else localhost:50051.
        token: bearer token sent as `authorization: Bearer <token>`; None:
            $KERNELEVAL_TOKEN; "": none.
        tls: False (plaintext), True (TLS, system roots), or the path (or PEM bytes)
            of the CA certificates to trust.
        timeout: default deadline of each call [s]; None: none. Evaluations on a
            busy server can queue for a while: size it to the queue, not the kernel.
        lb_policy: "round_robin" | "pick_first"; default: round_robin for dns:
            targets and address lists, gRPC's pick_first otherwise.
        max_attempts: attempts per call for UNAVAILABLE before the server took the
            call (1: no retry policy; gRPC caps it at 5).
        wait_for_ready: queue calls while no connection is ready (until the
            deadline) instead of failing fast with UNAVAILABLE.
        max_message_bytes: largest response accepted [bytes]. Requests are not
            capped here: the server refuses one past its own bound
            (RESOURCE_EXHAUSTED).
        options: extra gRPC channel arguments, e.g. [("grpc.ssl_target_name_override", "kerneleval")].
        client_id: default fairness key sent with evaluations and compiles (empty: the peer address).
            A server with --tokens-file ignores it for a named client's token: the
            token's client name is the key.
        """
        self.target = _channel.resolve_target(target)
        self._token = _channel.resolve_token(token)
        self.timeout = timeout
        self.client_id = client_id
        self._wait_for_ready = wait_for_ready
        self._credentials = _channel.credentials(tls)
        self._plans = _channel.plan_channels(self.target, lb_policy)
        self._options = [
            _channel.channel_options(plan, max_attempts, max_message_bytes, options) for plan in self._plans
        ]
        self._next = itertools.count()
        self._next_lock = threading.Lock()

    def _pick(self, stubs: list[Any]) -> Any:
        if len(stubs) == 1:
            return stubs[0]
        with self._next_lock:
            index = next(self._next)
        return stubs[index % len(stubs)]

    def _call_kwargs(self, timeout: Any, request_id: Optional[str]) -> dict[str, Any]:
        return {
            "timeout": self.timeout if timeout is _UNSET else timeout,
            "metadata": _channel.call_metadata(self._token, request_id) or None,
            "wait_for_ready": self._wait_for_ready or None,
        }

    def _with_client_id(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        if kwargs.get("client_id") is None and self.client_id:
            kwargs["client_id"] = self.client_id
        return kwargs

    def __repr__(self) -> str:
        return f"{type(self).__name__}(target={self.target!r})"


HEALTH_METHOD = "/grpc.health.v1.Health/Check"
_HEALTH_STATUSES = {0: "UNKNOWN", 1: "SERVING", 2: "NOT_SERVING", 3: "SERVICE_UNKNOWN"}


def _health_request(service: str) -> bytes:
    """grpc.health.v1.HealthCheckRequest {string service = 1;}, encoded by hand
    (no grpcio-health-checking dependency)."""
    data = service.encode()
    if not data:
        return b""
    length, varint = len(data), bytearray()
    while length >= 0x80:
        varint.append((length & 0x7F) | 0x80)
        length >>= 7
    varint.append(length)
    return b"\x0a" + bytes(varint) + data


def _health_status(response: bytes) -> str:
    """HealthCheckResponse {ServingStatus status = 1;} -> its name."""
    if len(response) >= 2 and response[0] == 0x08:
        return _HEALTH_STATUSES.get(response[1], "UNKNOWN")
    return "UNKNOWN"


def _evaluate_request(problem: Any, source: Any, kwargs: dict[str, Any]) -> Message:
    if isinstance(problem, pb.EvaluateRequest):
        return problem
    return _requests.evaluate_request(problem, source, **kwargs)


class Client(_ClientBase):
    """Blocking client. Every method raises a KernelEvalError subclass when the
    server could not judge the request; per-call `timeout` overrides the default
    and `request_id` is sent as x-request-id (it shows in the server's logs)."""

    def __init__(self, target: Optional[_channel.Target] = None, token: Optional[str] = None,
                 tls: _channel.Tls = False, timeout: Optional[float] = None, **kwargs: Any):
        super().__init__(target, token, tls, timeout, **kwargs)
        self._channels: list[grpc.Channel] = []
        for plan, options in zip(self._plans, self._options):
            if self._credentials is None:
                channel = grpc.insecure_channel(plan.target, options=options)
            else:
                channel = grpc.secure_channel(plan.target, self._credentials, options=options)
            self._channels.append(channel)
        self._stubs = [pb.KernelEvalStub(channel) for channel in self._channels]

    # ---------------------------------------------------------------- plumbing

    def _unary(self, method: str, request: Message, timeout: Any, request_id: Optional[str]) -> Any:
        stub = self._pick(self._stubs)
        try:
            return getattr(stub, method)(request, **self._call_kwargs(timeout, request_id))
        except grpc.RpcError as error:
            raise from_rpc_error(error) from error

    def close(self) -> None:
        for channel in self._channels:
            channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def wait_until_ready(self, timeout: Optional[float] = None) -> None:
        """Blocks until every channel has a connection (raises Unavailable on timeout)."""
        for channel in self._channels:
            try:
                grpc.channel_ready_future(channel).result(timeout=timeout)
            except grpc.FutureTimeoutError:
                raise error_for(
                    grpc.StatusCode.UNAVAILABLE, f"no connection to {self.target!r} within {timeout} s"
                ) from None

    # ------------------------------------------------------------------- RPCs

    def evaluate(
        self,
        problem: Union[str, Message],
        source: Union[str, Message, Mapping[str, Any]] = "",
        *,
        timeout: Any = _UNSET,
        request_id: Optional[str] = None,
        **kwargs: Any,
    ) -> Verdict:
        """Grades one submission.

        problem: a built-in problem id ("softmax") or a pb.Problem; or a complete
            pb.EvaluateRequest (then `source` and the keywords are ignored).
        source: CUDA C++ device code with `// @launch` directives (or a
            pb.Submission / {"source", "compile_options", "arch", "launch_plan"}).
        keywords: compile_options=[...], arch="sm_90", launch_plan=pb.LaunchPlan,
            reward_mode="speedup"|"roofline", partial_credit=True|False,
            backend="auto"|"cuda"|"cpu", seed=int, device="cuda:0", client_id=str,
            limits={"timeout_seconds": 30, "memory_bytes": ..., "timing_budget_seconds": ...},
            skip_timing=True (correctness only). Without limits.timeout_seconds a
            candidate's correctness run is cut at a multiple of the reference's (the
            server's --candidate-run-factor, 25x, at least 5 s); with it, each run's
            limit is the one given (a group shares it once group size x limit exceeds
            10x the server's limit).

        skip_timing=True: the verdict has no speedup, so under the seed rubric a
        correct kernel's reward is 0.0 (also in roofline mode), below the partial
        credit of a wrong one that ran (0.05). Rewards of skip_timing verdicts are
        not comparable with each other or with timed ones: read the verdict's
        `correct` field instead.
        """
        request = _evaluate_request(problem, source, self._with_client_id(kwargs))
        response = self._unary("Evaluate", request, timeout, request_id)
        return Verdict.from_proto(response.verdict)

    def evaluate_stream(
        self,
        problem: Union[str, Message],
        source: Union[str, Message, Mapping[str, Any]] = "",
        *,
        timeout: Any = _UNSET,
        request_id: Optional[str] = None,
        **kwargs: Any,
    ) -> Iterator[Event]:
        """As evaluate, but yields progress events (Queued, Compiled,
        CorrectnessDone, TimingProgress) and the Verdict as the last event.
        The call starts when iteration does; closing the iterator early cancels it."""
        request = _evaluate_request(problem, source, self._with_client_id(kwargs))
        return _iterate_events(self._pick(self._stubs), request, self._call_kwargs(timeout, request_id))

    def evaluate_group(
        self,
        problem: Union[str, Message],
        sources: Sequence[Union[str, Message, Mapping[str, Any]]] = (),
        *,
        timeout: Any = _UNSET,
        request_id: Optional[str] = None,
        **kwargs: Any,
    ) -> GroupResult:
        """Grades many submissions of one problem (a GRPO group) against one shared
        reference measurement. Returns the verdicts in order (result[i], iter,
        .rewards). Keywords as evaluate, except launch_plan (each submission
        carries its own).
        `problem` may also be a complete pb.EvaluateGroupRequest.

        skip_timing=True: rewards are not comparable (a correct kernel gets 0.0,
        below a wrong one's partial credit; see evaluate): rank by each verdict's
        `correct` field instead."""
        if isinstance(problem, pb.EvaluateGroupRequest):
            request = problem
        else:
            request = _requests.group_request(problem, sources, **self._with_client_id(kwargs))
        response = self._unary("EvaluateGroup", request, timeout, request_id)
        return GroupResult.from_proto(response)

    def compile(
        self,
        source: str,
        *,
        options: Optional[Sequence[str]] = None,
        arch: Optional[str] = None,
        include_ptx: bool = False,
        include_cubin: bool = False,
        timeout: Any = _UNSET,
        request_id: Optional[str] = None,
        client_id: Optional[str] = None,
        instantiate: Optional[Sequence[str]] = None,
    ) -> CompileResult:
        """Compiles without running: the log, diagnostics and per-kernel resources.

        instantiate: template kernels to instantiate, e.g. ["scale<float, 4>"]
        (those the source's @launch lines name are instantiated anyway); each
        instance's KernelInfo.name_expression names it.
        """
        request = _requests.compile_request(
            source, options=options, arch=arch, include_ptx=include_ptx, include_cubin=include_cubin,
            client_id=client_id or self.client_id, instantiate=instantiate,
        )
        return CompileResult.from_proto(self._unary("Compile", request, timeout, request_id).result)

    def problems(self, tag: Optional[str] = None, *, timeout: Any = _UNSET,
                 request_id: Optional[str] = None) -> list[ProblemSummary]:
        """The built-in problems (only those with `tag` when given)."""
        response = self._unary("ListProblems", pb.ListProblemsRequest(tag=tag or ""), timeout, request_id)
        return [ProblemSummary.from_proto(p) for p in response.problems]

    def problem(self, problem_id: str, *, timeout: Any = _UNSET,
                request_id: Optional[str] = None) -> ProblemInfo:
        """One problem: description, signature, example launch line and prompt."""
        response = self._unary("GetProblem", pb.GetProblemRequest(problem_id=problem_id), timeout, request_id)
        return ProblemInfo.from_proto(response)

    def devices(self, *, timeout: Any = _UNSET, request_id: Optional[str] = None) -> list[DeviceInfo]:
        """The server's devices (GPUs, or "cpu"), with queue depth and readiness."""
        response = self._unary("ListDevices", pb.ListDevicesRequest(), timeout, request_id)
        return [DeviceInfo.from_proto(d) for d in response.devices]

    def health(self, service: str = pb.SERVICE_NAME, *, timeout: Any = _UNSET) -> str:
        """grpc.health.v1 Check: "SERVING", "NOT_SERVING" (e.g. no worker ready yet),
        "SERVICE_UNKNOWN" or "UNKNOWN". service "" is the whole server (liveness);
        the default, the evaluation service (readiness). Needs no token. With
        several channels, asks the next one in turn."""
        check = self._pick(self._channels).unary_unary(HEALTH_METHOD)
        try:
            response = check(_health_request(service), timeout=self.timeout if timeout is _UNSET else timeout)
        except grpc.RpcError as error:
            if error.code() == grpc.StatusCode.NOT_FOUND:
                return "SERVICE_UNKNOWN"
            raise from_rpc_error(error) from error
        return _health_status(response)


def _iterate_events(stub: Any, request: Message, call_kwargs: dict[str, Any]) -> Iterator[Event]:
    # The call starts at the first next(): an iterator never iterated costs the server nothing.
    call = stub.EvaluateStream(request, **call_kwargs)
    try:
        for message in call:
            yield event_from_proto(message)
    except grpc.RpcError as error:
        raise from_rpc_error(error) from error
    finally:
        call.cancel()  # no-op when the stream already ended


class AsyncClient(_ClientBase):
    """asyncio client (grpc.aio): the same methods as Client, as coroutines;
    evaluate_stream returns an async iterator. Create it inside the event loop
    that uses it."""

    def __init__(self, target: Optional[_channel.Target] = None, token: Optional[str] = None,
                 tls: _channel.Tls = False, timeout: Optional[float] = None, **kwargs: Any):
        super().__init__(target, token, tls, timeout, **kwargs)
        self._channels: list[grpc.aio.Channel] = []
        for plan, options in zip(self._plans, self._options):
            if self._credentials is None:
                channel = grpc.aio.insecure_channel(plan.target, options=options)
            else:
                channel = grpc.aio.secure_channel(plan.target, self._credentials, options=options)
            self._channels.append(channel)
        self._stubs = [pb.KernelEvalStub(channel) for channel in self._channels]

    async def _unary(self, method: str, request: Message, timeout: Any, request_id: Optional[str]) -> Any:
        stub = self._pick(self._stubs)
        try:
            return await getattr(stub, method)(request, **self._call_kwargs(timeout, request_id))
        except grpc.RpcError as error:
            raise from_rpc_error(error) from error

    async def close(self) -> None:
        for channel in self._channels:
            await channel.close()

    async def wait_until_ready(self, timeout: Optional[float] = None) -> None:
        """Waits until every channel has a connection (raises Unavailable on timeout)."""
        import asyncio

        for channel in self._channels:
            try:
                await asyncio.wait_for(channel.channel_ready(), timeout)
            except asyncio.TimeoutError:
                raise error_for(
                    grpc.StatusCode.UNAVAILABLE, f"no connection to {self.target!r} within {timeout} s"
                ) from None

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def evaluate(self, problem: Union[str, Message], source: Any = "", *, timeout: Any = _UNSET,
                       request_id: Optional[str] = None, **kwargs: Any) -> Verdict:
        """See Client.evaluate."""
        request = _evaluate_request(problem, source, self._with_client_id(kwargs))
        response = await self._unary("Evaluate", request, timeout, request_id)
        return Verdict.from_proto(response.verdict)

    def evaluate_stream(self, problem: Union[str, Message], source: Any = "", *, timeout: Any = _UNSET,
                        request_id: Optional[str] = None, **kwargs: Any) -> AsyncIterator[Event]:
        """See Client.evaluate_stream: `async for event in client.evaluate_stream(...)`."""
        request = _evaluate_request(problem, source, self._with_client_id(kwargs))
        return _aiterate_events(self._pick(self._stubs), request, self._call_kwargs(timeout, request_id))

    async def evaluate_group(self, problem: Union[str, Message], sources: Sequence[Any] = (), *,
                             timeout: Any = _UNSET, request_id: Optional[str] = None,
                             **kwargs: Any) -> GroupResult:
        """See Client.evaluate_group."""
        if isinstance(problem, pb.EvaluateGroupRequest):
            request = problem
        else:
            request = _requests.group_request(problem, sources, **self._with_client_id(kwargs))
        return GroupResult.from_proto(await self._unary("EvaluateGroup", request, timeout, request_id))

    async def compile(self, source: str, *, options: Optional[Sequence[str]] = None, arch: Optional[str] = None,
                      include_ptx: bool = False, include_cubin: bool = False, timeout: Any = _UNSET,
                      request_id: Optional[str] = None, client_id: Optional[str] = None,
                      instantiate: Optional[Sequence[str]] = None) -> CompileResult:
        """See Client.compile."""
        request = _requests.compile_request(
            source, options=options, arch=arch, include_ptx=include_ptx, include_cubin=include_cubin,
            client_id=client_id or self.client_id, instantiate=instantiate,
        )
        response = await self._unary("Compile", request, timeout, request_id)
        return CompileResult.from_proto(response.result)

    async def problems(self, tag: Optional[str] = None, *, timeout: Any = _UNSET,
                       request_id: Optional[str] = None) -> list[ProblemSummary]:
        response = await self._unary("ListProblems", pb.ListProblemsRequest(tag=tag or ""), timeout, request_id)
        return [ProblemSummary.from_proto(p) for p in response.problems]

    async def problem(self, problem_id: str, *, timeout: Any = _UNSET,
                      request_id: Optional[str] = None) -> ProblemInfo:
        response = await self._unary("GetProblem", pb.GetProblemRequest(problem_id=problem_id), timeout,
                                     request_id)
        return ProblemInfo.from_proto(response)

    async def devices(self, *, timeout: Any = _UNSET, request_id: Optional[str] = None) -> list[DeviceInfo]:
        response = await self._unary("ListDevices", pb.ListDevicesRequest(), timeout, request_id)
        return [DeviceInfo.from_proto(d) for d in response.devices]

    async def health(self, service: str = pb.SERVICE_NAME, *, timeout: Any = _UNSET) -> str:
        """See Client.health."""
        check = self._pick(self._channels).unary_unary(HEALTH_METHOD)
        try:
            response = await check(_health_request(service), timeout=self.timeout if timeout is _UNSET else timeout)
        except grpc.RpcError as error:
            if error.code() == grpc.StatusCode.NOT_FOUND:
                return "SERVICE_UNKNOWN"
            raise from_rpc_error(error) from error
        return _health_status(response)


async def _aiterate_events(stub: Any, request: Message, call_kwargs: dict[str, Any]) -> AsyncIterator[Event]:
    call = stub.EvaluateStream(request, **call_kwargs)
    try:
        async for message in call:
            yield event_from_proto(message)
    except grpc.RpcError as error:
        raise from_rpc_error(error) from error
    finally:
        call.cancel()
