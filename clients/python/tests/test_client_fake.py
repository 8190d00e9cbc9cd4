"""Client and AsyncClient against the in-process fake server: every call,
typed results, errors, token, retries, deadlines, streams, groups, balancing."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from pathlib import Path

import grpc
import pytest
from fake_server import Abort, Sleep

import kerneleval
from kerneleval import (
    AsyncClient,
    Client,
    CompileResult,
    Compiled,
    CorrectnessDone,
    DeadlineExceeded,
    InvalidArgument,
    KernelEvalError,
    NotFound,
    Queued,
    ResourceExhausted,
    TimingProgress,
    Unauthenticated,
    Unavailable,
    Verdict,
    pb,
)
from conftest import VECTOR_ADD


def test_evaluate_returns_a_typed_verdict(fake):
    with Client(fake.target) as client:
        verdict = client.evaluate("vector_add", VECTOR_ADD, reward_mode="speedup", partial_credit=False)
    assert isinstance(verdict, Verdict)
    assert verdict.correct and verdict.stage == "passed"
    assert verdict.speedup == 2.0 and verdict.roofline_frac == 0.25
    assert verdict.reward == pytest.approx(1.3)
    assert verdict.time_us == 50.0 and verdict.reference_time_us == 100.0
    assert verdict.kernels[0].name == "add" and verdict.kernels[0].registers_per_thread == 10
    assert verdict.device.id == "cpu"
    assert verdict.reward_settings.mode == "speedup" and verdict.reward_settings.partial_credit is False
    request = fake.servicer.calls_to("Evaluate")[0].request
    assert request.problem_id == "vector_add"
    assert request.submission.source == VECTOR_ADD
    assert request.reward.mode == pb.REWARD_MODE_SPEEDUP
    assert request.reward.HasField("partial_credit") and not request.reward.partial_credit


def test_evaluate_sends_every_setting(fake):
    with Client(fake.target, client_id="trainer-1") as client:
        verdict = client.evaluate(
            "vector_add", VECTOR_ADD,
            compile_options=["--use_fast_math"], arch="sm_90", reward_mode="roofline", partial_credit=True,
            backend="cpu", seed=7, device="cpu", limits={"timeout_seconds": 12.5}, skip_timing=True,
        )
    request = fake.servicer.calls_to("Evaluate")[0].request
    assert list(request.submission.compile_options.options) == ["--use_fast_math"]
    assert request.submission.compile_options.arch == "sm_90"
    assert request.reward.mode == pb.REWARD_MODE_ROOFLINE and request.reward.partial_credit
    assert request.backend == pb.BACKEND_CPU
    assert request.HasField("seed") and request.seed == 7
    assert request.device == "cpu" and request.client_id == "trainer-1"
    assert request.limits.timeout_seconds == 12.5 and request.skip_timing
    assert verdict.seed == 7
    assert verdict.reward == pytest.approx(0.3 + 2.7 * 0.25)  # roofline mode


def test_compile_sends_the_clients_fairness_key(fake):
    # The server's compile pool takes turns by it (it keyed on the peer address).
    with Client(fake.target, client_id="trainer-1") as client:
        client.compile(VECTOR_ADD)
        client.compile(VECTOR_ADD, client_id="trainer-2")
    first, second = (call.request for call in fake.servicer.calls_to("Compile"))
    assert first.client_id == "trainer-1" and second.client_id == "trainer-2"


def test_unset_settings_leave_the_server_defaults(fake):
    with Client(fake.target) as client:
        verdict = client.evaluate("vector_add", VECTOR_ADD)
    request = fake.servicer.calls_to("Evaluate")[0].request
    assert request.reward.mode == pb.REWARD_MODE_UNSPECIFIED
    assert not request.reward.HasField("partial_credit")
    assert not request.HasField("seed") and verdict.seed is None
    assert request.backend == pb.BACKEND_AUTO


def test_failed_stages_are_verdicts_not_exceptions(fake):
    with Client(fake.target) as client:
        compile_error = client.evaluate("vector_add", "SYNTAX", partial_credit=True)
        wrong = client.evaluate("vector_add", "WRONG", partial_credit=True)
        crash = client.evaluate("vector_add", "CRASH", partial_credit=True)
        slow = client.evaluate("vector_add", "SLOW")
    assert (compile_error.stage, compile_error.correct, compile_error.reward) == ("compile", False, 0.0)
    assert compile_error.compile.errors[0].line == 3
    assert wrong.stage == "correctness" and wrong.reward == pytest.approx(0.05)
    check = wrong.correctness.first_failure
    assert check.output == "c" and check.shape == {"N": 1000} and check.first_mismatch.expected == 1.5
    assert crash.stage == "runtime" and crash.reward == pytest.approx(0.02)
    # Not measured -> None, as the seed rubric's truthiness reads it.
    assert wrong.speedup is None and wrong.roofline_frac is None
    assert slow.roofline_frac is None and slow.speedup == 0.5


def test_to_dict_matches_the_cli_json(fake):
    with Client(fake.target) as client:
        verdict = client.evaluate("vector_add", "WRONG")
    data = verdict.to_dict()
    # Proto field names, defaults printed (a script reading .correct finds it).
    assert data["correct"] is False and data["stage"] == "correctness"
    assert data["speedup"] == 0.0 and data["roofline_frac"] == 0.0 and data["deduplicated"] is False
    assert data["flags"] == [] and data["request_id"] == ""
    check = data["correctness"]["checks"][0]
    assert check["max_abs_error"] == 2.0 and check["shape"] == {"N": "1000"}  # int64 as string
    assert check["first_mismatch"]["flat_index"] == "0"
    assert "wallSeconds" not in data and "wall_seconds" in data


def test_problems_problem_devices_compile(fake):
    with Client(fake.target) as client:
        problems = client.problems()
        reductions = client.problems(tag="reduction")
        problem = client.problem("softmax")
        devices = client.devices()
        compiled = client.compile(VECTOR_ADD, options=["-DTILE=32"], include_ptx=True)
        failed = client.compile("SYNTAX")
    assert [p.id for p in problems] == ["vector_add", "softmax"]
    assert [p.id for p in reductions] == ["softmax"] and reductions[0].tags == ["level1", "reduction"]
    assert problem.id == "softmax" and "Row-wise softmax" in problem.prompt
    assert problem.signature.startswith("inputs:") and problem.example_launch.startswith("// @launch")
    assert problem.problem.id == "softmax" and problem.to_dict()["problem"]["id"] == "softmax"
    assert devices[0].id == "cpu" and devices[0].ready
    assert isinstance(compiled, CompileResult) and compiled.success and compiled.ptx
    assert compiled.options == ["-DTILE=32"] and compiled.kernels[0].name == "add"
    assert not failed.success and failed.diagnostics[0].severity == "error"
    assert fake.servicer.calls_to("Compile")[0].request.include_ptx


def test_errors_are_typed(fake):
    fake.servicer.script("Evaluate", Abort(grpc.StatusCode.INVALID_ARGUMENT, "submission.source: empty"))
    fake.servicer.script("EvaluateGroup", Abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "queue full", headers=True))
    with Client(fake.target) as client:
        with pytest.raises(InvalidArgument) as invalid:
            client.evaluate("vector_add", "x")
        with pytest.raises(NotFound) as not_found:
            client.problem("no_such_problem")
        with pytest.raises(ResourceExhausted) as exhausted:
            client.evaluate_group("vector_add", ["x"])
    assert invalid.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert invalid.value.details == "submission.source: empty"
    assert isinstance(invalid.value, KernelEvalError)
    assert "no_such_problem" in not_found.value.details
    assert exhausted.value.request_id and exhausted.value.request_id.startswith("fake-")
    assert len(fake.servicer.calls_to("Evaluate")) == 1  # INVALID_ARGUMENT is not retried


def test_local_argument_errors(fake):
    with Client(fake.target) as client:
        with pytest.raises(ValueError):
            client.evaluate("vector_add", VECTOR_ADD, reward_mode="fastest")
        with pytest.raises(ValueError):
            client.evaluate("vector_add", VECTOR_ADD, backend="tpu")
        with pytest.raises(TypeError):
            client.evaluate_group("vector_add", VECTOR_ADD)  # a string, not a list
    assert fake.servicer.calls == []


def test_a_source_with_no_utf8_form_is_invalid_argument_naming_the_field(fake):
    # A lone surrogate cannot be sent (protobuf strings are UTF-8): the typed
    # error of a refused request, naming the submission, never UnicodeEncodeError.
    with Client(fake.target) as client:
        with pytest.raises(InvalidArgument, match=r"^INVALID_ARGUMENT: submission\.source: not encodable"):
            client.evaluate("vector_add", VECTOR_ADD + "\ud800")
        with pytest.raises(InvalidArgument, match=r"submissions\[1\]\.source: not encodable"):
            client.evaluate_group("vector_add", [VECTOR_ADD, "\udfff" + VECTOR_ADD])
        with pytest.raises(InvalidArgument, match=r"^INVALID_ARGUMENT: source: not encodable"):
            client.compile("\ud800")
    assert fake.servicer.calls == []


def test_token_is_sent_as_bearer_metadata(fake_factory):
    server = fake_factory(token="abc")
    with Client(server.target, token="abc") as client:
        assert client.problems()
    assert server.servicer.calls[0].metadata["authorization"] == "Bearer abc"
    with Client(server.target, token="wrong") as client, pytest.raises(Unauthenticated):
        client.problems()
    with Client(server.target) as client, pytest.raises(Unauthenticated):
        client.problems()


def test_token_from_the_environment(fake_factory, monkeypatch):
    server = fake_factory(token="from-env")
    monkeypatch.setenv("KERNELEVAL_TOKEN", "from-env")
    monkeypatch.setenv("KERNELEVAL_SERVER", server.target)
    with Client() as client:
        assert client.target == server.target
        assert client.devices()[0].id == "cpu"
    with Client(token="") as client, pytest.raises(Unauthenticated):  # "" = no token
        client.devices()


def test_token_whitespace_is_stripped(fake_factory, monkeypatch):
    # token=open("token.txt").read() ends in a newline, not allowed in a header.
    server = fake_factory(token="abc")
    with Client(server.target, token="  abc\n") as client:
        assert client.problems()
    assert server.servicer.calls[-1].metadata["authorization"] == "Bearer abc"
    monkeypatch.setenv("KERNELEVAL_TOKEN", "abc\r\n")
    with Client(server.target) as client:
        assert client.devices()
    assert server.servicer.calls[-1].metadata["authorization"] == "Bearer abc"
    with Client(server.target, token=" \n") as client, pytest.raises(Unauthenticated):  # only whitespace: none
        client.problems()


def test_a_token_not_allowed_in_a_header_is_refused_before_any_call(fake, monkeypatch):
    for bad in ("ab\ncd", "ab\x00cd", "t\u00f6ken"):
        with pytest.raises(ValueError, match=r"\btoken\b") as error:
            Client(fake.target, token=bad)
        assert bad not in str(error.value)  # the value is a secret
    monkeypatch.setenv("KERNELEVAL_TOKEN", "ab\ncd")
    with pytest.raises(ValueError, match="KERNELEVAL_TOKEN"):
        Client(fake.target)
    assert fake.servicer.calls == []


def test_a_target_without_a_port_uses_the_default_port(fake, monkeypatch):
    monkeypatch.setattr(kerneleval._channel, "DEFAULT_PORT", fake.port)
    with Client("127.0.0.1", max_attempts=1, timeout=10) as client:
        assert client.devices()[0].id == "cpu"
    assert len(fake.servicer.calls) == 1


def test_out_of_range_numbers_are_invalid_argument_naming_the_field(fake):
    with Client(fake.target) as client:
        for seed in (-1, 2**64):
            with pytest.raises(InvalidArgument, match=r"^INVALID_ARGUMENT: seed: "):
                client.evaluate("vector_add", VECTOR_ADD, seed=seed)
            with pytest.raises(InvalidArgument, match=r"^INVALID_ARGUMENT: seed: "):
                client.evaluate_group("vector_add", [VECTOR_ADD], seed=seed)
        with pytest.raises(InvalidArgument, match=r"^INVALID_ARGUMENT: limits\.memory_bytes: "):
            client.evaluate("vector_add", VECTOR_ADD, limits={"timeout_seconds": 5, "memory_bytes": -1})
        with pytest.raises(InvalidArgument, match=r"^INVALID_ARGUMENT: limits\.memory_bytes: "):
            client.evaluate_group("vector_add", [VECTOR_ADD], limits={"memory_bytes": 2**64})
        with pytest.raises(InvalidArgument, match=r"^INVALID_ARGUMENT: limits\.timeout_seconds: "):
            client.evaluate("vector_add", VECTOR_ADD, limits={"timeout_seconds": "soon"})
        with pytest.raises(InvalidArgument, match=r"^INVALID_ARGUMENT: limits\.timeout: "):
            client.evaluate("vector_add", VECTOR_ADD, limits={"timeout": 5})
    assert fake.servicer.calls == []
    # In range: sent as given.
    with Client(fake.target) as client:
        client.evaluate("vector_add", VECTOR_ADD, seed=2**64 - 1, limits={"memory_bytes": 2**40, "timeout_seconds": 5})
    request = fake.servicer.calls_to("Evaluate")[0].request
    assert request.seed == 2**64 - 1
    assert request.limits.memory_bytes == 2**40 and request.limits.timeout_seconds == 5


def test_skip_timing_rewards_are_documented():
    # A correct kernel with skip_timing has no speedup: reward 0 under the seed
    # rubric, below a wrong kernel's partial credit. The docs must say so.
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    for text in (Client.evaluate.__doc__, Client.evaluate_group.__doc__, readme):
        flat = " ".join(text.split())
        assert "skip_timing" in flat and "not comparable" in flat and "`correct`" in flat.replace("'", "`")


def test_the_readme_example_works_on_a_compile_error():
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    (line,) = [line.strip() for line in readme.splitlines() if "registers_per_thread" in line]
    message = pb.Verdict(correct=False, stage="compile", error="line 4: expected a ';'")
    message.compile.log = "kernel.cu(4): error: expected a \";\"\n"  # no kernels
    verdict = Verdict.from_proto(message)
    exec(line, {"verdict": verdict, "print": lambda *args: None})


def test_request_id_is_sent_and_returned(fake):
    fake.servicer.script("Evaluate", Abort(grpc.StatusCode.INTERNAL, "boom", headers=True))
    with Client(fake.target) as client:
        with pytest.raises(KernelEvalError) as error:
            client.evaluate("vector_add", VECTOR_ADD, request_id="my-request-1")
    assert fake.servicer.calls[0].metadata["x-request-id"] == "my-request-1"
    assert error.value.request_id == "my-request-1"
    assert type(error.value) is kerneleval.Internal


def test_unavailable_before_the_server_took_the_call_is_retried(fake):
    fake.servicer.script("Evaluate", Abort(grpc.StatusCode.UNAVAILABLE, "draining"),
                         Abort(grpc.StatusCode.UNAVAILABLE, "draining"))
    with Client(fake.target) as client:
        verdict = client.evaluate("vector_add", VECTOR_ADD)
    assert verdict.correct
    assert len(fake.servicer.calls_to("Evaluate")) == 3


def test_unavailable_after_the_server_took_the_call_is_not_retried(fake):
    # The server sent its headers (x-request-id): the evaluation had started.
    fake.servicer.script("Evaluate", Abort(grpc.StatusCode.UNAVAILABLE, "worker died", headers=True))
    with Client(fake.target) as client, pytest.raises(Unavailable) as error:
        client.evaluate("vector_add", VECTOR_ADD)
    assert error.value.details == "worker died"
    assert len(fake.servicer.calls_to("Evaluate")) == 1


def test_retries_are_bounded_and_can_be_disabled(fake):
    fake.servicer.script("ListDevices", *[Abort(grpc.StatusCode.UNAVAILABLE, "down")] * 10)
    with Client(fake.target, max_attempts=3) as client, pytest.raises(Unavailable):
        client.devices()
    assert len(fake.servicer.calls_to("ListDevices")) == 3
    with Client(fake.target, max_attempts=1) as client, pytest.raises(Unavailable):
        client.devices()
    assert len(fake.servicer.calls_to("ListDevices")) == 4


def test_wait_for_ready_reaches_a_server_that_comes_up():
    from fake_server import FakeServer, free_port

    port = free_port()
    started: list[FakeServer] = []
    thread = threading.Timer(0.3, lambda: started.append(FakeServer(port=port)))
    thread.start()
    try:
        with Client(f"127.0.0.1:{port}", wait_for_ready=True, timeout=10) as client:
            assert client.devices()[0].id == "cpu"
    finally:
        thread.join()
        for server in started:
            server.stop()


def test_no_server_is_unavailable(fake):
    port = fake.port
    fake.stop()
    with Client(f"127.0.0.1:{port}", max_attempts=2) as client, pytest.raises(Unavailable):
        client.devices()


def test_deadline(fake):
    fake.servicer.script("Evaluate", Sleep(1.0))
    with Client(fake.target, timeout=0.2) as client:
        with pytest.raises(DeadlineExceeded):
            client.evaluate("vector_add", VECTOR_ADD)
        fake.servicer.script("Evaluate", Sleep(0.3))
        assert client.evaluate("vector_add", VECTOR_ADD, timeout=5).correct  # per-call override


def test_stream_yields_events_then_the_verdict(fake):
    with Client(fake.target) as client:
        events = list(client.evaluate_stream("vector_add", VECTOR_ADD, reward_mode="speedup"))
    kinds = [e.kind for e in events]
    assert kinds == ["queued", "compiled", "correctness", "timing", "verdict"]
    assert isinstance(events[0], Queued) and events[0].device == "cpu"
    assert isinstance(events[1], Compiled) and events[1].compile.success
    assert isinstance(events[2], CorrectnessDone) and events[2].correctness.passed
    assert isinstance(events[3], TimingProgress) and events[3].samples == 5
    assert isinstance(events[-1], Verdict) and events[-1].correct
    wrong = list(Client(fake.target).evaluate_stream("vector_add", "SYNTAX"))
    assert [e.kind for e in wrong] == ["queued", "compiled", "verdict"] and wrong[-1].stage == "compile"


def test_stream_error_is_typed(fake):
    def fail_midway(request, context):
        yield pb.EvaluateEvent(queued=pb.EvaluateEvent.Queued(position=3))
        context.abort(grpc.StatusCode.UNAVAILABLE, "worker died")

    fake.servicer.script("EvaluateStream", fail_midway)
    with Client(fake.target) as client:
        seen = []
        with pytest.raises(Unavailable):
            for event in client.evaluate_stream("vector_add", VECTOR_ADD):
                seen.append(event)
    assert [e.kind for e in seen] == ["queued"] and seen[0].position == 3


def test_closing_a_stream_early_cancels_the_call(fake):
    cancelled = threading.Event()

    def slow_stream(request, context):
        context.add_callback(cancelled.set)
        yield pb.EvaluateEvent(queued=pb.EvaluateEvent.Queued(position=1))
        for _ in range(100):
            time.sleep(0.05)
            yield pb.EvaluateEvent(timing=pb.EvaluateEvent.TimingProgress(samples=1))

    fake.servicer.script("EvaluateStream", slow_stream)
    with Client(fake.target) as client:
        stream = client.evaluate_stream("vector_add", VECTOR_ADD)
        assert next(stream).kind == "queued"
        stream.close()
        assert cancelled.wait(5)


def test_group_returns_verdicts_in_order(fake):
    sources = [VECTOR_ADD, "WRONG", "SYNTAX", "SLOW"]
    with Client(fake.target) as client:
        group = client.evaluate_group("vector_add", sources, reward_mode="speedup", partial_credit=True, seed=3)
    assert len(group) == 4
    assert [v.stage for v in group] == ["passed", "correctness", "compile", "passed"]
    assert group.rewards == pytest.approx([1.3, 0.05, 0.0, 0.3 - 0.2])
    assert group.reference_timing.median_us == 100.0
    request = fake.servicer.calls_to("EvaluateGroup")[0].request
    assert [s.source for s in request.submissions] == sources and request.seed == 3
    assert group[0].to_dict()["stage"] == "passed"


def test_full_request_messages_pass_through(fake):
    request = pb.EvaluateRequest(problem_id="vector_add", submission=pb.Submission(source="WRONG"))
    group_request = pb.EvaluateGroupRequest(problem_id="vector_add", submissions=[pb.Submission(source=VECTOR_ADD)])
    with Client(fake.target) as client:
        assert client.evaluate(request).stage == "correctness"
        assert client.evaluate_group(group_request)[0].correct
        custom = pb.Problem(id="vector_add", title="custom copy")
        client.evaluate(custom, {"source": VECTOR_ADD, "compile_options": ["-DX=1"]})
    sent = fake.servicer.calls_to("Evaluate")[-1].request
    assert sent.WhichOneof("problem_ref") == "problem" and sent.problem.title == "custom copy"
    assert list(sent.submission.compile_options.options) == ["-DX=1"]


def test_round_robin_over_an_address_list(fake_factory):
    first, second = fake_factory(name="one"), fake_factory(name="two")
    with Client([first.target, second.target]) as client:
        client.wait_until_ready(timeout=5)
        for _ in range(10):
            client.devices()
    # Both backends took calls (round_robin over "ipv4:a,b").
    assert len(first.servicer.calls) >= 3 and len(second.servicer.calls) >= 3
    assert len(first.servicer.calls) + len(second.servicer.calls) == 10


def test_round_robin_over_host_names(fake_factory):
    first, second = fake_factory(name="one"), fake_factory(name="two")
    targets = f"localhost:{first.port},localhost:{second.port}"  # comma list, host names
    with Client(targets) as client:
        for _ in range(6):
            client.problems()
    assert len(first.servicer.calls) == 3 and len(second.servicer.calls) == 3


def test_balancing_skips_a_dead_backend(fake_factory):
    alive, dead = fake_factory(name="alive"), fake_factory(name="dead")
    dead_target = dead.target
    dead.stop()
    with Client([alive.target, dead_target], timeout=10) as client:
        for _ in range(5):
            assert client.devices()[0].id == "cpu"
    assert len(alive.servicer.calls) == 5


def test_client_is_thread_safe(fake):
    with Client(fake.target) as client:
        results = []

        def work() -> None:
            results.append(client.evaluate("vector_add", VECTOR_ADD).correct)

        threads = [threading.Thread(target=work) for _ in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert results == [True] * 16


# ------------------------------------------------------------------- async


def test_async_client_every_call(fake):
    async def main() -> None:
        async with AsyncClient(fake.target, timeout=10) as client:
            await client.wait_until_ready(timeout=5)
            verdict = await client.evaluate("vector_add", VECTOR_ADD, reward_mode="speedup")
            assert verdict.correct and verdict.reward == pytest.approx(1.3)
            events = [e async for e in client.evaluate_stream("vector_add", "WRONG")]
            assert events[-1].kind == "verdict" and events[-1].stage == "correctness"
            group = await client.evaluate_group("vector_add", [VECTOR_ADD, "CRASH"], partial_credit=True)
            assert group.rewards == pytest.approx([1.3, 0.02])
            assert (await client.compile(VECTOR_ADD)).success
            assert [p.id for p in await client.problems()] == ["vector_add", "softmax"]
            assert (await client.problem("vector_add")).id == "vector_add"
            assert (await client.devices())[0].ready
            with pytest.raises(NotFound):
                await client.problem("nope")
            results = await asyncio.gather(*[client.evaluate("vector_add", VECTOR_ADD) for _ in range(8)])
            assert all(v.correct for v in results)

    asyncio.run(main())


def test_async_client_retries_and_token(fake_factory):
    server = fake_factory(token="t")
    server.servicer.script("Evaluate", Abort(grpc.StatusCode.UNAVAILABLE, "draining"))

    async def main() -> None:
        async with AsyncClient(server.target, token="t") as client:
            assert (await client.evaluate("vector_add", VECTOR_ADD)).correct
        async with AsyncClient(server.target, token="bad") as client:
            with pytest.raises(Unauthenticated):
                await client.devices()

    asyncio.run(main())
    assert len(server.servicer.calls_to("Evaluate")) == 2
    assert server.servicer.calls[0].metadata["authorization"] == "Bearer t"


def test_async_stream_error_is_typed(fake):
    fake.servicer.script("EvaluateStream", Abort(grpc.StatusCode.INVALID_ARGUMENT, "bad", headers=True))

    async def main() -> None:
        async with AsyncClient(fake.target) as client:
            with pytest.raises(InvalidArgument):
                async for _ in client.evaluate_stream("vector_add", VECTOR_ADD):
                    pass

    asyncio.run(main())


def test_importing_the_client_does_not_import_openenv():
    import subprocess
    import sys

    code = "import kerneleval, kerneleval.rewards, sys; print('openenv' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_logging_is_quiet_by_default(caplog):
    # A library adds no handlers of its own.
    assert not logging.getLogger("kerneleval").handlers


def test_stream_starts_when_iterated(fake):
    with Client(fake.target) as client:
        stream = client.evaluate_stream("vector_add", VECTOR_ADD)
        time.sleep(0.2)
        assert fake.servicer.calls_to("EvaluateStream") == []
        assert list(stream)[-1].correct
    assert len(fake.servicer.calls_to("EvaluateStream")) == 1


def test_tls_with_a_ca_file(tmp_path):
    import shutil
    import subprocess

    from fake_server import FakeServer

    if shutil.which("openssl") is None:
        pytest.skip("openssl not installed")
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )
    server = FakeServer(token="tls-token", tls=(key.read_bytes(), cert.read_bytes()))
    try:
        with Client(f"localhost:{server.port}", token="tls-token", tls=str(cert), timeout=10) as client:
            assert client.devices()[0].id == "cpu"
        with Client(f"localhost:{server.port}", tls=cert.read_bytes(), token="tls-token", timeout=10) as client:
            assert client.problems()
        # Plaintext to a TLS server, or TLS without trusting its CA: no connection.
        with Client(f"localhost:{server.port}", max_attempts=1, timeout=5) as client, pytest.raises(Unavailable):
            client.devices()
        with Client(f"localhost:{server.port}", tls=True, max_attempts=1, timeout=5) as client:
            with pytest.raises(Unavailable):
                client.devices()
    finally:
        server.stop()
    with pytest.raises(ValueError):
        Client("localhost:1", tls=str(tmp_path / "missing.pem"))


def test_health(fake_factory):
    server = fake_factory(token="needed-for-rpcs-not-for-health")
    with Client(server.target) as client:
        assert client.health() == "SERVING"
        assert client.health("") == "SERVING"
        server.health[pb.SERVICE_NAME] = 2
        assert client.health() == "NOT_SERVING"
        assert client.health("no.such.Service") == "SERVICE_UNKNOWN"

    async def main() -> None:
        async with AsyncClient(server.target) as client:
            assert await client.health() == "NOT_SERVING"

    asyncio.run(main())


def test_health_request_encoding():
    from kerneleval.client import _health_request, _health_status

    assert _health_request("") == b""
    assert _health_request("a.B") == b"\x0a\x03a.B"
    assert _health_request("x" * 200)[:3] == b"\x0a\xc8\x01"
    assert _health_status(b"\x08\x01") == "SERVING" and _health_status(b"") == "UNKNOWN"
