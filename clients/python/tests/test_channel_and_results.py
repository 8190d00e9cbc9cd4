"""Channel plans (targets, balancing, retry policy) and result conversion."""

from __future__ import annotations

import json

import pytest

from kerneleval import Verdict, message_to_dict, pb
from kerneleval._channel import ChannelPlan, channel_options, plan_channels, service_config
from kerneleval.results import GroupResult, event_from_proto


@pytest.mark.parametrize(
    "target, expected",
    [
        ("localhost:50051", [ChannelPlan("localhost:50051", None)]),
        ("dns:///kerneleval-headless.ns.svc.cluster.local:50051",
         [ChannelPlan("dns:///kerneleval-headless.ns.svc.cluster.local:50051", "round_robin")]),
        (["10.0.0.1:50051", "10.0.0.2:50051"], [ChannelPlan("ipv4:10.0.0.1:50051,10.0.0.2:50051", "round_robin")]),
        ("127.0.0.1:1,127.0.0.1:2", [ChannelPlan("ipv4:127.0.0.1:1,127.0.0.1:2", "round_robin")]),
        (["[::1]:1", "[::1]:2"], [ChannelPlan("ipv6:[::1]:1,[::1]:2", "round_robin")]),
        ("ipv4:127.0.0.1:1,127.0.0.1:2", [ChannelPlan("ipv4:127.0.0.1:1,127.0.0.1:2", "round_robin")]),
        (["a.example:1", "10.0.0.1:2"], [ChannelPlan("a.example:1", None), ChannelPlan("10.0.0.1:2", None)]),
        (["dns:///a:1", "b:2"], [ChannelPlan("dns:///a:1", "round_robin"), ChannelPlan("b:2", None)]),
        ("unix:///run/kerneleval.sock", [ChannelPlan("unix:///run/kerneleval.sock", None)]),
    ],
)
def test_plan_channels(target, expected):
    assert plan_channels(target) == expected


@pytest.mark.parametrize(
    "target, expected",
    [
        # No port: gRPC's dns resolver would use 443; the client's default port is 50051.
        ("localhost", [ChannelPlan("localhost:50051", None)]),
        ("kerneleval.example", [ChannelPlan("kerneleval.example:50051", None)]),
        ("127.0.0.1", [ChannelPlan("127.0.0.1:50051", None)]),
        ("[::1]", [ChannelPlan("[::1]:50051", None)]),
        ("::1", [ChannelPlan("[::1]:50051", None)]),
        ("dns:///kerneleval-headless", [ChannelPlan("dns:///kerneleval-headless:50051", "round_robin")]),
        ("dns://8.8.8.8/kerneleval", [ChannelPlan("dns://8.8.8.8/kerneleval:50051", "round_robin")]),
        ("dns:kerneleval", [ChannelPlan("dns:kerneleval:50051", "round_robin")]),
        (["10.0.0.1", "10.0.0.2:7"], [ChannelPlan("ipv4:10.0.0.1:50051,10.0.0.2:7", "round_robin")]),
        ("a.example,b.example:7", [ChannelPlan("a.example:50051", None), ChannelPlan("b.example:7", None)]),
        # With a port, or not a host name: as given.
        ("localhost:1", [ChannelPlan("localhost:1", None)]),
        ("[::1]:1", [ChannelPlan("[::1]:1", None)]),
        ("dns:///kerneleval-headless:1", [ChannelPlan("dns:///kerneleval-headless:1", "round_robin")]),
        ("unix:/run/kerneleval.sock", [ChannelPlan("unix:/run/kerneleval.sock", None)]),
        ("unix:///run/kerneleval.sock", [ChannelPlan("unix:///run/kerneleval.sock", None)]),
        ("ipv4:127.0.0.1:1", [ChannelPlan("ipv4:127.0.0.1:1", None)]),
    ],
)
def test_a_target_without_a_port_gets_the_default_port(target, expected):
    assert plan_channels(target) == expected


