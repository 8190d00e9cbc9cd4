"""The GRPO reward function against the fake server: grouping, concurrency,
code-less completions and server errors (never an exception)."""

from __future__ import annotations

import logging
import threading
import time

import grpc
import pytest
from fake_server import Abort, Sleep

from kerneleval import Client, pb
from kerneleval import rewards as rewards_module
from kerneleval.rewards import kernel_reward, make_kernel_reward
from conftest import VECTOR_ADD


def fenced(source: str) -> str:
    body = source if source.endswith("\n") else source + "\n"
    return f"Here you go:\n```cuda\n{body}```\n"


def test_one_group_per_run_of_a_problem(fake):
    reward = make_kernel_reward(client=Client(fake.target), reward_mode="speedup", partial_credit=True)
    completions = [fenced(VECTOR_ADD), fenced("WRONG"), fenced("SYNTAX"), fenced("SLOW")]
    rewards = reward(["p"] * 4, completions, problem_id=["vector_add"] * 4)
    assert rewards == pytest.approx([1.3, 0.05, 0.0, 0.1])
    calls = fake.servicer.calls_to("EvaluateGroup")
    assert len(calls) == 1
    request = calls[0].request
    assert request.problem_id == "vector_add" and len(request.submissions) == 4
    assert request.reward.mode == pb.REWARD_MODE_SPEEDUP and request.reward.partial_credit
    assert [v.stage for v in reward.last_verdicts] == ["passed", "correctness", "compile", "passed"]
    assert reward.__name__ == "kernel_reward"


def test_a_kernel_the_groups_deadline_left_unjudged_scores_failure_reward(fake, caplog):
    # Its verdict (stage "not_evaluated", reward 0) is no verdict on the
    # kernel: it scores what a failed call scores, and the judged ones keep
    # theirs.
    reward = make_kernel_reward(client=Client(fake.target), partial_credit=True, failure_reward=-1.0)
    completions = [fenced(VECTOR_ADD), fenced("HANG"), fenced("LATE 1"), fenced("LATE 2")]
    with caplog.at_level(logging.WARNING, logger="kerneleval"):
        rewards = reward(["p"] * 4, completions, problem_id=["vector_add"] * 4)
    assert rewards == pytest.approx([1.3, 0.02, -1.0, -1.0])
    assert [v.stage for v in reward.last_verdicts] == ["passed", "timeout", "not_evaluated", "not_evaluated"]
    assert "completion 2 (vector_add): not evaluated" in caplog.text


def test_consecutive_runs_and_concurrency_across_problems(fake):
    # Each group takes 0.3 s on the server: sequential would take >= 0.9 s.
    fake.servicer.script("EvaluateGroup", Sleep(0.3), Sleep(0.3), Sleep(0.3))
    reward = make_kernel_reward(client=Client(fake.target))
    ids = ["vector_add", "vector_add", "softmax", "softmax", "vector_add"]
    completions = [fenced(VECTOR_ADD), fenced("WRONG"), fenced(VECTOR_ADD), fenced("SLOW"), fenced(VECTOR_ADD)]
    start = time.monotonic()
    rewards = reward(None, completions, problem_id=ids)
    elapsed = time.monotonic() - start
    assert rewards == pytest.approx([1.3, 0.0, 1.3, 0.1, 1.3])
    groups = sorted(
        (c.request.problem_id, len(c.request.submissions)) for c in fake.servicer.calls_to("EvaluateGroup")
    )
    assert groups == [("softmax", 2), ("vector_add", 1), ("vector_add", 2)]
    assert elapsed < 0.8, f"groups were not sent concurrently ({elapsed:.2f} s)"


def test_code_less_completions_get_zero_and_stay_out_of_the_group(fake, caplog):
    reward = make_kernel_reward(client=Client(fake.target))
    completions = [fenced(VECTOR_ADD), "I don't know.", fenced(VECTOR_ADD), "```python\nx = 1\n```"]
    with caplog.at_level(logging.INFO, logger="kerneleval.rewards"):
        rewards = reward(None, completions, problem_id=["vector_add"] * 4)
    assert rewards == pytest.approx([1.3, 0.0, 1.3, 0.0])
    calls = fake.servicer.calls_to("EvaluateGroup")
    assert len(calls) == 1 and len(calls[0].request.submissions) == 2  # one group despite the gap
    assert "completion 1: no code block" in caplog.text and "completion 3: no code block" in caplog.text
    assert reward.last_verdicts[1] is None and reward.last_verdicts[2].correct


