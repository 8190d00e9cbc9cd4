"""The OpenEnv environment against the fake server: episodes, feedback, the seed
rubric on its observations, and the served app (HTTP and the /ws session)."""

from __future__ import annotations

import threading
import time

import grpc
import pytest
from fake_server import Abort, free_port

pytest.importorskip("openenv.core")

from openenv.core.env_server import Environment, Observation  # noqa: E402

from kerneleval import Client, Verdict, pb  # noqa: E402
from kerneleval.openenv_env import (  # noqa: E402
    KernelAction,
    KernelEvalEnvClient,
    KernelEvalEnvironment,
    KernelObservation,
    create_app,
    feedback_for,
)
from conftest import VECTOR_ADD  # noqa: E402


@pytest.fixture
def env(fake):
    environment = KernelEvalEnvironment(Client(fake.target), max_turns=3, reward_mode="speedup", partial_credit=True)
    yield environment
    environment.close()


def test_is_an_openenv_environment(env):
    assert isinstance(env, Environment)
    assert issubclass(KernelObservation, Observation)
    assert KernelEvalEnvironment.SUPPORTS_CONCURRENT_SESSIONS


def test_reset_returns_the_problem(env):
    observation = env.reset(problem_id="vector_add", episode_id="e1")
    assert observation.problem_id == "vector_add"
    assert "c = a + b" in observation.prompt and "c = a + b" in observation.description
    assert observation.signature.startswith("inputs:")
    assert observation.example_launch.startswith("// @launch add")
    assert observation.reward is None and not observation.done and observation.turn == 0
    assert env.state.problem_id == "vector_add" and env.state.episode_id == "e1"


def test_multi_turn_episode_with_feedback(env, fake):
    env.reset(problem_id="vector_add")
    compile_error = env.step(KernelAction(source="SYNTAX"))
    assert compile_error.stage == "compile" and not compile_error.correct and compile_error.reward == 0.0
    assert "Compilation failed" in compile_error.feedback and 'expected a ";"' in compile_error.feedback
    assert 'expected a ";"' in compile_error.compile_log
    assert not compile_error.done and compile_error.turn == 1

    wrong = env.step(KernelAction(source="```cuda\nWRONG\n```"))  # a model's answer: extracted
    assert wrong.stage == "correctness" and wrong.reward == pytest.approx(0.05)
    assert "Wrong output" in wrong.feedback
    assert "1000 of 1000 elements differ" in wrong.feedback
    assert "First mismatch at index [0]: got -0.5, expected 1.5" in wrong.feedback
    assert wrong.speedup is None and wrong.roofline_frac is None
    assert fake.servicer.calls_to("Evaluate")[-1].request.submission.source == "WRONG\n"

    correct = env.step(KernelAction(source=VECTOR_ADD))
    assert correct.correct and correct.stage == "passed" and correct.speedup == 2.0
    assert correct.reward == pytest.approx(1.3)
    assert correct.done  # stop_on_correct
    assert "Speedup 2x" in correct.feedback and correct.verdict["stage"] == "passed"
    assert env.state.solved and env.state.best_reward == pytest.approx(1.3) and env.state.step_count == 3

    request = fake.servicer.calls_to("Evaluate")[-1].request
    assert request.problem_id == "vector_add"
    assert request.reward.mode == pb.REWARD_MODE_SPEEDUP and request.reward.partial_credit


def test_feedback_when_emulated_speed_is_not_rewarded():
    # A server without --emulated-speed-reward scores CPU-timed kernels at speedup 1;
    # the feedback gives the measured ratio and says it is not rewarded.
    message = pb.Verdict(correct=True, stage="passed", speedup=1.0, reward=0.3)
    message.flags.extend(["emulated_speed_not_rewarded", "emulated_timing"])
    message.timing.emulated = True
    message.timing.candidate.samples = 5
    message.timing.candidate.median_us = 2629.0
    message.timing.reference.samples = 5
    message.timing.reference.median_us = 865.7
    feedback = feedback_for(Verdict.from_proto(message))
    assert "Speedup 1x" not in feedback
    assert "0.329x" in feedback and "2629 us" in feedback and "865.7 us" in feedback
    assert "not rewarded" in feedback and "scored as 1x" in feedback


def test_episode_ends_after_max_turns(env):
    env.reset(problem_id="vector_add")
    observations = [env.step(KernelAction(source="WRONG")) for _ in range(3)]
    assert [o.done for o in observations] == [False, False, True]


def test_keep_optimizing_after_correct(fake):
    env = KernelEvalEnvironment(Client(fake.target), max_turns=2, stop_on_correct=False)
    env.reset(problem_id="vector_add")
    assert not env.step(KernelAction(source=VECTOR_ADD)).done
    assert env.step(KernelAction(source=VECTOR_ADD)).done


