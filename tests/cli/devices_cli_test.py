#!/usr/bin/env python3
"""kerneleval devices (and the engine's CUDA wiring) against the test driver
tests/support/fake_cuda, chosen with KERNELEVAL_CUDA_DRIVER: one CUDA worker
per device, each describing its device; without a driver, the CPU alone."""
import json
import os
import subprocess
import sys

KERNELEVAL = sys.argv[1]
FAKE_DRIVER = sys.argv[2]
EXAMPLES = sys.argv[3]

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(args, **env):
    full_env = dict(os.environ)
    full_env.pop("KERNELEVAL_CUDA_DRIVER", None)
    full_env.update(env)
    return subprocess.run([KERNELEVAL, *args], capture_output=True, text=True, timeout=300,
                          env=full_env)


# Two fake devices: two CUDA workers, then the CPU backend.
listed = run(["devices", "--json"], KERNELEVAL_CUDA_DRIVER=FAKE_DRIVER,
             KERNELEVAL_FAKE_CUDA_DEVICES="2")
check(listed.returncode == 0, f"devices --json exits 0 (got {listed.returncode}: {listed.stderr})")
devices = json.loads(listed.stdout)["devices"] if listed.returncode == 0 else []
ids = [d["id"] for d in devices]
check(ids == ["cuda:0", "cuda:1", "cpu"], f"devices are cuda:0, cuda:1, cpu (got {ids})")
for device in devices[:2]:
    check(device["name"] == "kerneleval fake CUDA device (host CPU)", f"name of {device}")
    check(device["backend"] == "cuda" and device["ready"], f"{device['id']} is a ready cuda device")
    check(device["compute_capability_major"] == 9 and device["compute_capability_minor"] == 0,
          f"{device['id']} reports compute capability 9.0")
    # Read through the attribute macro that once left every value at 0.
    check(device["sm_count"] == 4 and device["l2_bytes"] == "1048576",
          f"{device['id']} reports 4 SMs and 1 MiB of L2 (got {device})")
    check(device["roofline_known"] is False, f"{device['id']} has no roofline (not in the table)")

# Table form names the devices too.
table = run(["devices"], KERNELEVAL_CUDA_DRIVER=FAKE_DRIVER)
check(table.returncode == 0 and "cuda:0" in table.stdout and "cuda:1" not in table.stdout,
      f"devices (one fake device) lists cuda:0 only:\n{table.stdout}{table.stderr}")

# A library that is not a driver: the CPU backend alone, no crash.
no_driver = run(["devices", "--json"], KERNELEVAL_CUDA_DRIVER="/nonexistent/libcuda.so.1")
check(no_driver.returncode == 0, f"devices without a driver exits 0 ({no_driver.stderr})")
if no_driver.returncode == 0:
    only = [d["id"] for d in json.loads(no_driver.stdout)["devices"]]
    check(only == ["cpu"], f"without a driver only the CPU backend is listed (got {only})")

# The engine's CUDA path reaches the worker: NVRTC's CUBIN is refused by the
# test driver (it runs host code only), so is the PTX it falls back to (it
# cannot JIT), and that is a clear error with both of the driver's reasons,
# not a crash.
evaluated = run(["evaluate", "--problem", "softmax", "--source",
                 os.path.join(EXAMPLES, "softmax.cu"), "--backend", "cuda"],
                KERNELEVAL_CUDA_DRIVER=FAKE_DRIVER)
check(evaluated.returncode == 3,
      f"evaluate on the fake device is refused (exit 3), not judged (got {evaluated.returncode})")
check("CUDA_ERROR_NO_BINARY_FOR_GPU" in evaluated.stderr and "cannot JIT-compile PTX" in
      evaluated.stderr, f"the driver's reasons reach the user:\n{evaluated.stderr}")

if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("devices CLI: all checks passed")