def test_chat_completions(fake):
    reward = make_kernel_reward(client=Client(fake.target))
    completions = [[{"role": "assistant", "content": fenced(VECTOR_ADD)}], [{"role": "assistant", "content": "no"}]]
    assert reward([[{"role": "user", "content": "write"}]] * 2, completions, problem_id=["vector_add"] * 2) == [
        pytest.approx(1.3),
        0.0,
    ]


def test_server_error_gives_zero_and_a_logged_reason(fake, caplog):
    fake.servicer.script("EvaluateGroup", Abort(grpc.StatusCode.INVALID_ARGUMENT, "submissions: too many", headers=True))
    reward = make_kernel_reward(client=Client(fake.target))
    with caplog.at_level(logging.WARNING, logger="kerneleval.rewards"):
        rewards = reward(None, [fenced(VECTOR_ADD)] * 2, problem_id=["vector_add"] * 2)
    assert rewards == [0.0, 0.0]
    assert "INVALID_ARGUMENT: submissions: too many" in caplog.text
    assert "(request fake-" in caplog.text


def test_one_failing_problem_does_not_sink_the_others(fake):
    reward = make_kernel_reward(client=Client(fake.target))
    rewards = reward(None, [fenced(VECTOR_ADD), fenced(VECTOR_ADD)], problem_id=["no_such_problem", "vector_add"])
    assert rewards == pytest.approx([0.0, 1.3])


def test_unreachable_server_never_raises(fake, caplog):
    port = fake.port
    fake.stop()
    reward = make_kernel_reward(target=f"127.0.0.1:{port}", timeout=5)
    with caplog.at_level(logging.WARNING, logger="kerneleval.rewards"):
        assert reward(None, [fenced(VECTOR_ADD)], problem_id=["vector_add"]) == [0.0]
    assert "UNAVAILABLE" in caplog.text


def test_bad_kwargs_never_raise(fake, caplog):
    reward = make_kernel_reward(client=Client(fake.target))
    assert reward(None, [fenced(VECTOR_ADD)] * 2, problem_id=["vector_add"]) == [0.0, 0.0]  # wrong length
    assert reward(None, [fenced(VECTOR_ADD)]) == [0.0]  # no problem id at all
    assert reward(None, []) == []
    assert fake.servicer.calls_to("EvaluateGroup") == []
    # A scalar problem id applies to every completion; default_problem fills gaps.
    assert reward(None, [fenced(VECTOR_ADD)] * 2, problem_id="vector_add") == pytest.approx([1.3, 1.3])
    with_default = make_kernel_reward(client=Client(fake.target), default_problem="vector_add")
    assert with_default(None, [fenced(VECTOR_ADD)], problem_id=[None]) == pytest.approx([1.3])


def test_groups_are_split_at_max_group_size(fake):
    reward = make_kernel_reward(client=Client(fake.target), max_group_size=3)
    rewards = reward(None, [fenced(VECTOR_ADD)] * 7, problem_id=["vector_add"] * 7)
    assert rewards == pytest.approx([1.3] * 7)
    sizes = sorted(len(c.request.submissions) for c in fake.servicer.calls_to("EvaluateGroup"))
    assert sizes == [1, 3, 3]


def test_settings_are_sent(fake):
    reward = make_kernel_reward(
        client=Client(fake.target), reward_mode="roofline", partial_credit=False, backend="cpu",
        limits={"timeout_seconds": 9}, compile_options=["--use_fast_math"], client_id="run-7", problem_key="task",
    )
    assert reward(None, [fenced(VECTOR_ADD)], task=["vector_add"]) == pytest.approx([0.3 + 2.7 * 0.25])
    request = fake.servicer.calls_to("EvaluateGroup")[0].request
    assert request.reward.mode == pb.REWARD_MODE_ROOFLINE and not request.reward.partial_credit
    assert request.backend == pb.BACKEND_CPU and request.limits.timeout_seconds == 9
    assert request.client_id == "run-7"
    assert list(request.submissions[0].compile_options.options) == ["--use_fast_math"]


def test_default_kernel_reward_reads_the_environment(fake_factory, monkeypatch):
    server = fake_factory(token="tok")
    monkeypatch.setenv("KERNELEVAL_SERVER", server.target)
    monkeypatch.setenv("KERNELEVAL_TOKEN", "tok")
    monkeypatch.setenv("KERNELEVAL_REWARD_MODE", "speedup")
    monkeypatch.setenv("KERNELEVAL_PARTIAL_CREDIT", "1")
    monkeypatch.setattr(rewards_module, "_default", None)
    assert kernel_reward([], [fenced("WRONG")], problem_id=["vector_add"]) == pytest.approx([0.05])
    request = server.servicer.calls_to("EvaluateGroup")[0].request
    assert request.reward.partial_credit and request.reward.mode == pb.REWARD_MODE_SPEEDUP
    assert kernel_reward.last_verdicts[0].stage == "correctness"
    monkeypatch.setattr(rewards_module, "_default", None)


