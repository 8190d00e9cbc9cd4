#!/usr/bin/env python3
"""Cross-check kerneleval's GPU timings against PyTorch's own event timing.

Reads the JSON written by kerneleval_cuda_timing_probe (a copy kernel and a
tiled SGEMM timed through CudaBackend) and times, for each case:

  same kernel   the probe's exact CUDA source, compiled with CuPy (NVRTC),
                launched on PyTorch's stream with the same grid, block and
                arguments, timed with torch.cuda.Event around one launch after
                an L2 flush, median of many samples. Should agree with
                kerneleval's median to a few percent: a larger gap means one of
                the two harnesses measures something else.
  library       torch's own operation for the same sizes (Tensor.copy_,
                torch.matmul in strict fp32): context only, a different kernel.

Without the probe's results (no --probe, or a file that cannot be read:
the probe failed) only the library operations are timed, for the probe's
default sizes, so that part still comes back.

Writes a JSON report (--out) and prints a table. Exit status: 0 when every
same-kernel comparison is within --tolerance, 1 otherwise, 2 when nothing
could be compared (no GPU, no probe results).
"""

import argparse
import json
import platform
import statistics
import sys


def time_events(torch, fn, flush, warmup, iters):
    """Median and min [µs] of `fn`, each sample after an L2 flush."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    pairs = []
    for _ in range(iters):
        flush.zero_()
        # Then read it back, as kerneleval's flush does (ke_read_flush): L2
        # holds clean lines, so the timed kernel pays no write-backs of them.
        flush.sum()
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        # Keep the GPU busy (~100 µs) while the host queues the start event and
        # the launch, as kerneleval's stream hold does: host launch latency
        # stays out of the sample on both sides.
        torch.cuda._sleep(200_000)
        start.record()
        fn()
        stop.record()
        pairs.append((start, stop))
    torch.cuda.synchronize()
    samples = [s.elapsed_time(e) * 1000.0 for s, e in pairs]  # ms -> µs
    return statistics.median(samples), min(samples), len(samples)


def make_same_kernel_launch(torch, cupy, numpy, source, case, arch):
    """A callable that launches the probe's kernel with CuPy on torch's stream."""
    module = cupy.RawModule(code=source, options=(f"--gpu-architecture={arch}",))
    kernel = module.get_function(case["kernel"])
    tensors = {}
    for buffer in case["buffers"]:
        tensors[buffer["name"]] = torch.randn(buffer["elements"], device="cuda",
                                              dtype=torch.float32)
    launch = case["launch"]
    args = []
    for arg in launch["args"]:
        if "buffer" in arg:
            args.append(cupy.from_dlpack(tensors[arg["buffer"]]))
        else:
            args.append(numpy.int64(arg["int"]) if arg["bytes"] == 8 else numpy.int32(arg["int"]))
    grid = tuple(launch["grid"]) + (1,) * (3 - len(launch["grid"]))
    block = tuple(launch["block"]) + (1,) * (3 - len(launch["block"]))
    stream = cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)

    def run():
        with stream:
            kernel(grid, block, tuple(args))

    return run, tensors


# The probe's cases at its default sizes (--copy-mib 256, --gemm-n 2048), for
# the library timings when its results are missing.
DEFAULT_CASES = [
    {"name": "copy", "bytes": 2.0 * (256 << 20), "flops": 0,
     "buffers": [{"name": "in", "elements": (256 << 20) // 4},
                 {"name": "out", "elements": (256 << 20) // 4}]},
    {"name": "sgemm", "bytes": 3.0 * 4 * 2048 * 2048, "flops": 2.0 * 2048 ** 3,
     "buffers": [{"name": n, "elements": 2048 * 2048} for n in ("a", "b", "c")]},
]


def make_library_op(torch, case):
    if case["name"] == "copy":
        n = case["buffers"][0]["elements"]
        src = torch.randn(n, device="cuda", dtype=torch.float32)
        dst = torch.empty_like(src)
        return lambda: dst.copy_(src)
    if case["name"] == "sgemm":
        n = int(round(case["buffers"][0]["elements"] ** 0.5))
        a = torch.randn(n, n, device="cuda", dtype=torch.float32)
        b = torch.randn(n, n, device="cuda", dtype=torch.float32)
        c = torch.empty(n, n, device="cuda", dtype=torch.float32)
        return lambda: torch.matmul(a, b, out=c)
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--probe", help="JSON from kerneleval_cuda_timing_probe (missing: "
                        "library timings only, at the probe's default sizes)")
    parser.add_argument("--out", help="write the report here")
    parser.add_argument("--tolerance", type=float, default=0.10,
                        help="largest accepted |torch/kerneleval - 1| for the same kernel")
    parser.add_argument("--iters", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=10)
    args = parser.parse_args()

    report = {"cases": [], "ok": False, "errors": []}
    probe = None
    if args.probe:
        try:
            with open(args.probe) as f:
                probe = json.load(f)
        except (OSError, ValueError) as e:
            print(f"cannot read the probe's results: {e}")
            report["errors"].append(f"no probe results ({e}): library timings only")
    else:
        report["errors"].append("no probe results (no --probe): library timings only")
    if probe is None:
        probe = {"device": {}, "source": None, "cases": DEFAULT_CASES}

    def write_report():
        if args.out:
            with open(args.out, "w") as f:
                json.dump(report, f, indent=2)
    try:
        import numpy
        import torch
    except ImportError as e:
        print(f"no PyTorch: {e}")
        report["errors"].append(f"no PyTorch: {e}")
        write_report()
        return 2
    if not torch.cuda.is_available():
        print("PyTorch sees no CUDA device")
        report["errors"].append("PyTorch sees no CUDA device")
        write_report()
        return 2
    try:
        import cupy
    except ImportError as e:
        cupy = None
        report["errors"].append(f"no CuPy ({e}): same-kernel comparison skipped")

    torch.backends.cuda.matmul.allow_tf32 = False  # strict fp32, like the probe's SGEMM
    props = torch.cuda.get_device_properties(0)
    l2_bytes = getattr(props, "L2_cache_size", 0) or probe["device"].get("l2_bytes", 64 << 20)
    flush = torch.empty(2 * l2_bytes // 4, device="cuda", dtype=torch.float32)
    arch = probe["device"].get("arch")
    report["device"] = {"torch_name": props.name, "torch": torch.__version__,
                        "kernel": platform.release(),  # 4.4.0: gVisor
                        "kerneleval": probe["device"]}

    all_ok = True
    compared = 0
    rows = []
    for case in probe["cases"]:
        entry = {"name": case["name"]}
        ke = case.get("kerneleval")
        if ke is None:
            # No same-kernel comparison; the library timing still comes back.
            entry["error"] = case.get("error", "kerneleval did not time this case")
            all_ok = False
        else:
            entry["kerneleval_median_us"] = ke["median_us"]
        same = None
        if cupy is not None and ke is not None:
            try:
                run, _ = make_same_kernel_launch(torch, cupy, numpy, probe["source"], case, arch)
                median, best, n = time_events(torch, run, flush, args.warmup, args.iters)
                same = median
                entry["torch_same_kernel"] = {"median_us": median, "min_us": best, "samples": n}
                entry["ratio"] = median / ke["median_us"]
                entry["within_tolerance"] = abs(entry["ratio"] - 1) <= args.tolerance
                all_ok = all_ok and entry["within_tolerance"]
                compared += 1
            except Exception as e:  # report and carry on with the next case
                entry["error"] = f"same-kernel timing failed: {e}"
                all_ok = False
        library = None
        op = make_library_op(torch, case)
        if op is not None:
            try:
                median, best, n = time_events(torch, op, flush, args.warmup, args.iters)
                library = median
                entry["torch_library"] = {"median_us": median, "min_us": best, "samples": n}
            except Exception as e:
                entry.setdefault("error", f"library timing failed: {e}")
        work = case["flops"] if case["flops"] else case["bytes"]
        unit, scale = ("TF/s", 1e-12) if case["flops"] else ("GB/s", 1e-9)
        entry["unit"] = unit
        if ke is not None:
            entry["kerneleval_rate"] = work / (ke["median_us"] * 1e-6) * scale
        if library:
            entry["library_rate"] = work / (library * 1e-6) * scale
        status = ("ok" if entry.get("within_tolerance") else
                  "MISMATCH" if "within_tolerance" in entry else entry.get("error", "not compared"))
        rows.append((case["name"], ke["median_us"] if ke else None, same, entry.get("ratio"),
                     library, str(status).splitlines()[0][:100]))
        report["cases"].append(entry)
        write_report()  # after each case: a kill keeps what was timed

    print(f"{'case':8} {'kerneleval[us]':>15} {'torch same[us]':>15} {'ratio':>7} "
          f"{'torch lib[us]':>14}  status")
    for name, ke_us, same_us, ratio, lib_us, status in rows:
        fmt = lambda v, spec: format(v, spec) if v is not None else "-"
        print(f"{name:8} {fmt(ke_us, '15.2f')} {fmt(same_us, '15.2f')} {fmt(ratio, '7.3f')} "
              f"{fmt(lib_us, '14.2f')}  {status}")
    report["ok"] = all_ok and compared > 0
    write_report()
    if compared == 0:
        return 2
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
