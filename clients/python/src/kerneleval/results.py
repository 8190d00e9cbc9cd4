"""Typed results: plain dataclasses built from the kerneleval.v1 messages.

Every result keeps the message it came from in `raw` (not shown in repr, not
compared) and `to_dict()` prints that message the way the `kerneleval` CLI's
--json does: proto field names (`wall_seconds`, not `wallSeconds`) and every
field without presence printed even at its default, so `d["correct"]` is never
missing. int64/uint64 fields are strings there, as in any proto JSON.

Fields follow the .proto (proto/kerneleval/v1/kerneleval.proto); the one
deliberate difference: `Verdict.speedup` and `Verdict.roofline_frac` are None
where the message carries 0 ("not measured" / "unknown").
"""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass, field
from typing import Any, ClassVar, Iterator, Optional, Union

from google.protobuf import json_format
from google.protobuf.message import Message

from kerneleval import pb

_TO_DICT_DEFAULTS = (
    # protobuf >= 26 renamed including_default_value_fields.
    {"always_print_fields_with_no_presence": True}
    if "always_print_fields_with_no_presence" in inspect.signature(json_format.MessageToDict).parameters
    else {"including_default_value_fields": True}
)


def message_to_dict(message: Message) -> dict[str, Any]:
    """A message as the CLI's JSON (see the module docstring)."""
    return json_format.MessageToDict(message, preserving_proto_field_name=True, **_TO_DICT_DEFAULTS)


_REWARD_MODE_NAMES = {
    pb.REWARD_MODE_UNSPECIFIED: "",
    pb.REWARD_MODE_SPEEDUP: "speedup",
    pb.REWARD_MODE_ROOFLINE: "roofline",
}


@dataclass
class _Result:
    """Conversion from a message: fields of the same name; `_nested` names the
    message-typed ones (`(cls, True)` for repeated), `_presence` the optional ones."""

    _nested: ClassVar[dict[str, tuple[type, bool]]] = {}
    _presence: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def from_proto(cls, message: Message):
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            if f.name == "raw" or not f.init:
                continue
            if f.name in cls._presence:
                values[f.name] = getattr(message, f.name) if message.HasField(f.name) else None
                continue
            value = getattr(message, f.name)
            if f.name in cls._nested:
                nested_cls, repeated = cls._nested[f.name]
                if repeated:
                    value = [nested_cls.from_proto(item) for item in value]
                else:
                    value = nested_cls.from_proto(value) if message.HasField(f.name) else None
            elif hasattr(value, "items"):
                value = dict(value.items())
            elif hasattr(value, "__len__") and not isinstance(value, (str, bytes)):
                value = list(value)
            values[f.name] = value
        return cls(**values, raw=message)

    def to_dict(self) -> dict[str, Any]:
        """The CLI's JSON of the message this came from."""
        if self.raw is not None:  # type: ignore[attr-defined]
            return message_to_dict(self.raw)  # type: ignore[attr-defined]
        return dataclasses.asdict(self)


def _raw() -> Any:
    return field(default=None, repr=False, compare=False)


@dataclass
class Diagnostic(_Result):
    severity: str = ""  # "error" | "warning" | "note"
    line: int = 0  # 1-based, in the submitted source
    column: int = 0  # 1-based; 0 if unknown
    message: str = ""
    raw: Optional[Message] = _raw()


@dataclass
class KernelParam(_Result):
    name: str = ""
    type: str = ""
    size_bytes: int = 0
    offset_bytes: int = 0
    is_pointer: bool = False
    raw: Optional[Message] = _raw()


@dataclass
class KernelInfo(_Result):
    """Resource usage of one __global__ function (ptxas / the CUBIN)."""

    name: str = ""
    mangled_name: str = ""
    registers_per_thread: int = 0
    static_shared_bytes: int = 0
    local_bytes: int = 0
    spill_store_bytes: int = 0
    spill_load_bytes: int = 0
    constant_bytes: int = 0
    params: list[KernelParam] = field(default_factory=list)
    max_threads_per_block: int = 0
    name_expression: str = ""  # the template instance it is, e.g. "scale<float, 4>"; "" if none
    raw: Optional[Message] = _raw()

    _nested: ClassVar[dict[str, tuple[type, bool]]] = {"params": (KernelParam, True)}


