"""An in-process fake of the kerneleval server (Python, grpc) with scripted
verdicts, so the client's own logic (retries, errors, token, streams, groups,
the reward function, the OpenEnv environment) is tested without the C++ server.

Grading is by markers in the source:
  SYNTAX   -> stage "compile" (with a compiler log)
  CRASH    -> stage "runtime"
  HANG     -> stage "timeout"
  LATE     -> stage "not_evaluated" (a group's deadline came first; flagged)
  WRONG    -> stage "correctness" (with a failing OutputCheck and first mismatch)
  SLOW     -> passed, speedup 0.5
  otherwise-> passed, speedup 2.0, roofline_frac 0.25
The reward follows the seed rubric's formula under the request's settings
(default mode speedup, partial credit off), like the real server. Like the
real server's request checks (server/validation.cc), a source that is empty or
over `max_source_bytes` UTF-8 bytes is INVALID_ARGUMENT naming its field
("submissions[i].source: N bytes exceeds the L-byte limit").

`script(method, *behaviours)` queues behaviours consumed one per call:
  Abort(code, details, headers=False)  fail; headers=True sends the
                                       x-request-id header first (the call
                                       counts as taken by the server)
  Sleep(seconds)                       delay, then answer normally
  a callable(request, context)         its return value is the response
"""

from __future__ import annotations

import collections
import math
import threading
import time
from concurrent import futures
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import grpc

from kerneleval import pb

PROBLEMS = {
    "vector_add": ("Vector add", "c = a + b", "inputs: a f32[N], b f32[N]; outputs: c f32[N]; params: N",
                   "// @launch add<<<ceil_div(N, 256), 256>>>(a, b, c, N)", ["level1", "elementwise"]),
    "softmax": ("Softmax", "Row-wise softmax of x", "inputs: x f32[ROWS, COLS]; outputs: y f32[ROWS, COLS]; params: ROWS, COLS",
                "// @launch softmax_rows<<<ROWS, 256>>>(x, y, ROWS, COLS)", ["level1", "reduction"]),
}


@dataclass
class Abort:
    code: grpc.StatusCode
    details: str = "scripted failure"
    headers: bool = False


@dataclass
class Sleep:
    seconds: float


@dataclass
class Call:
    method: str
    request: Any
    metadata: dict[str, str]
    time: float = field(default_factory=time.monotonic)


def seed_reward(correct: bool, stage: str, speedup: float, roofline: float, mode: str, partial: bool) -> float:
    """The seed rubric's formula (shared/seed/reward_rubric.py), for scripted verdicts."""
    if not correct:
        return {"runtime": 0.02, "timeout": 0.02, "correctness": 0.05}.get(stage, 0.0) if partial else 0.0
    if mode == "roofline" and roofline:
        return 0.3 + 2.7 * min(roofline, 1.0)
    return 0.3 + min(max(math.log2(speedup), -0.2), 3.0) if speedup > 0 else 0.0


def grade(problem_id: str, source: str, settings: Any) -> Any:
    mode = "roofline" if settings.mode == pb.REWARD_MODE_ROOFLINE else "speedup"
    partial = settings.partial_credit if settings.HasField("partial_credit") else False
    verdict = pb.Verdict(problem_id=problem_id, backend="cpu")
    verdict.reward_settings.mode = pb.REWARD_MODE_ROOFLINE if mode == "roofline" else pb.REWARD_MODE_SPEEDUP
    verdict.reward_settings.partial_credit = partial
    verdict.device.id = "cpu"
    verdict.device.backend = "cpu"
    verdict.compile.success = "SYNTAX" not in source
    verdict.compile.arch = "sm_90"
    verdict.compile.kernels.add(name="add", registers_per_thread=10)
    if "SYNTAX" in source:
        verdict.stage = "compile"
        verdict.error = "1 error: expected a ';'"
        verdict.compile.log = 'kernel.cu(3): error: expected a ";"\n1 error detected'
        verdict.compile.diagnostics.add(severity="error", line=3, column=10, message='expected a ";"')
        verdict.compile.ClearField("kernels")
    elif "CRASH" in source:
        verdict.stage = "runtime"
        verdict.error = "illegal memory access"
    elif "HANG" in source:
        verdict.stage = "timeout"
        verdict.error = "killed after 10 s"
    elif "LATE" in source:
        verdict.stage = "not_evaluated"
        verdict.error = "not evaluated: the group's deadline came before this candidate's correctness run"
        verdict.flags.append("not_evaluated")
    elif "WRONG" in source:
        verdict.stage = "correctness"
        verdict.error = "output c: 1000 of 1000 elements differ"
        check = verdict.correctness.checks.add(
            output="c", shape_label="odd", trial=0, passed=False, elements=1000, mismatches=1000,
            max_abs_error=2.0, max_rel_error=1.0, atol=1e-5, rtol=1e-5,
        )
        check.shape["N"] = 1000
        check.first_mismatch.flat_index = 0
        check.first_mismatch.index.append(0)
        check.first_mismatch.got = -0.5
        check.first_mismatch.expected = 1.5
        verdict.correctness.shapes_checked = 1
        verdict.correctness.trials_run = 1
    else:
        verdict.correct = True
        verdict.stage = "passed"
        verdict.speedup = 0.5 if "SLOW" in source else 2.0
        verdict.roofline_frac = 0.0 if "SLOW" in source else 0.25
        verdict.correctness.passed = True
        verdict.timing.emulated = True
        verdict.timing.candidate.samples = 10
        verdict.timing.candidate.median_us = 50.0
        verdict.timing.reference.samples = 10
        verdict.timing.reference.median_us = 100.0 if "SLOW" not in source else 25.0
    verdict.reward = seed_reward(verdict.correct, verdict.stage, verdict.speedup, verdict.roofline_frac, mode, partial)
    return verdict


