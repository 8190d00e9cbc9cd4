"""An OpenEnv environment over a kerneleval server (needs the `openenv` extra).

An episode is one problem: reset(problem_id="softmax") returns the problem's
prompt (description, signature, an example `// @launch` line); every step
submits a kernel and returns the verdict as an observation carrying the seed
rubric's fields (`correct`, `stage`, `speedup`, `roofline_frac`), the reward,
and `feedback` for the next turn (the compiler log, the first mismatch, ...).
The episode ends after `max_turns` steps, or at the first correct kernel when
`stop_on_correct` (the default).

    from kerneleval.openenv_env import KernelEvalEnvironment, KernelAction
    env = KernelEvalEnvironment(target="localhost:50051")
    obs = env.reset(problem_id="vector_add")
    obs = env.step(KernelAction(source=kernel_source))
    print(obs.correct, obs.stage, obs.reward, obs.feedback)

Served the OpenEnv way (HTTP /reset, /step, /state, /schema, /health and the
/ws session endpoint, multi-turn over one WebSocket):

    uvicorn --factory kerneleval.openenv_env:create_app --port 8000
    # or: kerneleval-openenv --port 8000 --server localhost:50051

and used from Python with KernelEvalEnvClient (an openenv EnvClient).

Rewards: the server's `Verdict.reward` under the reward settings sent with each
request; pass `rubric=` (e.g. the seed's kernel_rubric()) to score the
observation with an OpenEnv rubric instead. `speedup` and `roofline_frac` are
None where the server measured none (the seed rubric reads both with Python
truthiness, so None and 0 score alike).
"""

from __future__ import annotations

import argparse
import functools
import os
from typing import Any, Optional

try:
    from openenv.core import EnvClient
    from openenv.core.client_types import StepResult
    from openenv.core.env_server import Action, Environment, Observation, State
    from openenv.core.env_server import create_app as _openenv_create_app
    from pydantic import Field
except ImportError as error:  # pragma: no cover - only without the extra
    raise ImportError(
        f"kerneleval.openenv_env needs openenv-core ({error}): pip install 'kerneleval[openenv]'"
    ) from error

from kerneleval.client import Client
from kerneleval.errors import KernelEvalError
from kerneleval.extract import extract_source
from kerneleval.results import Verdict

DEFAULT_FEEDBACK_CHARS = 4000


class KernelAction(Action):
    """A kernel submission: CUDA C++ device code with `// @launch` directives, or
    a model's whole answer (the code block is extracted when it has ``` fences)."""

    source: str = Field(description="CUDA C++ device code, or text with a ```cuda block")
    problem_id: Optional[str] = Field(
        default=None,
        description="Problem to grade against; defaults to the episode's (needed for stateless HTTP /step)",
    )


class KernelObservation(Observation):
    """What the agent sees. At reset: the problem; after a step: the verdict."""

    problem_id: str = Field(default="", description="The episode's problem")
    prompt: str = Field(default="", description="Description + signature + launch syntax (reset)")
    description: str = Field(default="")
    signature: str = Field(default="", description="Inputs, outputs and parameters")
    example_launch: str = Field(default="", description="An example // @launch line")
    # The seed rubric's fields.
    correct: bool = Field(default=False)
    stage: str = Field(default="", description='"compile" | "runtime" | "timeout" | "correctness" | "passed"')
    speedup: Optional[float] = Field(default=None, description="t_ref / t_new; None = not measured")
    roofline_frac: Optional[float] = Field(default=None, description="t_min / t_new; None = unknown")
    error: str = Field(default="", description="One line on what failed")
    feedback: str = Field(default="", description="Text for the next turn: log, mismatch, timing")
    compile_log: str = Field(default="")
    turn: int = Field(default=0, description="Steps taken in this episode")
    max_turns: int = Field(default=0)
    verdict: Optional[dict[str, Any]] = Field(default=None, description="The full verdict (CLI JSON)")


class KernelState(State):
    problem_id: str = ""
    max_turns: int = 0
    best_reward: float = 0.0
    solved: bool = False
    last_stage: str = ""