@dataclass
class CompileResult(_Result):
    success: bool = False
    log: str = ""  # line numbers refer to the submitted source
    diagnostics: list[Diagnostic] = field(default_factory=list)
    kernels: list[KernelInfo] = field(default_factory=list)
    arch: str = ""
    ptx: str = ""
    cubin: bytes = b""
    compile_seconds: float = 0.0  # [s], 0 on a cache hit
    cache_hit: bool = False
    toolkit_version: str = ""
    options: list[str] = field(default_factory=list)
    uses_device_malloc: bool = False  # the GPU worker is replaced after such a request
    # Module-scope __device__ variables (PTX names), kerneleval's prelude
    # constants included; the GPU worker hides them from the other programs
    # timed with this one and zeros them before unloading.
    device_globals: list[str] = field(default_factory=list)
    raw: Optional[Message] = _raw()

    _nested: ClassVar[dict[str, tuple[type, bool]]] = {
        "diagnostics": (Diagnostic, True),
        "kernels": (KernelInfo, True),
    }

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "error"]


@dataclass
class Mismatch(_Result):
    flat_index: int = 0
    index: list[int] = field(default_factory=list)  # per dimension
    got: float = 0.0
    expected: float = 0.0
    raw: Optional[Message] = _raw()


@dataclass
class OutputCheck(_Result):
    output: str = ""
    shape_label: str = ""
    shape: dict[str, int] = field(default_factory=dict)
    trial: int = 0
    passed: bool = False
    elements: int = 0
    mismatches: int = 0
    max_abs_error: float = 0.0
    max_rel_error: float = 0.0
    atol: float = 0.0
    rtol: float = 0.0
    first_mismatch: Optional[Mismatch] = None
    raw: Optional[Message] = _raw()

    _nested: ClassVar[dict[str, tuple[type, bool]]] = {"first_mismatch": (Mismatch, False)}


@dataclass
class CorrectnessReport(_Result):
    passed: bool = False
    shapes_checked: int = 0
    trials_run: int = 0
    inputs_modified: bool = False
    modified_input: str = ""
    checks: list[OutputCheck] = field(default_factory=list)  # the first failing one first
    notes: list[str] = field(default_factory=list)  # e.g. a PTX JIT fallback
    raw: Optional[Message] = _raw()

    _nested: ClassVar[dict[str, tuple[type, bool]]] = {"checks": (OutputCheck, True)}

    @property
    def first_failure(self) -> Optional[OutputCheck]:
        return next((c for c in self.checks if not c.passed), None)


@dataclass
class TimingStats(_Result):
    samples: int = 0
    median_us: float = 0.0  # [µs]
    mean_us: float = 0.0
    stdev_us: float = 0.0
    min_us: float = 0.0
    max_us: float = 0.0
    rel_stderr_median: float = 0.0
    total_seconds: float = 0.0  # [s] spent sampling
    raw: Optional[Message] = _raw()


@dataclass
class TimingReport(_Result):
    reference: Optional[TimingStats] = None
    candidate: Optional[TimingStats] = None
    emulated: bool = False  # CPU backend: CPU times, not GPU times
    shape: dict[str, int] = field(default_factory=dict)
    flops: float = 0.0
    bytes: float = 0.0
    roofline_min_us: float = 0.0  # 0 = unknown
    sm_clock_mhz: float = 0.0
    sm_clock_min_mhz: float = 0.0
    throttled: bool = False
    converged: bool = False
    input_sets: int = 0
    notes: list[str] = field(default_factory=list)  # what was dropped or changed while timing
    raw: Optional[Message] = _raw()

    _nested: ClassVar[dict[str, tuple[type, bool]]] = {
        "reference": (TimingStats, False),
        "candidate": (TimingStats, False),
    }