class FakeKernelEval(pb.KernelEvalServicer):
    def __init__(self, token: Optional[str] = None, name: str = "fake"):
        self.token = token
        self.name = name
        self.calls: list[Call] = []
        self._scripts: dict[str, collections.deque] = collections.defaultdict(collections.deque)
        self._lock = threading.Lock()
        self._ids = 0
        self.max_source_bytes = 1 << 20  # the real server's default (server/validation.h)

    # -------------------------------------------------------------- scripting

    def script(self, method: str, *behaviours: Any) -> None:
        with self._lock:
            self._scripts[method].extend(behaviours)

    def calls_to(self, method: str) -> list[Call]:
        with self._lock:
            return [c for c in self.calls if c.method == method]

    def _begin(self, method: str, request: Any, context: grpc.ServicerContext) -> Optional[Any]:
        metadata = {k: v for k, v in context.invocation_metadata()}
        with self._lock:
            self.calls.append(Call(method, request, metadata))
            behaviour = self._scripts[method].popleft() if self._scripts[method] else None
            self._ids += 1
            request_id = metadata.get("x-request-id") or f"{self.name}-{self._ids}"
        if self.token is not None and metadata.get("authorization") != f"Bearer {self.token}":
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token")
        if isinstance(behaviour, Abort):
            if behaviour.headers:
                context.send_initial_metadata((("x-request-id", request_id),))
            context.abort(behaviour.code, behaviour.details)
        context.send_initial_metadata((("x-request-id", request_id),))
        if isinstance(behaviour, Sleep):
            time.sleep(behaviour.seconds)
            return None
        if callable(behaviour):
            return behaviour(request, context)
        return None

    # ------------------------------------------------------------------ RPCs

    def Evaluate(self, request, context):
        scripted = self._begin("Evaluate", request, context)
        if scripted is not None:
            return scripted
        problem_id = request.problem_id or request.problem.id
        self._check_problem(problem_id, context)
        self._check_source(request.submission.source, "submission.source", context)
        verdict = grade(problem_id, request.submission.source, request.reward)
        if request.HasField("seed"):
            verdict.seed = request.seed
        return pb.EvaluateResponse(verdict=verdict)

    def EvaluateStream(self, request, context):
        scripted = self._begin("EvaluateStream", request, context)
        if scripted is not None:
            yield from scripted
            return
        self._check_problem(request.problem_id, context)
        verdict = grade(request.problem_id, request.submission.source, request.reward)
        yield pb.EvaluateEvent(queued=pb.EvaluateEvent.Queued(position=0, device="cpu"))
        yield pb.EvaluateEvent(compiled=pb.EvaluateEvent.Compiled(compile=verdict.compile))
        if verdict.compile.success:
            yield pb.EvaluateEvent(correctness=pb.EvaluateEvent.CorrectnessDone(correctness=verdict.correctness))
        if verdict.correct:
            yield pb.EvaluateEvent(timing=pb.EvaluateEvent.TimingProgress(samples=5, elapsed_seconds=0.01))
        yield pb.EvaluateEvent(verdict=verdict)

    def EvaluateGroup(self, request, context):
        scripted = self._begin("EvaluateGroup", request, context)
        if scripted is not None:
            return scripted
        self._check_problem(request.problem_id, context)
        if not request.submissions:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "submissions: empty")
        for index, submission in enumerate(request.submissions):
            self._check_source(submission.source, f"submissions[{index}].source", context)
        response = pb.EvaluateGroupResponse(
            verdicts=[grade(request.problem_id, s.source, request.reward) for s in request.submissions]
        )
        response.reference_timing.samples = 10
        response.reference_timing.median_us = 100.0
        return response

    def Compile(self, request, context):
        scripted = self._begin("Compile", request, context)
        if scripted is not None:
            return scripted
        verdict = grade("", request.source, pb.RewardSettings())
        result = verdict.compile
        result.options.extend(request.options.options)
        if request.include_ptx and result.success:
            result.ptx = ".version 8.0"
        return pb.CompileResponse(result=result)

    def ListProblems(self, request, context):
        scripted = self._begin("ListProblems", request, context)
        if scripted is not None:
            return scripted
        response = pb.ListProblemsResponse()
        for problem_id, (title, _, _, _, tags) in PROBLEMS.items():
            if not request.tag or request.tag in tags:
                response.problems.add(id=problem_id, title=title, tags=tags)
        return response

    def GetProblem(self, request, context):
        scripted = self._begin("GetProblem", request, context)
        if scripted is not None:
            return scripted
        self._check_problem(request.problem_id, context)
        title, description, signature, launch, tags = PROBLEMS[request.problem_id]
        problem = pb.Problem(id=request.problem_id, title=title, description=description, tags=tags)
        problem.parameters.add(name="N", description="elements")
        prompt = f"{description}\n\nSignature: {signature}\n\nExample: {launch}"
        return pb.GetProblemResponse(problem=problem, signature=signature, example_launch=launch, prompt=prompt)

    def ListDevices(self, request, context):
        scripted = self._begin("ListDevices", request, context)
        if scripted is not None:
            return scripted
        device = pb.DeviceInfo(id="cpu", backend="cpu", name="host CPU", ready=True)
        return pb.ListDevicesResponse(devices=[device])

    def _check_source(self, source: str, field: str, context: grpc.ServicerContext) -> None:
        size = len(source.encode("utf-8"))
        if size == 0:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"{field}: empty")
        if size > self.max_source_bytes:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                          f"{field}: {size} bytes exceeds the {self.max_source_bytes}-byte limit")

    def _check_problem(self, problem_id: str, context: grpc.ServicerContext) -> None:
        if problem_id not in PROBLEMS:
            context.abort(grpc.StatusCode.NOT_FOUND, f"problem {problem_id!r}: not found")