def test_plan_channels_explicit_policy_and_errors():
    assert plan_channels("dns:///x:1", "pick_first") == [ChannelPlan("dns:///x:1", "pick_first")]
    assert plan_channels("x:1", "round_robin") == [ChannelPlan("x:1", "round_robin")]
    with pytest.raises(ValueError):
        plan_channels("x:1", "least_request")
    with pytest.raises(ValueError):
        plan_channels([])


def test_service_config_retries_only_unavailable():
    config = service_config("round_robin", 4)
    assert config["loadBalancingConfig"] == [{"round_robin": {}}]
    (method,) = config["methodConfig"]
    assert method["name"] == [{"service": "kerneleval.v1.KernelEval"}]
    assert method["retryPolicy"]["retryableStatusCodes"] == ["UNAVAILABLE"]
    assert method["retryPolicy"]["maxAttempts"] == 4
    assert service_config(None, 99)["methodConfig"][0]["retryPolicy"]["maxAttempts"] == 5  # gRPC's cap
    assert service_config(None, 1) == {}


def test_channel_options():
    options = dict(channel_options(ChannelPlan("x:1", "round_robin"), 3, 1 << 20, [("grpc.enable_retries", 0)]))
    assert json.loads(options["grpc.service_config"])["loadBalancingConfig"] == [{"round_robin": {}}]
    assert options["grpc.max_receive_message_length"] == 1 << 20
    assert options["grpc.enable_retries"] == 0  # caller's options win


def _verdict_message() -> pb.Verdict:
    message = pb.Verdict(correct=True, stage="passed", speedup=1.5, roofline_frac=0.0, reward=0.885)
    message.flags.append("emulated_timing")
    message.timing.candidate.samples = 3
    message.timing.candidate.median_us = 10.0
    message.timing.shape["N"] = 4096
    message.compile.kernels.add(name="add", spill_store_bytes=8).params.add(name="a", is_pointer=True)
    message.device.peaks.name = "H100 SXM"
    message.reward_settings.mode = pb.REWARD_MODE_ROOFLINE
    message.seed = 9
    return message


def test_verdict_conversion():
    verdict = Verdict.from_proto(_verdict_message())
    assert verdict.speedup == 1.5 and verdict.roofline_frac is None  # 0 = unknown -> None
    assert verdict.flags == ["emulated_timing"] and verdict.timing.shape == {"N": 4096}
    assert verdict.time_us == 10.0 and verdict.reference_time_us is None
    assert verdict.kernels[0].spill_store_bytes == 8 and verdict.kernels[0].params[0].is_pointer
    assert verdict.device.peaks["name"] == "H100 SXM"
    assert verdict.reward_settings.mode == "roofline" and verdict.reward_settings.partial_credit is None
    assert verdict.seed == 9 and verdict.correctness is None
    assert Verdict.from_proto(pb.Verdict()).seed is None


def test_to_dict_is_the_cli_json():
    message = _verdict_message()
    data = Verdict.from_proto(message).to_dict()
    assert data == message_to_dict(message)
    assert data["roofline_frac"] == 0.0 and data["error"] == "" and data["deduplicated"] is False
    assert data["seed"] == "9" and data["timing"]["shape"] == {"N": "4096"}
    assert data["reward_settings"]["mode"] == "REWARD_MODE_ROOFLINE"
    assert data["compile"]["kernels"][0]["params"][0]["is_pointer"] is True
    assert data["compile"]["diagnostics"] == []
    # A hand-made result still serializes.
    assert Verdict(correct=True, stage="passed").to_dict()["stage"] == "passed"


def test_events_and_groups():
    assert event_from_proto(pb.EvaluateEvent(queued=pb.EvaluateEvent.Queued(position=2))).position == 2
    assert event_from_proto(pb.EvaluateEvent(verdict=pb.Verdict(stage="compile"))).stage == "compile"
    assert event_from_proto(pb.EvaluateEvent()).kind == "unknown"
    group = GroupResult.from_proto(pb.EvaluateGroupResponse(verdicts=[pb.Verdict(reward=0.5), pb.Verdict()]))
    assert group.rewards == [0.5, 0.0] and group.reference_timing is None and len(group) == 2