@dataclass
class DeviceInfo(_Result):
    id: str = ""  # "cuda:0" or "cpu"
    backend: str = ""  # "cuda" | "cpu"
    name: str = ""
    compute_capability_major: int = 0
    compute_capability_minor: int = 0
    sm_count: int = 0
    memory_bytes: int = 0
    l2_bytes: int = 0
    sm_clock_mhz: float = 0.0
    memory_clock_mhz: float = 0.0
    roofline_known: bool = False
    peaks: Optional[dict[str, Any]] = None  # the matched peak-table row (proto JSON), when known
    measured_bandwidth_bytes_per_second: float = 0.0
    measured_fp32_flops_per_second: float = 0.0
    queue_depth: int = 0
    ready: bool = False
    raw: Optional[Message] = _raw()

    @classmethod
    def from_proto(cls, message: Message) -> "DeviceInfo":
        result = super().from_proto(message)
        result.peaks = message_to_dict(message.peaks) if message.HasField("peaks") else None
        return result


@dataclass
class RewardSettings(_Result):
    mode: str = ""  # "speedup" | "roofline" | "" (the server's default)
    partial_credit: Optional[bool] = None  # None: the server's default
    raw: Optional[Message] = _raw()

    @classmethod
    def from_proto(cls, message: Message) -> "RewardSettings":
        return cls(
            mode=_REWARD_MODE_NAMES.get(message.mode, str(message.mode)),
            partial_credit=message.partial_credit if message.HasField("partial_credit") else None,
            raw=message,
        )


# Verdict.stage of a group's candidate its deadline left unjudged (flag
# "not_evaluated", reward 0): no verdict on the kernel; leave it out of
# training or send it again.
NOT_EVALUATED = "not_evaluated"


@dataclass
class Verdict(_Result):
    """The grade of one submission. `correct`, `stage`, `speedup` and
    `roofline_frac` are the seed rubric's observation fields; `reward` is the
    server's score of them under `reward_settings`."""

    kind: ClassVar[str] = "verdict"  # as the last event of evaluate_stream

    correct: bool = False
    # "compile" | "runtime" | "timeout" | "correctness" for failures, "passed";
    # in a group also NOT_EVALUATED (no verdict: its deadline came first).
    stage: str = ""
    speedup: Optional[float] = None  # t_ref / t_new on medians; None = not measured
    roofline_frac: Optional[float] = None  # t_min / t_new; None = unknown
    reward: float = 0.0
    error: str = ""  # one readable line on what failed; empty when passed
    compile: Optional[CompileResult] = None
    correctness: Optional[CorrectnessReport] = None
    timing: Optional[TimingReport] = None
    reward_settings: Optional[RewardSettings] = None
    problem_id: str = ""
    backend: str = ""
    device: Optional[DeviceInfo] = None
    seed: Optional[int] = None  # only when the caller fixed it
    flags: list[str] = field(default_factory=list)
    request_id: str = ""
    wall_seconds: float = 0.0
    deduplicated: bool = False
    raw: Optional[Message] = _raw()

    _nested: ClassVar[dict[str, tuple[type, bool]]] = {
        "compile": (CompileResult, False),
        "correctness": (CorrectnessReport, False),
        "timing": (TimingReport, False),
        "reward_settings": (RewardSettings, False),
        "device": (DeviceInfo, False),
    }
    _presence: ClassVar[tuple[str, ...]] = ("seed",)

    @classmethod
    def from_proto(cls, message: Message) -> "Verdict":
        result = super().from_proto(message)
        result.speedup = message.speedup or None
        result.roofline_frac = message.roofline_frac or None
        return result

    @property
    def kernels(self) -> list[KernelInfo]:
        """Resource usage per kernel (registers, shared memory, spills)."""
        return self.compile.kernels if self.compile else []

    @property
    def time_us(self) -> Optional[float]:
        """Median candidate time [µs] (CPU time on the CPU backend), if timed."""
        stats = self.timing.candidate if self.timing else None
        return stats.median_us if stats and stats.samples else None

    @property
    def reference_time_us(self) -> Optional[float]:
        stats = self.timing.reference if self.timing else None
        return stats.median_us if stats and stats.samples else None