class FakeServer:
    """A FakeKernelEval served on 127.0.0.1:<free port>."""

    def __init__(self, token: Optional[str] = None, name: str = "fake", port: int = 0,
                 tls: Optional[tuple[bytes, bytes]] = None):
        """tls: (private key PEM, certificate chain PEM) to serve TLS."""
        self.servicer = FakeKernelEval(token=token, name=name)
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=16))
        pb.add_KernelEvalServicer_to_server(self.servicer, self.server)
        # grpc.health.v1.Health/Check on raw bytes: {service name: status number}.
        self.health = {"": 1, pb.SERVICE_NAME: 1}
        self.server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
            "grpc.health.v1.Health", {"Check": grpc.unary_unary_rpc_method_handler(self._health_check)}),))
        if tls is None:
            self.port = self.server.add_insecure_port(f"127.0.0.1:{port}")
        else:
            self.port = self.server.add_secure_port(f"127.0.0.1:{port}", grpc.ssl_server_credentials([tls]))
        self.target = f"127.0.0.1:{self.port}"
        self.server.start()

    def _health_check(self, request: bytes, context: grpc.ServicerContext) -> bytes:
        service = request[2:].decode() if request else ""  # short names: one length byte
        if service not in self.health:
            context.abort(grpc.StatusCode.NOT_FOUND, "unknown service")
        return bytes([0x08, self.health[service]])

    def stop(self) -> None:
        self.server.stop(grace=None)


def free_port() -> int:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


Behaviour = Callable[[Any, grpc.ServicerContext], Any]
