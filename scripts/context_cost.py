#!/usr/bin/env python3
"""What isolating the programs of a timing run from each other would cost.

The GPU worker times every program of a request (the reference and each
candidate of a GRPO group) in one CUDA context; evaluator/cuda/README.md lists
what a program could still pass to another there. A context per program would
close that. This measures, on the GPU it runs on, what it would cost:

  - creating a context (cuCtxCreate) and the device memory each one takes;
  - a round of tiny launches alternating between two contexts against the
    same round in one context (launch + synchronise each), i.e. the switch
    cost a per-program context would add to every sample.

Talks to the driver with ctypes (libcuda.so.1), so it needs nothing built.
Writes a JSON summary to --out and a few lines to stdout. Exit status: 0
measured, 1 a driver call failed, 3 no CUDA driver or device.
"""

import argparse
import ctypes
import json
import platform
import statistics
import sys
import time

# A kernel that does nothing: what is measured is the launch, the switch and
# the synchronisation around it. PTX ISA 7.0 / sm_75 is JIT-compiled for any
# newer GPU.
NOP_PTX = b"""
.version 7.0
.target sm_75
.address_size 64
.visible .entry nop()
{
  ret;
}
"""


class Driver:
    def __init__(self, library):
        self.lib = library

    def __call__(self, name, *args):
        result = getattr(self.lib, name)(*args)
        if result != 0:
            raise RuntimeError(f"{name} returned CUresult {result}")


def load_driver():
    try:
        return Driver(ctypes.CDLL("libcuda.so.1"))
    except OSError as error:
        print(f"no CUDA driver: {error}")
        sys.exit(3)


def free_bytes(cu):
    free, total = ctypes.c_size_t(), ctypes.c_size_t()
    cu("cuMemGetInfo_v2", ctypes.byref(free), ctypes.byref(total))
    return free.value


def nop_function(cu):
    module, function = ctypes.c_void_p(), ctypes.c_void_p()
    cu("cuModuleLoadData", ctypes.byref(module), ctypes.c_char_p(NOP_PTX))
    cu("cuModuleGetFunction", ctypes.byref(function), module, b"nop")
    return function


def launch_and_sync(cu, function):
    cu("cuLaunchKernel", function, 1, 1, 1, 1, 1, 1, 0, None, None, None)
    cu("cuCtxSynchronize")


def microseconds_per(rounds, step):
    """Median over 5 repeats of the time per call of `step` [us]."""
    repeats = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(rounds):
            step()
        repeats.append((time.perf_counter() - start) / rounds * 1e6)
    return statistics.median(repeats)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--contexts", type=int, default=8, help="contexts to create")
    parser.add_argument("--rounds", type=int, default=2000, help="launches per repeat")
    parser.add_argument("--out", help="JSON summary file")
    args = parser.parse_args()

    cu = load_driver()
    cu("cuInit", 0)
    count = ctypes.c_int()
    cu("cuDeviceGetCount", ctypes.byref(count))
    if args.device >= count.value:
        print(f"no CUDA device {args.device} ({count.value} found)")
        return 3
    device = ctypes.c_int()
    cu("cuDeviceGet", ctypes.byref(device), args.device)
    name = ctypes.create_string_buffer(256)
    cu("cuDeviceGetName", name, 256, device)

    # Contexts one by one: creation time, and free memory after each (read
    # in the new context, which is current after cuCtxCreate).
    contexts, create_ms, free_after = [], [], []
    for _ in range(args.contexts):
        context = ctypes.c_void_p()
        start = time.perf_counter()
        cu("cuCtxCreate_v2", ctypes.byref(context), 0, device)
        create_ms.append((time.perf_counter() - start) * 1e3)
        contexts.append(context)
        free_after.append(free_bytes(cu))
    per_context_bytes = [a - b for a, b in zip(free_after, free_after[1:])]

    # The same tiny launch, in one context, then alternating between two.
    functions = []
    for context in contexts[:2]:
        cu("cuCtxSetCurrent", context)
        functions.append(nop_function(cu))
    cu("cuCtxSetCurrent", contexts[0])
    for _ in range(100):  # warm-up: JIT caches, clocks
        launch_and_sync(cu, functions[0])
    same_us = microseconds_per(args.rounds, lambda: launch_and_sync(cu, functions[0]))

    turn = [0]

    def alternate():
        turn[0] ^= 1
        cu("cuCtxSetCurrent", contexts[turn[0]])
        launch_and_sync(cu, functions[turn[0]])

    for _ in range(100):
        alternate()
    switching_us = microseconds_per(args.rounds, alternate)

    destroy_ms = []
    for context in contexts:
        start = time.perf_counter()
        cu("cuCtxDestroy_v2", context)
        destroy_ms.append((time.perf_counter() - start) * 1e3)

    summary = {
        "kernel": platform.release(),  # 4.4.0: gVisor, whose nvproxy carries each driver call
        "device": name.value.decode(),
        "contexts": args.contexts,
        "create_ms_median": statistics.median(create_ms),
        "create_ms_max": max(create_ms),
        "destroy_ms_median": statistics.median(destroy_ms),
        "device_bytes_per_context_median": statistics.median(per_context_bytes)
        if per_context_bytes
        else None,
        "launch_sync_us_one_context": same_us,
        "launch_sync_us_alternating_contexts": switching_us,
        "switch_cost_us": switching_us - same_us,
    }
    print(f"device: {summary['device']}")
    print(
        f"context create: median {summary['create_ms_median']:.1f} ms (max "
        f"{summary['create_ms_max']:.1f}), destroy {summary['destroy_ms_median']:.1f} ms"
    )
    if per_context_bytes:
        print(f"device memory per context: {statistics.median(per_context_bytes) / 2**20:.0f} MiB")
    print(
        f"launch + sync: {same_us:.1f} us in one context, {switching_us:.1f} us alternating "
        f"two: {switching_us - same_us:+.1f} us per switch"
    )
    if args.out:
        with open(args.out, "w") as out:
            json.dump(summary, out, indent=2)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except RuntimeError as error:
        print(f"context cost: {error}")
        sys.exit(1)