def test_default_kernel_reward_reads_the_rubrics_variables(fake_factory, monkeypatch):
    server = fake_factory()
    monkeypatch.setenv("KERNELEVAL_SERVER", server.target)
    monkeypatch.setenv("KERNEL_ENV_REWARD", "roofline")
    monkeypatch.setenv("KERNEL_ENV_PARTIAL_CREDIT", "1")
    monkeypatch.setattr(rewards_module, "_default", None)
    kernel_reward([], [fenced("WRONG")], problem_id=["vector_add"])
    request = server.servicer.calls_to("EvaluateGroup")[0].request
    assert request.reward.mode == pb.REWARD_MODE_ROOFLINE
    assert request.reward.HasField("partial_credit") and request.reward.partial_credit
    monkeypatch.setattr(rewards_module, "_default", None)


@pytest.mark.parametrize(
    "env, expected",
    [
        ({}, (None, None)),
        ({"KERNELEVAL_PARTIAL_CREDIT": "true"}, (None, True)),
        ({"KERNELEVAL_PARTIAL_CREDIT": "Yes"}, (None, True)),
        ({"KERNELEVAL_PARTIAL_CREDIT": "on"}, (None, True)),
        ({"KERNELEVAL_PARTIAL_CREDIT": "off"}, (None, False)),
        ({"KERNELEVAL_PARTIAL_CREDIT": "0", "KERNEL_ENV_PARTIAL_CREDIT": "1"}, (None, False)),
        # The rubric's variable keeps the seed's rule, as the server and CLI read it.
        ({"KERNEL_ENV_PARTIAL_CREDIT": "1"}, (None, True)),
        ({"KERNEL_ENV_PARTIAL_CREDIT": "true"}, (None, False)),
        ({"KERNEL_ENV_REWARD": "roofline"}, ("roofline", None)),
        ({"KERNELEVAL_REWARD_MODE": "speedup", "KERNEL_ENV_REWARD": "roofline"}, ("speedup", None)),
        # Ours takes any case; it also overrides a rubric variable the seed refuses.
        ({"KERNELEVAL_REWARD_MODE": " Roofline"}, ("roofline", None)),
        ({"KERNELEVAL_REWARD_MODE": "speedup", "KERNEL_ENV_REWARD": ""}, ("speedup", None)),
    ],
)
def test_reward_settings_from_env(monkeypatch, env, expected):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert rewards_module.reward_settings_from_env() == expected


def test_reward_settings_from_env_refuses_an_unknown_boolean(monkeypatch):
    monkeypatch.setenv("KERNELEVAL_PARTIAL_CREDIT", "maybe")
    with pytest.raises(ValueError, match="KERNELEVAL_PARTIAL_CREDIT"):
        rewards_module.reward_settings_from_env()


@pytest.mark.parametrize(
    "env",
    [
        # The seed's rubric raises KeyError for each: the mode is looked up exactly.
        {"KERNEL_ENV_REWARD": ""},
        {"KERNEL_ENV_REWARD": "Roofline"},
        {"KERNEL_ENV_REWARD": "speedup "},
        {"KERNEL_ENV_REWARD": "fastest"},
        {"KERNELEVAL_REWARD_MODE": "fastest"},
    ],
)
def test_an_unknown_reward_mode_raises_rather_than_scoring_zeros(fake, monkeypatch, env):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match="REWARD"):
        rewards_module.reward_settings_from_env()
    monkeypatch.setenv("KERNELEVAL_SERVER", fake.target)
    monkeypatch.setattr(rewards_module, "_default", None)
    with pytest.raises(ValueError):
        kernel_reward([], [fenced(VECTOR_ADD)], problem_id=["vector_add"])
    assert not fake.servicer.calls_to("EvaluateGroup")
    monkeypatch.setattr(rewards_module, "_default", None)


def test_make_kernel_reward_refuses_bad_settings_when_made(fake):
    with pytest.raises(ValueError, match="reward mode"):
        make_kernel_reward(client=Client(fake.target), reward_mode="fastest")
    with pytest.raises(ValueError, match="backend"):
        make_kernel_reward(client=Client(fake.target), backend="tpu")