def test_an_episode_seed_fixes_the_inputs_only_when_asked_and_empty_source(env, fake):
    # Frameworks pass episode seeds routinely: by default the server still draws the inputs.
    env.reset(problem_id="vector_add", seed=42)
    observation = env.step(KernelAction(source="   "))
    assert observation.error == "no kernel source in the action" and observation.reward == 0.0
    env.step(KernelAction(source=VECTOR_ADD))
    assert not fake.servicer.calls_to("Evaluate")[-1].request.HasField("seed")

    with Client(fake.target) as client:
        reproducing = KernelEvalEnvironment(client, fix_inputs=True)
        reproducing.reset(problem_id="vector_add", seed=42)
        reproducing.step(KernelAction(source=VECTOR_ADD))
        assert fake.servicer.calls_to("Evaluate")[-1].request.seed == 42
        reproducing.reset(problem_id="vector_add")
        reproducing.step(KernelAction(source=VECTOR_ADD))
        assert not fake.servicer.calls_to("Evaluate")[-1].request.HasField("seed")


def test_server_errors_become_observations(env, fake):
    env.reset(problem_id="vector_add")
    fake.servicer.script("Evaluate", Abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "queue full", headers=True))
    observation = env.step(KernelAction(source=VECTOR_ADD))
    assert observation.error.startswith("server error: RESOURCE_EXHAUSTED") and observation.reward == 0.0
    assert observation.metadata["server_error"] == "RESOURCE_EXHAUSTED"


def test_a_source_with_no_utf8_form_becomes_an_observation(env, fake):
    env.reset(problem_id="vector_add")
    observation = env.step(KernelAction(source=VECTOR_ADD + "\ud800"))
    assert observation.error.startswith("server error: INVALID_ARGUMENT") and observation.reward == 0.0
    assert not fake.servicer.calls_to("Evaluate")


def test_step_without_a_problem(fake):
    env = KernelEvalEnvironment(Client(fake.target))
    observation = env.step(KernelAction(source=VECTOR_ADD))
    assert observation.done and "reset(problem_id" in observation.error
    # A stateless step names its problem.
    assert env.step(KernelAction(source=VECTOR_ADD, problem_id="vector_add")).correct
    with pytest.raises(ValueError):
        KernelEvalEnvironment(Client(fake.target)).reset()


def test_seed_rubric_scores_the_observations(fake, seed_rubric):
    for mode in ("speedup", "roofline"):
        for partial in (False, True):
            plain = KernelEvalEnvironment(Client(fake.target), reward_mode=mode, partial_credit=partial, max_turns=9)
            scored = KernelEvalEnvironment(
                Client(fake.target), reward_mode=mode, partial_credit=partial, max_turns=9,
                rubric=seed_rubric.kernel_rubric(mode, partial),
            )
            plain.reset(problem_id="vector_add")
            scored.reset(problem_id="vector_add")
            for source in (VECTOR_ADD, "SLOW", "WRONG", "CRASH", "HANG", "SYNTAX"):
                server_reward = plain.step(KernelAction(source=source)).reward
                rubric_reward = scored.step(KernelAction(source=source)).reward
                assert rubric_reward == pytest.approx(server_reward, abs=1e-12), (mode, partial, source)


# ------------------------------------------------------------------- served


def test_http_app(fake):
    from fastapi.testclient import TestClient

    app = create_app(client=Client(fake.target), max_turns=2)
    with TestClient(app) as http:
        assert http.get("/health").status_code == 200
        schema = http.get("/schema").json()
        assert "source" in schema["action"]["properties"]
        assert "roofline_frac" in schema["observation"]["properties"]
        reset = http.post("/reset", json={"problem_id": "softmax"}).json()
        assert reset["observation"]["problem_id"] == "softmax" and "softmax" in reset["observation"]["prompt"]
        # HTTP /step is stateless (a fresh environment per request): name the problem.
        step = http.post("/step", json={"action": {"source": VECTOR_ADD, "problem_id": "vector_add"}}).json()
        assert step["reward"] == pytest.approx(1.3) and step["done"] is True
        assert step["observation"]["correct"] is True and step["observation"]["stage"] == "passed"


def test_websocket_session_multi_turn(fake):
    import uvicorn

    port = free_port()
    app = create_app(client=Client(fake.target), max_turns=4, reward_mode="speedup", partial_credit=True)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.started
        with KernelEvalEnvClient(base_url=f"http://127.0.0.1:{port}").sync() as env:
            result = env.reset(problem_id="vector_add")
            assert result.observation.problem_id == "vector_add" and not result.done
            result = env.step(KernelAction(source="WRONG"))
            assert result.observation.stage == "correctness" and result.reward == pytest.approx(0.05)
            assert "Wrong output" in result.observation.feedback and not result.done
            result = env.step(KernelAction(source=VECTOR_ADD))
            assert result.observation.correct and result.done and result.reward == pytest.approx(1.3)
            state = env.state()
            assert state.problem_id == "vector_add" and state.step_count == 2 and state.solved
    finally:
        server.should_exit = True
        thread.join(10)
