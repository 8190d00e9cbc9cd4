#!/usr/bin/env python3
"""The server's memory under large groups: resident set against the bytes it admits.

Starts the built kerneleval-server (CPU backend) on a free port; --clients threads then
each send one EvaluateGroup of --group distinct sources of --source-bytes each (a
vector_add kernel padded with a comment; correctness only) at once, with a deadline of
--seconds. The server admits requests while the bytes they hold fit --max-admitted-bytes
(engine default 512 MiB) and answers RESOURCE_EXHAUSTED past it. Prints the server's
VmRSS (/proc/<pid>/status) idle, its peak while the calls are held (sampled every
20 ms) and 2, 10 and 30 s after they ended (the server gives freed heap memory back
every 10 s), the calls' outcomes, and the peak over idle per source byte. A server review (2026-12-04) saw 6 groups of 128 distinct 1 MiB sources
take a server to 1.9 GiB before admission was bounded by bytes.

    python3 bench/server/admission_memory_bench.py [--server build/server/kerneleval-server] \
        [--clients 6] [--group 128] [--source-bytes 1048576] [--seconds 20] [-- SERVER_FLAGS...]
"""
import argparse
import os
import sys
import threading
import time

import cpu_server
try:
    import kerneleval
except ImportError:
    print("the Python client is not installed: pip install ./clients/python")
    sys.exit(2)

KERNEL = """// @launch vector_add<<<ceil_div(N, 256), 256>>>(a, b, c, N)
__global__ void vector_add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
"""


def padded_source(tag: str, size: int) -> str:
    """KERNEL, a line naming `tag` (no two sources alike), comment lines up to `size` bytes."""
    head = KERNEL + f"// {tag}\n"
    line = "// " + "x" * 96 + "\n"
    body = line * max(0, (size - len(head)) // len(line))
    return head + body + "/" * max(0, size - len(head) - len(body))


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cpu_server.add_arguments(parser)
    parser.add_argument("--clients", type=int, default=6, help="concurrent EvaluateGroup calls")
    parser.add_argument("--group", type=int, default=128, help="sources per group")
    parser.add_argument("--source-bytes", type=int, default=1 << 20, help="[bytes] per source")
    parser.add_argument("--seconds", type=float, default=20, help="[s] each call's deadline")
    args = parser.parse_args()
    with cpu_server.running(args) as (server, target):
        client = kerneleval.Client(target, wait_for_ready=True)
        client.evaluate("vector_add", KERNEL, skip_timing=True, timeout=300)  # warm: reference, workers
        time.sleep(1)
        idle = rss_mib(server.pid)
        # Every source is built before any call starts: the client's own memory stays out
        # of the window.
        groups = [[padded_source(f"client {c} source {i} {time.time()}", args.source_bytes)
                   for i in range(args.group)] for c in range(args.clients)]
        outcomes: list[str] = [""] * args.clients
        sent_bytes = args.group * args.source_bytes

        def send(c: int) -> None:
            try:
                result = client.evaluate_group("vector_add", groups[c], client_id=f"client{c}",
                                               skip_timing=True, timeout=args.seconds)
                outcomes[c] = f"answered ({sum(v.correct for v in result)} of {len(result)} correct)"
            except kerneleval.KernelEvalError as error:
                outcomes[c] = f"{error.code.name}: {error.details[:160]}"

        peak = idle
        threads = [threading.Thread(target=send, args=(c,)) for c in range(args.clients)]
        start = time.monotonic()
        for t in threads:
            t.start()
        while any(t.is_alive() for t in threads):
            peak = max(peak, rss_mib(server.pid))
            time.sleep(0.02)
        elapsed = time.monotonic() - start
        after = []  # [(seconds after the calls ended, VmRSS MiB, server CPU seconds)]
        for wait in (2, 10, 30):
            time.sleep(wait - (after[-1][0] if after else 0))
            with open(f"/proc/{server.pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            after.append((wait, rss_mib(server.pid), cpu))

    refused = sum(o.startswith("RESOURCE_EXHAUSTED") for o in outcomes)
    admitted_bytes = (args.clients - refused) * sent_bytes
    print(f"{args.clients} groups of {args.group} sources of {args.source_bytes} bytes "
          f"({sent_bytes / 2**20:.0f} MiB each), deadline {args.seconds:.0f} s, "
          f"server flags {args.server_flags or 'default'}; calls ended after {elapsed:.1f} s")
    for c, outcome in enumerate(outcomes):
        print(f"  client {c}: {outcome}")
    print(f"server VmRSS [MiB]: idle {idle:.1f}, peak {peak:.1f}; after the calls ended: " +
          ", ".join(f"{rss:.1f} at {wait} s (server CPU {cpu:.1f} s)" for wait, rss, cpu in after))
    if admitted_bytes:
        growth = peak - idle
        print(f"peak over idle: {growth / (admitted_bytes / 2**20):.2f} x the sources of the "
              f"{args.clients - refused} groups not refused ({admitted_bytes / 2**20:.0f} MiB), "
              f"{growth / (args.clients * sent_bytes / 2**20):.2f} x all that were sent (the transport "
              f"reads a request whole before it is refused)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