def test_reward_function_is_safe_to_call_from_threads(fake):
    reward = make_kernel_reward(client=Client(fake.target))
    results = []

    def work() -> None:
        results.append(reward(None, [fenced(VECTOR_ADD)], problem_id=["vector_add"]))

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [pytest.approx([1.3])] * 8


def test_the_clients_default_deadline_applies(fake, caplog):
    fake.servicer.script("EvaluateGroup", Sleep(1.0))
    reward = make_kernel_reward(client=Client(fake.target, timeout=0.2))
    with caplog.at_level(logging.WARNING, logger="kerneleval.rewards"):
        assert reward(None, [fenced(VECTOR_ADD)], problem_id=["vector_add"]) == [0.0]
    assert "DEADLINE_EXCEEDED" in caplog.text
    fake.servicer.script("EvaluateGroup", Sleep(0.4))
    patient = make_kernel_reward(client=Client(fake.target, timeout=0.2), timeout=5)
    assert patient(None, [fenced(VECTOR_ADD)], problem_id=["vector_add"]) == pytest.approx([1.3])


def test_a_client_the_reward_function_makes_has_a_deadline_and_keepalive(fake, monkeypatch):
    # A server that stops answering must not stall the trainer: a deadline on
    # the group, and keepalive pings that fail the call of a frozen server.
    monkeypatch.setenv("KERNELEVAL_SERVER", fake.target)
    reward = make_kernel_reward()
    assert reward(None, [fenced(VECTOR_ADD)], problem_id=["vector_add"]) == pytest.approx([1.3])
    client = reward.get_client()
    assert client.timeout == rewards_module.DEFAULT_GROUP_TIMEOUT_SECONDS
    from kerneleval import _channel

    options = dict(_channel.channel_options(_channel.plan_channels(fake.target)[0], 4, 1 << 20))
    assert options["grpc.keepalive_time_ms"] == 60_000
    assert options["grpc.keepalive_timeout_ms"] == 20_000
    assert options["grpc.http2.max_pings_without_data"] == 0
    client.close()


def test_a_full_queue_is_asked_again(fake, caplog):
    full = Abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "the queue of cpu is full; retry later", headers=True)
    fake.servicer.script("EvaluateGroup", full, full)
    reward = make_kernel_reward(client=Client(fake.target), busy_retry_seconds=10)
    with caplog.at_level(logging.INFO, logger="kerneleval.rewards"):
        assert reward(None, [fenced(VECTOR_ADD)], problem_id=["vector_add"]) == pytest.approx([1.3])
    assert len(fake.servicer.calls_to("EvaluateGroup")) == 3
    assert "retrying in 0.5 s" in caplog.text and "retrying in 1.0 s" in caplog.text
    fake.servicer.script("EvaluateGroup", full)
    impatient = make_kernel_reward(client=Client(fake.target), busy_retry_seconds=0)
    assert impatient(None, [fenced(VECTOR_ADD)], problem_id=["vector_add"]) == [0.0]
    assert len(fake.servicer.calls_to("EvaluateGroup")) == 4


# A valid kernel the fake scores 0.3 + log2(0.5) clamped = 0.1 ("SLOW"), and
# one it scores 1.3; the bad completion is the first of the group.
def test_an_oversized_completion_scores_zero_and_the_rest_are_judged(fake, caplog):
    huge = fenced(VECTOR_ADD + "// " + "x" * 2_000_000)
    reward = make_kernel_reward(client=Client(fake.target))
    with caplog.at_level(logging.WARNING, logger="kerneleval.rewards"):
        rewards = reward(None, [huge, fenced("SLOW"), fenced(VECTOR_ADD)], problem_id=["vector_add"] * 3)
    assert rewards == pytest.approx([0.0, 0.1, 1.3])
    calls = fake.servicer.calls_to("EvaluateGroup")
    assert len(calls) == 1 and [s.source for s in calls[0].request.submissions] == ["SLOW\n", VECTOR_ADD]
    assert "completion 0 (vector_add): source not sent:" in caplog.text
    assert "exceeds the 1048576-byte limit" in caplog.text
    assert reward.last_verdicts[0] is None and reward.last_verdicts[2].correct


def test_a_completion_that_is_not_utf8_encodable_scores_zero_and_the_rest_are_judged(fake, caplog):
    reward = make_kernel_reward(client=Client(fake.target))
    lone_surrogate = fenced(VECTOR_ADD + "// \ud800")
    with caplog.at_level(logging.WARNING, logger="kerneleval.rewards"):
        rewards = reward(None, [lone_surrogate, fenced("SLOW"), fenced(VECTOR_ADD)], problem_id=["vector_add"] * 3)
    assert rewards == pytest.approx([0.0, 0.1, 1.3])
    assert len(fake.servicer.calls_to("EvaluateGroup")) == 1
    assert "completion 0 (vector_add): source not sent: not encodable as UTF-8" in caplog.text