@dataclass
class GroupResult(_Result):
    """EvaluateGroup's answer: one verdict per submission, in order. Iterable and
    indexable like the list of verdicts."""

    verdicts: list[Verdict] = field(default_factory=list)
    reference_timing: Optional[TimingStats] = None
    raw: Optional[Message] = _raw()

    _nested: ClassVar[dict[str, tuple[type, bool]]] = {
        "verdicts": (Verdict, True),
        "reference_timing": (TimingStats, False),
    }

    def __iter__(self) -> Iterator[Verdict]:
        return iter(self.verdicts)

    def __len__(self) -> int:
        return len(self.verdicts)

    def __getitem__(self, index: int) -> Verdict:
        return self.verdicts[index]

    @property
    def rewards(self) -> list[float]:
        return [v.reward for v in self.verdicts]


@dataclass
class ProblemSummary(_Result):
    id: str = ""
    title: str = ""
    tags: list[str] = field(default_factory=list)
    raw: Optional[Message] = _raw()


@dataclass
class ProblemInfo:
    """GetProblem's answer. `prompt` is what a model is asked with (description,
    signature, launch syntax); `problem` the full pb.Problem (shapes, tolerances,
    reference source)."""

    id: str = ""
    title: str = ""
    description: str = ""
    tags: list[str] = field(default_factory=list)
    parameters: dict[str, str] = field(default_factory=dict)  # name -> description
    signature: str = ""
    example_launch: str = ""
    prompt: str = ""
    problem: Optional[Message] = field(default=None, repr=False, compare=False)
    raw: Optional[Message] = _raw()

    @classmethod
    def from_proto(cls, message: Message) -> "ProblemInfo":
        problem = message.problem
        return cls(
            id=problem.id,
            title=problem.title,
            description=problem.description,
            tags=list(problem.tags),
            parameters={p.name: p.description for p in problem.parameters},
            signature=message.signature,
            example_launch=message.example_launch,
            prompt=message.prompt,
            problem=problem,
            raw=message,
        )

    def to_dict(self) -> dict[str, Any]:
        return message_to_dict(self.raw) if self.raw is not None else dataclasses.asdict(self)


# ------------------------------------------------------------------ events


@dataclass
class Queued(_Result):
    kind: ClassVar[str] = "queued"
    position: int = 0
    device: str = ""
    raw: Optional[Message] = _raw()


@dataclass
class Compiled(_Result):
    kind: ClassVar[str] = "compiled"
    compile: Optional[CompileResult] = None
    raw: Optional[Message] = _raw()

    _nested: ClassVar[dict[str, tuple[type, bool]]] = {"compile": (CompileResult, False)}


@dataclass
class CorrectnessDone(_Result):
    kind: ClassVar[str] = "correctness"
    correctness: Optional[CorrectnessReport] = None
    raw: Optional[Message] = _raw()

    _nested: ClassVar[dict[str, tuple[type, bool]]] = {"correctness": (CorrectnessReport, False)}


@dataclass
class TimingProgress(_Result):
    kind: ClassVar[str] = "timing"
    samples: int = 0
    elapsed_seconds: float = 0.0
    raw: Optional[Message] = _raw()


@dataclass
class UnknownEvent:
    """An event of a newer server than this client knows."""

    kind: ClassVar[str] = "unknown"
    raw: Optional[Message] = _raw()

    def to_dict(self) -> dict[str, Any]:
        return message_to_dict(self.raw) if self.raw is not None else {}


Event = Union[Queued, Compiled, CorrectnessDone, TimingProgress, Verdict, UnknownEvent]

_EVENT_TYPES: dict[str, type] = {
    "queued": Queued,
    "compiled": Compiled,
    "correctness": CorrectnessDone,
    "timing": TimingProgress,
    "verdict": Verdict,
}


def event_from_proto(message: Message) -> Event:
    """pb.EvaluateEvent -> Queued | Compiled | CorrectnessDone | TimingProgress | Verdict."""
    which = message.WhichOneof("event")
    event_cls = _EVENT_TYPES.get(which or "")
    if event_cls is None:
        return UnknownEvent(raw=message)
    return event_cls.from_proto(getattr(message, which))