def _shape_text(shape: dict[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(shape.items()))


def _truncate(text: str, limit: int) -> str:
    if limit <= 0 or len(text) <= limit:
        return text
    return text[:limit] + f"\n... ({len(text) - limit} more characters)"


def feedback_for(verdict: Verdict, limit: int = DEFAULT_FEEDBACK_CHARS) -> str:
    """A readable account of a verdict for the model's next turn."""
    stage = verdict.stage
    lines: list[str] = []
    if verdict.correct:
        line = "Correct."
        if "emulated_speed_not_rewarded" in verdict.flags:
            # speedup is 1 by the server's rule, not by measurement: give the measurement.
            if verdict.time_us and verdict.reference_time_us:
                line += (
                    f" Measured speedup {verdict.reference_time_us / verdict.time_us:.3g}x over the reference"
                    f" on CPU emulation (median {verdict.time_us:.4g} us vs {verdict.reference_time_us:.4g} us)."
                )
            line += " CPU-emulated speed is not rewarded (scored as 1x)."
        elif verdict.speedup:
            line += f" Speedup {verdict.speedup:.3g}x over the reference"
            if verdict.time_us and verdict.reference_time_us:
                line += f" (median {verdict.time_us:.4g} us vs {verdict.reference_time_us:.4g} us)"
            line += "."
        if verdict.roofline_frac:
            line += f" {100 * verdict.roofline_frac:.3g}% of the hardware roofline."
        lines.append(line)
        if verdict.timing is not None and verdict.timing.emulated:
            lines.append("(Timed on the CPU backend: CPU times, not GPU times.)")
    elif stage == "compile":
        lines.append(f"Compilation failed: {verdict.error}")
        if verdict.compile is not None and verdict.compile.log.strip():
            lines.append("Compiler log:\n" + verdict.compile.log.strip())
    elif stage == "correctness":
        lines.append(f"Wrong output: {verdict.error}")
        report = verdict.correctness
        if report is not None:
            if report.inputs_modified:
                lines.append(f"The kernel modified its input {report.modified_input!r}; inputs are read-only.")
            check = report.first_failure
            if check is not None:
                text = (
                    f"Output {check.output!r}, shape {check.shape_label!r} ({_shape_text(check.shape)}), "
                    f"trial {check.trial}: {check.mismatches} of {check.elements} elements differ; "
                    f"max abs error {check.max_abs_error:.4g}, max rel error {check.max_rel_error:.4g} "
                    f"(atol {check.atol:g}, rtol {check.rtol:g})."
                )
                mismatch = check.first_mismatch
                if mismatch is not None:
                    index = list(mismatch.index) or [mismatch.flat_index]
                    text += f" First mismatch at index {index}: got {mismatch.got!r}, expected {mismatch.expected!r}."
                lines.append(text)
    elif stage == "timeout":
        lines.append(f"Timed out: {verdict.error}")
    elif stage == "runtime":
        lines.append(f"Runtime error: {verdict.error}")
    else:
        lines.append(f"{stage or 'Not graded'}: {verdict.error}")
    if not verdict.correct and verdict.compile is not None and stage != "compile":
        warnings = [d for d in verdict.compile.diagnostics if d.severity == "warning"]
        if warnings:
            lines.append("Compiler warnings: " + "; ".join(f"line {d.line}: {d.message}" for d in warnings[:5]))
    return _truncate("\n".join(lines), limit)


def observation_from_verdict(verdict: Verdict, **fields: Any) -> KernelObservation:
    """The observation of one graded step (reward left to the caller)."""
    return KernelObservation(
        problem_id=verdict.problem_id,
        correct=verdict.correct,
        stage=verdict.stage,
        speedup=verdict.speedup,
        roofline_frac=verdict.roofline_frac,
        error=verdict.error,
        compile_log=verdict.compile.log if verdict.compile is not None else "",
        verdict=verdict.to_dict(),
        **fields,
    )


class KernelEvalEnvironment(Environment[KernelAction, KernelObservation, KernelState]):
    """Multi-turn kernel writing against a kerneleval server (module docstring)."""

    SUPPORTS_CONCURRENT_SESSIONS = True  # no shared state but the thread-safe client

    def __init__(
        self,
        client: Optional[Client] = None,
        *,
        target: Optional[str] = None,
        token: Optional[str] = None,
        tls: Any = False,
        problem_id: Optional[str] = None,
        max_turns: int = 4,
        stop_on_correct: bool = True,
        reward_mode: Optional[str] = None,
        partial_credit: Optional[bool] = None,
        backend: Optional[str] = None,
        limits: Optional[dict[str, Any]] = None,
        timeout: Optional[float] = None,
        extract_code: bool = True,
        feedback_chars: int = DEFAULT_FEEDBACK_CHARS,
        fix_inputs: bool = False,
        rubric: Any = None,
        transform: Any = None,
    ):
        """
        client: a shared Client (not closed by close()); else one is made from
            target/token/tls ($KERNELEVAL_SERVER / $KERNELEVAL_TOKEN by default).
        problem_id: the default problem of reset() and of steps without one.
        reward_mode, partial_credit, backend, limits: sent with every evaluation.
        timeout: deadline of each call [s]; a step's timeout_s overrides it; None:
            the client's default.
        fix_inputs: reset(seed=...) fixes the evaluation inputs of the episode (to
            reproduce one). Off by default: frameworks pass episode seeds routinely, and on
            inputs that do not change a policy can fit its answers to the expected values
            its feedback shows (four turns sufficed for mse_loss without doing the work).
            Off, the server draws secret inputs for every step.
        rubric: an OpenEnv Rubric scoring (action, observation); None: the server's reward.
        """
        super().__init__(transform=transform, rubric=rubric)
        self._owns_client = client is None
        self._client = client if client is not None else Client(target, token=token, tls=tls)
        self._default_problem = problem_id
        self._max_turns = max(1, int(max_turns))
        self._stop_on_correct = stop_on_correct
        self._reward_mode = reward_mode
        self._partial_credit = partial_credit
        self._backend = backend
        self._limits = limits
        self._timeout = timeout
        self._extract_code = extract_code
        self._feedback_chars = feedback_chars
        self._fix_inputs = fix_inputs
        self._seed: Optional[int] = None
        self._state = KernelState(problem_id=problem_id or "", max_turns=self._max_turns)

    @property
    def client(self) -> Client:
        return self._client

    @property
    def state(self) -> KernelState:
        return self._state

    def reset(
        self,
        seed: Optional[int] = None,
        episode_id: Optional[str] = None,
        problem_id: Optional[str] = None,
        **kwargs: Any,
    ) -> KernelObservation:
        """Starts an episode on `problem_id` (else the default problem). A `seed`
        fixes the evaluation inputs for the whole episode only when the environment
        was made with fix_inputs=True; otherwise the server draws secret ones per
        evaluation and the seed is not used (the environment has no randomness of
        its own)."""
        self._reset_rubric()
        problem_id = problem_id or self._default_problem
        if not problem_id:
            raise ValueError("kerneleval: reset needs a problem_id (or a default problem_id for the environment)")
        self._seed = seed if self._fix_inputs else None
        info = self._client.problem(problem_id, **self._timeout_kwargs(None))
        self._state = KernelState(
            episode_id=episode_id,
            step_count=0,
            problem_id=info.id or problem_id,
            max_turns=self._max_turns,
        )
        observation = KernelObservation(
            problem_id=info.id or problem_id,
            prompt=info.prompt,
            description=info.description,
            signature=info.signature,
            example_launch=info.example_launch,
            turn=0,
            max_turns=self._max_turns,
            done=False,
            reward=None,
            metadata={"title": info.title, "tags": list(info.tags)},
        )
        return self._apply_transform(observation)

    def _timeout_kwargs(self, timeout_s: Optional[float]) -> dict[str, Any]:
        timeout = timeout_s if timeout_s is not None else self._timeout
        return {"timeout": timeout} if timeout is not None else {}  # else the client's default

    def _source_of(self, action: KernelAction) -> Optional[str]:
        if self._extract_code and "```" in action.source:
            return extract_source(action.source)
        return action.source if action.source.strip() else None

    def step(self, action: KernelAction, timeout_s: Optional[float] = None, **kwargs: Any) -> KernelObservation:
        problem_id = action.problem_id or self._state.problem_id or self._default_problem
        self._state.step_count += 1
        turn = self._state.step_count
        common = {"turn": turn, "max_turns": self._max_turns}
        if problem_id and not self._state.problem_id:
            self._state.problem_id = problem_id
        if not problem_id:
            observation = KernelObservation(
                error="no problem: call reset(problem_id=...) first, or set action.problem_id",
                done=True,
                reward=0.0,
                **common,
            )
            return self._apply_transform(observation)

        source = self._source_of(action)
        if source is None:
            observation = KernelObservation(
                problem_id=problem_id,
                error="no kernel source in the action",
                feedback="No code found: answer with the kernel in a ```cuda code block.",
                **common,
            )
        else:
            try:
                verdict = self._client.evaluate(
                    problem_id,
                    source,
                    reward_mode=self._reward_mode,
                    partial_credit=self._partial_credit,
                    backend=self._backend,
                    seed=self._seed,
                    limits=self._limits,
                    **self._timeout_kwargs(timeout_s),
                )
            except KernelEvalError as error:
                observation = KernelObservation(
                    problem_id=problem_id,
                    error=f"server error: {error}",
                    feedback=f"The kernel could not be graded: {error}",
                    metadata={"server_error": error.code.name, "request_id": error.request_id},
                    **common,
                )
            else:
                observation = observation_from_verdict(
                    verdict,
                    feedback=feedback_for(verdict, self._feedback_chars),
                    metadata={"request_id": verdict.request_id, "flags": list(verdict.flags)},
                    **common,
                )
                observation.problem_id = verdict.problem_id or problem_id
                observation.reward = verdict.reward

        if self.rubric is not None:
            observation.reward = self._apply_rubric(action, observation)
        elif observation.reward is None:
            observation.reward = 0.0
        observation.done = turn >= self._max_turns or (observation.correct and self._stop_on_correct)

        self._state.last_stage = observation.stage
        self._state.solved = self._state.solved or observation.correct
        self._state.best_reward = max(self._state.best_reward, float(observation.reward or 0.0))
        return self._apply_transform(observation)

    def close(self) -> None:
        if self._owns_client:
            self._client.close()


class KernelEvalEnvClient(EnvClient[KernelAction, KernelObservation, KernelState]):
    """An openenv EnvClient for a served KernelEvalEnvironment (one WebSocket
    session per client: multi-turn episodes).

        with KernelEvalEnvClient(base_url="http://localhost:8000").sync() as env:
            result = env.reset(problem_id="softmax")
            result = env.step(KernelAction(source=...))
    """

    def _step_payload(self, action: KernelAction) -> dict[str, Any]:
        return action.model_dump(exclude_none=True)

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[KernelObservation]:
        observation = KernelObservation(
            **payload.get("observation", {}),
            reward=payload.get("reward"),
            done=payload.get("done", False),
        )
        return StepResult(observation=observation, reward=payload.get("reward"), done=payload.get("done", False))

    def _parse_state(self, payload: dict[str, Any]) -> KernelState:
        return KernelState(**payload)


def create_app(
    target: Optional[str] = None,
    token: Optional[str] = None,
    tls: Any = False,
    *,
    client: Optional[Client] = None,
    max_concurrent_envs: Optional[int] = None,
    **env_kwargs: Any,
):
    """The FastAPI app serving KernelEvalEnvironment (openenv's create_app): one
    environment per WebSocket session, all sharing one Client. Defaults come
    from the environment: KERNELEVAL_SERVER, KERNELEVAL_TOKEN,
    KERNELEVAL_MAX_CONCURRENT_ENVS (64), KERNELEVAL_PROBLEM (default problem)."""
    shared = client if client is not None else Client(target, token=token, tls=tls)
    if "problem_id" not in env_kwargs and os.environ.get("KERNELEVAL_PROBLEM"):
        env_kwargs["problem_id"] = os.environ["KERNELEVAL_PROBLEM"]
    if max_concurrent_envs is None:
        max_concurrent_envs = int(os.environ.get("KERNELEVAL_MAX_CONCURRENT_ENVS", "64"))
    factory = functools.partial(KernelEvalEnvironment, shared, **env_kwargs)
    return _openenv_create_app(
        factory,
        KernelAction,
        KernelObservation,
        env_name="kerneleval",
        max_concurrent_envs=max_concurrent_envs,
    )


def main(argv: Optional[list[str]] = None) -> None:
    """kerneleval-openenv: serve the environment with uvicorn."""
    parser = argparse.ArgumentParser(description="Serve the kerneleval OpenEnv environment")
    parser.add_argument("--host", default="0.0.0.0")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--server", default=None, help="kerneleval server (default $KERNELEVAL_SERVER or localhost:50051)")
    parser.add_argument("--token", default=None, help="bearer token (default $KERNELEVAL_TOKEN)")
    parser.add_argument("--tls-ca", default=None, help="PEM CA file: connect with TLS")
    parser.add_argument("--problem", default=None, help="default problem id")
    parser.add_argument("--max-turns", type=int, default=4)
    parser.add_argument("--reward-mode", choices=["speedup", "roofline"], default=None)
    parser.add_argument("--partial-credit", action=argparse.BooleanOptionalAction, default=None)
    parser.add_argument("--max-concurrent-envs", type=int, default=None)
    parser.add_argument(
        "--fix-inputs",
        action="store_true",
        help="reset's seed fixes the episode's evaluation inputs (to reproduce one; not for training)",
    )
    args = parser.parse_args(argv)

    import uvicorn

    env_kwargs: dict[str, Any] = {"max_turns": args.max_turns}
    if args.problem:
        env_kwargs["problem_id"] = args.problem
    if args.fix_inputs:
        env_kwargs["fix_inputs"] = True
    app = create_app(
        args.server,
        args.token,
        args.tls_ca or False,
        max_concurrent_envs=args.max_concurrent_envs,
        reward_mode=args.reward_mode,
        partial_credit=args.partial_credit,
        **env_kwargs,
    )
    uvicorn.run(app, host=args.host, port=args.port)


if __name__ == "__main__":
    main()
