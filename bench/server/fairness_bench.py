#!/usr/bin/env python3
"""How long one client's evaluation waits behind another client's slow compiles.

Starts the built kerneleval-server (CPU backend) on a free port, then measures, with the
Python client (clients/python):

  alone    the victim's evaluation (examples/softmax.cu, correctness only) on an idle
           server, twice (a comment keeps each source distinct: no cache hit);
  behind   the same, sent 1 s after --attackers "attacker" clients (0.5 s apart) each sent
           a group of --group sources that each run NVRTC into the compile limit (30 s),
           and the attackers' own times.

The victim waiting for a compile thread shows as behind >> alone. Figures are this
machine's (2 cores here: client, server and compilers share them); compare the rows of
one run, not runs on different machines. Server flags after `--` go to the server (e.g.
`-- --compile-reserve-threads 1`).

    python3 bench/server/fairness_bench.py [--server build/server/kerneleval-server] \
        [--group 4] [--attackers 2] [-- SERVER_FLAGS...]
"""
import argparse
import os
import sys
import threading
import time

import cpu_server
from cpu_server import REPO
try:
    import kerneleval
except ImportError:
    print("the Python client is not installed: pip install ./clients/python")
    sys.exit(2)


def slow_source(variant: int) -> str:
    """Macro expansion that doubles 23 times: NVRTC runs into the compile limit."""
    lines = ["#define A0 x+x"] + [f"#define A{k} A{k - 1}+A{k - 1}" for k in range(1, 24)]
    return "\n".join(lines) + (
        "\n// @launch add<<<ceil_div(N, 256), 256>>>(a, b, c, N)\n__device__ float x;\n"
        'extern "C" __global__ void add(const float* a, const float* b, float* c, int n)'
        f" {{ c[0] = A23; }}\n// variant {variant} {time.time()}\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cpu_server.add_arguments(parser)
    parser.add_argument("--group", type=int, default=4, help="each attacker's slow sources")
    parser.add_argument("--attackers", type=int, default=2, help="attacking clients")
    args = parser.parse_args()
    with cpu_server.running(args) as (_, target):
        client = kerneleval.Client(target, wait_for_ready=True)
        victim_source = open(os.path.join(REPO, "examples", "softmax.cu")).read()

        def victim() -> tuple[float, str]:
            start = time.monotonic()
            verdict = client.evaluate("softmax", victim_source + f"\n// {time.time()}\n",
                                      client_id="victim", skip_timing=True, timeout=600)
            return time.monotonic() - start, verdict.stage

        alone = [victim() for _ in range(2)]

        attackers: list[dict] = [{} for _ in range(args.attackers)]

        def attack(index: int) -> None:
            start = time.monotonic()
            sources = [slow_source(index * 1000 + i) for i in range(args.group)]
            result = client.evaluate_group("softmax", sources, client_id=f"attacker-{index}",
                                           skip_timing=True, timeout=600)
            attackers[index]["seconds"] = time.monotonic() - start
            attackers[index]["stages"] = sorted({v.stage for v in result})

        threads = []
        for index in range(args.attackers):
            threads.append(threading.Thread(target=attack, args=(index,)))
            threads[-1].start()
            time.sleep(0.5)
        time.sleep(max(0.0, 1.0 - 0.5 * args.attackers))
        behind = victim()
        for thread in threads:
            thread.join()

        flags = " ".join(args.server_flags)
        print(f"kerneleval-server --backend cpu {flags}, {os.cpu_count()} cores; {args.attackers} "
              f"attacker(s), each a group of {args.group} sources that each take the compile limit")
        print(f"{'measure':<44} {'seconds':>8}  verdict")
        for i, (seconds, stage) in enumerate(alone):
            print(f"{'victim alone, run ' + str(i + 1):<44} {seconds:8.2f}  {stage}")
        print(f"{'victim after the attackers':<44} {behind[0]:8.2f}  {behind[1]}")
        for index, attacker in enumerate(attackers):
            print(f"{'attacker ' + str(index) + ' group':<44} {attacker['seconds']:8.2f}  "
                  f"{','.join(attacker['stages'])}")
        return 0 if behind[1] == "passed" and all(s == "passed" for _, s in alone) else 1

if __name__ == "__main__":
    sys.exit(main())
