"""Channel set-up shared by Client and AsyncClient: targets, load balancing,
retries, credentials and call metadata.

Targets
  "host:port"                     one server (gRPC's default pick_first).
  "dns:///name:port"              every address the name resolves to, round robin
                                  (a Kubernetes headless Service: one address per pod).
  ["10.0.0.1:50051", "10.0.0.2:50051"] or "10.0.0.1:50051,10.0.0.2:50051"
                                  IP literals: one channel over all of them
                                  ("ipv4:10.0.0.1:50051,10.0.0.2:50051"), round robin.
  ["a.example:50051", "b.example:50051"]
                                  host names: one channel per entry, calls spread
                                  over them in turn (each channel with its own policy).
  any other gRPC URI ("ipv4:...", "unix:...") is passed through.
  A host name or IP address without a port ("localhost", "10.0.0.1", "[::1]",
  "dns:///name") gets DEFAULT_PORT (gRPC's own default would be 443).

Retries (the service config's retryPolicy, UNAVAILABLE only)
  gRPC retries an attempt only while the call is uncommitted: no response
  headers came back. The kerneleval server sends its x-request-id header when it
  takes a call, so a retried attempt is one the server never started: the
  connection was refused or dropped, the server was going away, or it answered
  UNAVAILABLE before doing any work. A call the server took and then failed is
  never repeated here. Transparent retries (the request never left the client)
  happen on top, as always in gRPC.
"""

from __future__ import annotations

import ipaddress
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence, Union

import grpc

from kerneleval.pb import SERVICE_NAME

DEFAULT_PORT = 50051
DEFAULT_TARGET = f"localhost:{DEFAULT_PORT}"
TARGET_ENV = "KERNELEVAL_SERVER"
TOKEN_ENV = "KERNELEVAL_TOKEN"
DEFAULT_MAX_MESSAGE_BYTES = 64 << 20  # [bytes] largest response: a verdict with a CUBIN can be several MiB
MAX_ATTEMPTS_LIMIT = 5  # gRPC caps maxAttempts at 5

Target = Union[str, Sequence[str]]
Tls = Union[bool, str, Path, bytes, None]


@dataclass(frozen=True)
class ChannelPlan:
    target: str
    lb_policy: Optional[str]  # "round_robin" | "pick_first" | None (gRPC's default)


def _split_host_port(address: str) -> tuple[str, str]:
    if address.startswith("["):  # [v6]:port
        host, _, port = address[1:].partition("]")
        return host, port.lstrip(":")
    host, sep, port = address.rpartition(":")
    return (host, port) if sep else (address, "")


def _ip_family(address: str) -> Optional[int]:
    """4 or 6 for "ip:port" / "[ip]:port" with a port, else None."""
    host, port = _split_host_port(address)
    if not port.isdigit():
        return None
    try:
        return ipaddress.ip_address(host).version
    except ValueError:
        return None


def _has_scheme(target: str) -> bool:
    scheme, sep, _ = target.partition(":")
    # "host:port" has a numeric "rest"; a URI scheme is followed by a non-digit.
    return bool(sep) and scheme in {"dns", "ipv4", "ipv6", "unix", "unix-abstract", "vsock", "xds"}


def _address_with_port(address: str) -> str:
    """"host" / "ip" / "[v6]" / "v6" without a port -> with DEFAULT_PORT."""
    if address.startswith("["):  # [v6] or [v6]:port
        host, sep, rest = address[1:].partition("]")
        return f"[{host}]:{DEFAULT_PORT}" if sep and rest in ("", ":") else address
    if address.count(":") > 1:  # only a bare IPv6 address has several colons, and no port
        try:
            ipaddress.ip_address(address)
        except ValueError:
            return address
        return f"[{address}]:{DEFAULT_PORT}"
    host, _, port = address.partition(":")
    return f"{host}:{DEFAULT_PORT}" if host and not port else address


def _target_with_port(target: str) -> str:
    """DEFAULT_PORT where gRPC would pick its own (443): a plain host or IP, or
    a dns: name, without a port. Other URIs (unix:, ipv4:, ...) as given."""
    if not _has_scheme(target):
        return _address_with_port(target)
    scheme, _, rest = target.partition(":")
    if scheme != "dns":
        return target
    if rest.startswith("//"):  # dns://[authority]/host[:port]
        authority, sep, name = rest[2:].partition("/")
        return f"dns://{authority}/{_address_with_port(name)}" if sep and name else target
    return f"dns:{_address_with_port(rest)}" if rest else target


