"""A GRPO reward function (TRL's GRPOTrainer convention) backed by a kerneleval server.

    from kerneleval.rewards import kernel_reward           # $KERNELEVAL_SERVER, $KERNELEVAL_TOKEN
    trainer = GRPOTrainer(model=..., reward_funcs=[kernel_reward], train_dataset=dataset, ...)

The dataset needs a `problem_id` column (a built-in problem id, e.g. "softmax");
TRL passes every extra column to reward functions as a keyword argument holding
one value per completion.

For each call: the kernel source is extracted from every completion
(kerneleval.extract.extract_source: the last closed ```cuda/```cpp/```c++/```
block by default); runs of consecutive completions with the same problem id
(TRL puts a prompt's num_generations completions next to each other) go to the
server as one EvaluateGroup each, so a group shares one reference measurement;
different problems' groups are sent concurrently. The reward of a completion is
the server's `Verdict.reward` under the reward settings sent with the request
(the seed rubric: 0 unless correct, then the speed score; partial credit when
enabled).

A full server queue (RESOURCE_EXHAUSTED, refused before any work) is asked
again with backoff for up to `busy_retry_seconds`.

One bad completion does not sink its group: a source that cannot be sent (not
encodable as UTF-8, e.g. a lone surrogate; larger than `max_source_bytes`) is
left out of the group before sending, and when the server still refuses a
group naming one submission (INVALID_ARGUMENT "submissions[i]..."), that one is
left out and the rest are sent again (at most once per completion).

It never raises: a completion without code or with a source the server refuses,
and every completion of a group the server could not judge (unreachable, bad
request, ...), get `failure_reward` (0.0) and a logged reason (logger
"kerneleval.rewards"), so one bad batch does not kill a training run. The last
call's verdicts (None where there was none) are kept in
`reward_fn.last_verdicts` for logging.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Optional, Sequence

import grpc

from kerneleval import _requests
from kerneleval._requests import utf8_problem
from kerneleval.client import Client
from kerneleval.errors import KernelEvalError, ResourceExhausted
from kerneleval.extract import extract_source
from kerneleval.results import NOT_EVALUATED, Verdict

logger = logging.getLogger("kerneleval.rewards")

RewardFunction = Callable[..., list[float]]

# The server's default limit on each submitted source, in UTF-8 bytes: the C++
# `RequestLimits::max_source_bytes` (server/validation.h, `size_t{1} << 20`),
# set by kerneleval-server --max-source-bytes / $KERNELEVAL_MAX_SOURCE_BYTES
# (server/config.cc). A server started with a smaller limit still refuses a
# source by name, and the reward function then leaves just that one out.
DEFAULT_MAX_SOURCE_BYTES = 1 << 20

# The field the server names when it refuses one submission of a group,
# e.g. "submissions[0].source: 2000224 bytes exceeds the 1048576-byte limit"
# (server/validation.cc and evaluator/engine/engine.cc, EvaluateGroup).
_SUBMISSION_FIELD_RE = re.compile(r"\bsubmissions\[(\d+)\]")


def unsendable_reason(source: str, max_source_bytes: Optional[int] = DEFAULT_MAX_SOURCE_BYTES) -> Optional[str]:
    """Why the server would refuse `source` as a submission (None: it would
    take it): empty, not encodable as UTF-8 (protobuf strings are UTF-8; a lone
    surrogate such as "\\ud800" cannot be sent), or over max_source_bytes UTF-8
    bytes (None: no size check here)."""
    try:
        size = len(source.encode("utf-8"))
    except UnicodeEncodeError:
        return utf8_problem(source)
    if size == 0:
        return "empty source"
    if max_source_bytes is not None and size > max_source_bytes:
        return f"{size} bytes exceeds the {max_source_bytes}-byte limit"
    return None


def _refused_submission(error: KernelEvalError, count: int) -> Optional[int]:
    """The index of the submission an INVALID_ARGUMENT names, if it names one
    of the `count` sent."""
    if error.code != grpc.StatusCode.INVALID_ARGUMENT:
        return None
    match = _SUBMISSION_FIELD_RE.search(error.details or "")
    if match is None:
        return None
    index = int(match.group(1))
    return index if index < count else None


def _per_completion(value: Any, count: int, name: str) -> list[Any]:
    """A kwargs column as one value per completion (a scalar is broadcast)."""
    if value is None or isinstance(value, (str, bytes)) or not hasattr(value, "__len__"):
        return [value] * count
    values = list(value)
    if len(values) != count:
        raise ValueError(f"{name} has {len(values)} values for {count} completions")
    return values


def _runs(
    problem_ids: Sequence[Optional[str]], graded: Sequence[bool], max_group_size: int
) -> list[tuple[str, list[int]]]:
    """Runs of consecutive completions with the same problem id (code-less ones
    stay inside a run and are then left out of it), at most max_group_size each."""
    runs: list[tuple[str, list[int]]] = []
    previous: Any = object()
    for index, problem_id in enumerate(problem_ids):
        if problem_id != previous:
            runs.append((problem_id, []))
            previous = problem_id
        if graded[index]:
            runs[-1][1].append(index)
    chunked = []
    for problem_id, indices in runs:
        for start in range(0, len(indices), max_group_size):
            chunked.append((problem_id, indices[start : start + max_group_size]))
    return chunked


# [s] Deadline of a group's evaluation for a client make_kernel_reward makes.
DEFAULT_GROUP_TIMEOUT_SECONDS = 1800.0


def make_kernel_reward(
    client: Optional[Client] = None,
    *,
    target: Optional[str] = None,
    token: Optional[str] = None,
    tls: Any = False,
    reward_mode: Optional[str] = None,
    partial_credit: Optional[bool] = None,
    backend: Optional[str] = None,
    problem_key: str = "problem_id",
    default_problem: Optional[str] = None,
    pick: str = "last",
    max_group_size: int = 128,
    max_concurrency: int = 8,
    timeout: Optional[float] = None,
    limits: Optional[dict[str, Any]] = None,
    compile_options: Optional[Sequence[str]] = None,
    client_id: Optional[str] = None,
    busy_retry_seconds: float = 120.0,
    max_source_bytes: Optional[int] = DEFAULT_MAX_SOURCE_BYTES,
    failure_reward: float = 0.0,
    name: str = "kernel_reward",
) -> RewardFunction:
    """A reward function `fn(prompts, completions, **kwargs) -> list[float]`.

    client: a Client to use; else one is made (lazily, on first call) from
        target/token/tls, which default to $KERNELEVAL_SERVER (localhost:50051)
        and $KERNELEVAL_TOKEN.
    reward_mode: "speedup" | "roofline" | None (the server's default).
    partial_credit: True | False | None (the server's default).
    backend: "auto" | "cuda" | "cpu" | None.
    problem_key: the kwargs column naming each completion's problem;
        default_problem is used where it is missing.
    pick: "last" | "largest" code block (kerneleval.extract).
    max_group_size: split longer runs (the server's --max-group-size, 128).
    max_concurrency: problems' groups in flight at once.
    timeout: deadline of each EvaluateGroup call [s]. The server answers by
        it with what it judged; a completion left unjudged (stage
        "not_evaluated") scores failure_reward, and so does every completion
        of a call that fails. None: the client's default; a client made here has
        DEFAULT_GROUP_TIMEOUT_SECONDS (30 min), so a server that stops
        answering cannot stall the trainer (one that froze or vanished fails
        the call within ~80 s by keepalive anyway).
    limits: EvaluationLimits as a dict, e.g. {"timeout_seconds": 20}.
    busy_retry_seconds: how long to keep asking again, with backoff, when a
        server's queue is full (RESOURCE_EXHAUSTED) before scoring the group
        failure_reward; 0: never.
    max_source_bytes: a completion whose source is larger (UTF-8 bytes) gets
        failure_reward without being sent; the server's default limit
        (DEFAULT_MAX_SOURCE_BYTES); None: leave it to the server.
    """
    # Bad settings raise here, at once: inside the reward function they would
    # only score every completion failure_reward.
    _requests.reward_settings(reward_mode, partial_credit)
    _requests.backend_value(backend)
    lock = threading.Lock()
    state: dict[str, Any] = {"client": client}

    def get_client() -> Client:
        with lock:
            if state["client"] is None:
                state["client"] = Client(target, token=token, tls=tls, timeout=DEFAULT_GROUP_TIMEOUT_SECONDS)
            return state["client"]

    def evaluate_run(problem_id: str, sources: list[str], give_up: float) -> list[Verdict]:
        """One EvaluateGroup, asked again while the queue is full until give_up
        (time.monotonic())."""
        call_timeout = {"timeout": timeout} if timeout is not None else {}  # else the client's default
        delay = 0.5
        while True:
            try:
                result = get_client().evaluate_group(
                    problem_id,
                    sources,
                    reward_mode=reward_mode,
                    partial_credit=partial_credit,
                    backend=backend,
                    limits=limits,
                    compile_options=compile_options,
                    client_id=client_id,
                    **call_timeout,
                )
                break
            except ResourceExhausted as error:
                # A full queue refuses at once, before any work: safe to ask again
                # (with balancing, the next server in turn). A message over the
                # transport limit is not worth repeating.
                if "larger than" in error.details or time.monotonic() + delay > give_up:
                    raise
                logger.info("kernel_reward: problem %r: %s; retrying in %.1f s", problem_id, error.details, delay)
                time.sleep(delay)
                delay = min(2 * delay, 10.0)
        if len(result.verdicts) != len(sources):
            raise RuntimeError(f"the server sent {len(result.verdicts)} verdicts for {len(sources)} submissions")
        return result.verdicts

    def reward_fn(prompts: Any = None, completions: Any = None, **kwargs: Any) -> list[float]:
        completions = list(completions or [])
        count = len(completions)
        rewards = [float(failure_reward)] * count
        verdicts: list[Optional[Verdict]] = [None] * count
        reward_fn.last_verdicts = verdicts  # type: ignore[attr-defined]
        if count == 0:
            return rewards
        try:
            problem_ids = _per_completion(kwargs.get(problem_key, default_problem), count, problem_key)
        except ValueError as error:
            logger.error("kernel_reward: %s; every completion gets %s", error, failure_reward)
            return rewards
        problem_ids = [p if p else default_problem for p in problem_ids]

        sources: list[Optional[str]] = []
        for index, completion in enumerate(completions):
            try:
                source = extract_source(completion, pick=pick)
            except Exception as error:  # noqa: BLE001 - a reward function must not raise
                logger.warning("kernel_reward: completion %d: extraction failed: %s", index, error)
                source = None
            if source is None:
                logger.info("kernel_reward: completion %d: no code block; reward %s", index, failure_reward)
            elif not problem_ids[index]:
                logger.warning(
                    "kernel_reward: completion %d: no problem id (kwargs[%r]); reward %s",
                    index, problem_key, failure_reward,
                )
                source = None
            else:
                reason = unsendable_reason(source, max_source_bytes)
                if reason is not None:
                    # Left out of its group, so the others are still judged.
                    logger.warning(
                        "kernel_reward: completion %d (%s): source not sent: %s; reward %s",
                        index, problem_ids[index], reason, failure_reward,
                    )
                    source = None
            sources.append(source)

        runs = _runs(problem_ids, [s is not None for s in sources], max(1, max_group_size))

        def grade(run: tuple[str, list[int]]) -> None:
            problem_id, pending = run[0], list(run[1])
            give_up = time.monotonic() + busy_retry_seconds  # one busy window for the whole group
            # Each pass either ends or leaves out one completion the server
            # refused by name: at most len(pending) calls.
            while True:
                try:
                    run_verdicts = evaluate_run(problem_id, [sources[i] for i in pending], give_up)  # type: ignore[misc]
                    break
                except KernelEvalError as error:
                    request = f" (request {error.request_id})" if error.request_id else ""
                    refused = _refused_submission(error, len(pending))
                    if refused is None:
                        logger.warning(
                            "kernel_reward: problem %r, %d completions: server error %s%s; reward %s",
                            problem_id, len(pending), error, request, failure_reward,
                        )
                        return
                    index = pending.pop(refused)
                    logger.warning(
                        "kernel_reward: completion %d (%s): refused by the server: %s%s; reward %s%s",
                        index, problem_id, error, request, failure_reward,
                        f"; sending the other {len(pending)} again" if pending else "",
                    )
                    if not pending:
                        return
                except Exception as error:  # noqa: BLE001
                    logger.exception(
                        "kernel_reward: problem %r, %d completions: %s; reward %s",
                        problem_id, len(pending), error, failure_reward,
                    )
                    return
            for index, verdict in zip(pending, run_verdicts):
                verdicts[index] = verdict
                if verdict.stage == NOT_EVALUATED:
                    # The group's deadline came before this one was judged:
                    # no verdict on the kernel, scored as a failed call.
                    logger.warning(
                        "kernel_reward: completion %d (%s): %s; reward %s",
                        index, problem_id, verdict.error, failure_reward,
                    )
                    continue
                rewards[index] = float(verdict.reward)
                if not verdict.correct:
                    logger.debug(
                        "kernel_reward: completion %d (%s): stage %s: %s; reward %s",
                        index, problem_id, verdict.stage, verdict.error, verdict.reward,
                    )

        if len(runs) == 1:
            grade(runs[0])
        elif runs:
            with ThreadPoolExecutor(max_workers=max(1, min(max_concurrency, len(runs)))) as pool:
                list(pool.map(grade, runs))
        return rewards

    reward_fn.__name__ = name
    reward_fn.__qualname__ = name
    reward_fn.last_verdicts = []  # type: ignore[attr-defined]
    reward_fn.get_client = get_client  # type: ignore[attr-defined]
    return reward_fn


_default: Optional[RewardFunction] = None
_default_lock = threading.Lock()


# Spellings of KERNELEVAL_PARTIAL_CREDIT, as the C++ side reads its boolean
# KERNELEVAL_* variables (CLI11 flags: 1/true/yes/on, 0/false/no/off).
_TRUE_SPELLINGS = ("1", "true", "yes", "on")
_FALSE_SPELLINGS = ("0", "false", "no", "off")


def reward_settings_from_env() -> tuple[Optional[str], Optional[bool]]:
    """(reward_mode, partial_credit) from the environment; None where unset
    (then the server's default applies).

    Mode: $KERNELEVAL_REWARD_MODE, else the rubric's $KERNEL_ENV_REWARD.
    Partial credit: $KERNELEVAL_PARTIAL_CREDIT (1/true/yes/on or 0/false/no/off,
    any case; anything else raises ValueError), else the rubric's
    $KERNEL_ENV_PARTIAL_CREDIT, on iff exactly "1" (the seed's rule, which the
    server and the CLI apply to that variable too)."""
    mode = os.environ.get("KERNELEVAL_REWARD_MODE") or None
    if mode is not None:
        # Ours: any case, as reward_settings() takes it; anything else raises
        # here, not on the first request (where it would score every
        # completion failure_reward).
        if mode.strip().lower() not in ("speedup", "roofline"):
            raise ValueError(f"KERNELEVAL_REWARD_MODE={mode!r}: expected speedup or roofline")
        mode = mode.strip().lower()
    elif "KERNEL_ENV_REWARD" in os.environ:
        # The seed's: matched exactly; set but empty, another case or spaces
        # are the seed's KeyError, as on the server and the CLI.
        mode = os.environ["KERNEL_ENV_REWARD"]
        if mode not in ("speedup", "roofline"):
            raise ValueError(f"KERNEL_ENV_REWARD={mode!r}: the rubric knows only 'speedup' and 'roofline'")
    own = os.environ.get("KERNELEVAL_PARTIAL_CREDIT")
    if own not in (None, ""):
        value = own.strip().lower()
        if value in _TRUE_SPELLINGS:
            return mode, True
        if value in _FALSE_SPELLINGS:
            return mode, False
        raise ValueError(
            f"KERNELEVAL_PARTIAL_CREDIT={own!r}: expected one of "
            f"{', '.join(_TRUE_SPELLINGS + _FALSE_SPELLINGS)}"
        )
    rubric = os.environ.get("KERNEL_ENV_PARTIAL_CREDIT")
    return mode, None if rubric is None else rubric == "1"


def kernel_reward(prompts: Any = None, completions: Any = None, **kwargs: Any) -> list[float]:
    """The reward function with the environment's settings: server
    $KERNELEVAL_SERVER (default localhost:50051), token $KERNELEVAL_TOKEN, and
    the reward settings of reward_settings_from_env() ($KERNELEVAL_REWARD_MODE
    or $KERNEL_ENV_REWARD; $KERNELEVAL_PARTIAL_CREDIT or
    $KERNEL_ENV_PARTIAL_CREDIT; unset: the server's defaults), read on the
    first call. Use make_kernel_reward for more."""
    global _default
    with _default_lock:
        if _default is None:
            reward_mode, partial_credit = reward_settings_from_env()
            _default = make_kernel_reward(
                target=os.environ.get("KERNELEVAL_SERVER") or None,
                token=os.environ.get("KERNELEVAL_TOKEN") or None,
                reward_mode=reward_mode,
                partial_credit=partial_credit,
            )
    rewards = _default(prompts, completions, **kwargs)
    kernel_reward.last_verdicts = _default.last_verdicts  # type: ignore[attr-defined]
    return rewards