def test_a_submission_the_server_refuses_by_name_is_left_out_and_the_rest_resent(fake, caplog):
    # The server's limit is smaller than the client's check (--max-source-bytes 400):
    # it names each refused submission in turn; the others are sent again.
    fake.servicer.max_source_bytes = 400
    long_ = fenced(VECTOR_ADD + "// " + "y" * 300)
    reward = make_kernel_reward(client=Client(fake.target))
    ids = ["vector_add"] * 4
    with caplog.at_level(logging.WARNING, logger="kerneleval.rewards"):
        rewards = reward(None, [fenced("SLOW"), long_, fenced("WRONG"), long_], problem_id=ids)
    assert rewards == pytest.approx([0.1, 0.0, 0.0, 0.0])
    sizes = [len(c.request.submissions) for c in fake.servicer.calls_to("EvaluateGroup")]
    assert sizes == [4, 3, 2]
    assert "completion 1 (vector_add): refused by the server: INVALID_ARGUMENT: submissions[1].source" in caplog.text
    assert "completion 3 (vector_add): refused by the server: INVALID_ARGUMENT: submissions[2].source" in caplog.text
    assert [v is None for v in reward.last_verdicts] == [False, True, False, True]


def test_refusals_by_name_are_bounded_by_the_group_size(fake, caplog):
    # A server that keeps naming submissions[0]: one call per completion, then 0.
    refuse = Abort(grpc.StatusCode.INVALID_ARGUMENT, "submissions[0].source: refused", headers=True)
    fake.servicer.script("EvaluateGroup", *[refuse] * 10)
    reward = make_kernel_reward(client=Client(fake.target))
    with caplog.at_level(logging.WARNING, logger="kerneleval.rewards"):
        assert reward(None, [fenced(VECTOR_ADD)] * 3, problem_id=["vector_add"] * 3) == [0.0, 0.0, 0.0]
    assert len(fake.servicer.calls_to("EvaluateGroup")) == 3
    fake.servicer._scripts["EvaluateGroup"].clear()
    # An index outside the group, or another code, is the whole group's failure.
    for details, code in (("submissions[5].source: refused", grpc.StatusCode.INVALID_ARGUMENT),
                          ("submissions[0].source: out of range", grpc.StatusCode.OUT_OF_RANGE)):
        fake.servicer.script("EvaluateGroup", Abort(code, details, headers=True))
        before = len(fake.servicer.calls_to("EvaluateGroup"))
        assert reward(None, [fenced(VECTOR_ADD)] * 2, problem_id=["vector_add"] * 2) == [0.0, 0.0]
        assert len(fake.servicer.calls_to("EvaluateGroup")) == before + 1


def test_a_refusal_by_name_after_a_full_queue_shares_the_busy_window(fake):
    full = Abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "the queue of cpu is full; retry later", headers=True)
    fake.servicer.max_source_bytes = 400
    fake.servicer.script("EvaluateGroup", full)
    reward = make_kernel_reward(client=Client(fake.target), busy_retry_seconds=10)
    long_ = fenced(VECTOR_ADD + "// " + "y" * 300)
    assert reward(None, [long_, fenced(VECTOR_ADD)], problem_id=["vector_add"] * 2) == pytest.approx([0.0, 1.3])
    assert [len(c.request.submissions) for c in fake.servicer.calls_to("EvaluateGroup")] == [2, 2, 1]


def test_the_client_side_size_check_follows_max_source_bytes(fake, caplog):
    reward = make_kernel_reward(client=Client(fake.target), max_source_bytes=100)
    with caplog.at_level(logging.WARNING, logger="kerneleval.rewards"):
        assert reward(None, [fenced(VECTOR_ADD), fenced("SLOW")], problem_id=["vector_add"] * 2) == pytest.approx(
            [0.0, 0.1])
    assert "exceeds the 100-byte limit" in caplog.text
    assert len(fake.servicer.calls_to("EvaluateGroup")[0].request.submissions) == 1
    assert rewards_module.unsendable_reason("x" * (1 << 20)) is None
    assert rewards_module.unsendable_reason("x" * ((1 << 20) + 1)) == "1048577 bytes exceeds the 1048576-byte limit"
    assert rewards_module.unsendable_reason("\u00e9" * 600_000).startswith("1200000 bytes")  # UTF-8 bytes, not characters
    assert rewards_module.unsendable_reason("x" * (2 << 20), None) is None