def plan_channels(target: Target, lb_policy: Optional[str] = None) -> list[ChannelPlan]:
    """The channels to open for `target` (see the module docstring)."""
    if isinstance(target, str):
        entries = [target] if _has_scheme(target) else [t.strip() for t in target.split(",")]
    else:
        entries = [str(t).strip() for t in target]
    entries = [_target_with_port(e) for e in entries if e]
    if not entries:
        raise ValueError("kerneleval: empty target")
    if lb_policy not in (None, "round_robin", "pick_first"):
        raise ValueError(f"kerneleval: lb_policy {lb_policy!r} is not round_robin or pick_first")

    if len(entries) == 1:
        only = entries[0]
        balanced = only.startswith("dns:") or (only.startswith(("ipv4:", "ipv6:")) and "," in only)
        return [ChannelPlan(only, lb_policy or ("round_robin" if balanced else None))]

    families = {_ip_family(e) for e in entries}
    if families == {4}:
        return [ChannelPlan("ipv4:" + ",".join(entries), lb_policy or "round_robin")]
    if families == {6}:
        return [ChannelPlan("ipv6:" + ",".join(entries), lb_policy or "round_robin")]
    plans = []
    for entry in entries:
        balanced = entry.startswith("dns:")
        plans.append(ChannelPlan(entry, lb_policy or ("round_robin" if balanced else None)))
    return plans


def service_config(lb_policy: Optional[str], max_attempts: int) -> dict[str, Any]:
    config: dict[str, Any] = {}
    if lb_policy:
        config["loadBalancingConfig"] = [{lb_policy: {}}]
    attempts = max(1, min(int(max_attempts), MAX_ATTEMPTS_LIMIT))
    if attempts > 1:
        config["methodConfig"] = [
            {
                "name": [{"service": SERVICE_NAME}],
                "retryPolicy": {
                    "maxAttempts": attempts,
                    "initialBackoff": "0.1s",
                    "maxBackoff": "2s",
                    "backoffMultiplier": 2,
                    "retryableStatusCodes": ["UNAVAILABLE"],
                },
            }
        ]
    return config


def channel_options(
    plan: ChannelPlan,
    max_attempts: int,
    max_message_bytes: int,
    extra: Optional[Sequence[tuple[str, Any]]] = None,
) -> list[tuple[str, Any]]:
    options: list[tuple[str, Any]] = [
        ("grpc.service_config", json.dumps(service_config(plan.lb_policy, max_attempts))),
        ("grpc.enable_retries", 1 if max_attempts > 1 else 0),
        ("grpc.max_receive_message_length", max_message_bytes),
        # Requests are bounded by the server, which says so (by default 1 MiB per
        # source x 128 sources + 16 MiB: 144 MiB); a cap of max_message_bytes here
        # failed a group of 128 sources of 600 KB before it was sent.
        ("grpc.max_send_message_length", -1),
        # Keepalive: a frozen or unreachable server fails the calls waiting on
        # it (UNAVAILABLE) within ~80 s instead of never. An evaluation waits
        # minutes with no data, so pings continue without data; the server
        # accepts one every 20 s (server/server.cc).
        ("grpc.keepalive_time_ms", 60_000),
        ("grpc.keepalive_timeout_ms", 20_000),
        ("grpc.http2.max_pings_without_data", 0),
        ("grpc.keepalive_permit_without_calls", 0),
    ]
    if extra:
        overridden = {name for name, _ in extra}
        options = [o for o in options if o[0] not in overridden] + list(extra)
    return options


def credentials(tls: Tls) -> Optional[grpc.ChannelCredentials]:
    """None: insecure. True: TLS with the system roots. A path or PEM bytes: TLS
    trusting that CA."""
    if tls is None or tls is False:
        return None
    if tls is True:
        return grpc.ssl_channel_credentials()
    if isinstance(tls, bytes):
        return grpc.ssl_channel_credentials(root_certificates=tls)
    path = Path(tls)
    try:
        root = path.read_bytes()
    except OSError as error:
        raise ValueError(f"kerneleval: cannot read the TLS root certificates {path}: {error}") from error
    return grpc.ssl_channel_credentials(root_certificates=root)


def resolve_target(target: Optional[Target]) -> Target:
    if target is None or (isinstance(target, str) and not target.strip()):
        return os.environ.get(TARGET_ENV) or DEFAULT_TARGET
    return target


def resolve_token(token: Optional[str]) -> Optional[str]:
    """None: $KERNELEVAL_TOKEN; "" : no token. Surrounding whitespace (the newline
    of a token read from a file) is dropped; a token that cannot be sent in a
    header (printable ASCII only) is a ValueError naming where it came from,
    never its value."""
    source = "token"
    if token is None:
        token = os.environ.get(TOKEN_ENV)
        source = f"${TOKEN_ENV}"
    token = (token or "").strip()
    if any(not " " <= c <= "~" for c in token):
        raise ValueError(
            f"kerneleval: the {source} has characters not allowed in a gRPC header "
            "(control characters or non-ASCII); it must be printable ASCII"
        )
    return token or None


def call_metadata(token: Optional[str], request_id: Optional[str]) -> list[tuple[str, str]]:
    metadata = []
    if token:
        metadata.append(("authorization", f"Bearer {token}"))
    if request_id:
        metadata.append(("x-request-id", request_id))
    return metadata
