#!/usr/bin/env python3
"""kerneleval evaluate end to end (CPU backend): documented exit codes and a
JSON verdict with every field present, false and 0 included."""
import json
import os
import subprocess
import sys
import tempfile

KERNELEVAL = sys.argv[1]
EXAMPLES = sys.argv[2]

GOOD = """// @launch add<<<ceil_div(N, 256), 256>>>(a, b, c, N)
extern "C" __global__ void add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
"""
WRONG = GOOD.replace("a[i] + b[i]", "a[i] * b[i]")
OVERFLOWED = GOOD.replace("a[i] + b[i]", "INFINITY")  # as an fp16 accumulator that overflowed

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(*args):
    return subprocess.run([KERNELEVAL, "evaluate", "--backend", "cpu", *args],
                          capture_output=True, text=True, timeout=600)


with tempfile.TemporaryDirectory() as tmp:
    good = os.path.join(tmp, "good.cu")
    wrong = os.path.join(tmp, "wrong.cu")
    open(good, "w").write(GOOD)
    open(wrong, "w").write(WRONG)
    overflowed = os.path.join(tmp, "overflowed.cu")
    open(overflowed, "w").write(OVERFLOWED)

    r = run("--problem", "vector_add", "--source", good, "--json", "--seed", "5")
    check(r.returncode == 0, f"passing kernel exits 0 (got {r.returncode}: {r.stderr})")
    v = json.loads(r.stdout)
    check(v["correct"] is True and v["stage"] == "passed", "passing verdict")
    check(v["seed"] == "5", "a fixed seed is reported")  # uint64 is a JSON string
    check(v["speedup"] > 0 and v["timing"]["emulated"] is True, "emulated timing present")

    r = run("--problem", "vector_add", "--source", wrong, "--json", "--skip-timing")
    check(r.returncode == 1, f"wrong kernel exits 1 (got {r.returncode})")
    v = json.loads(r.stdout)
    for field in ("correct", "stage", "speedup", "roofline_frac", "reward", "error"):
        check(field in v, f"field {field} present in a failing verdict")
    check(v["correct"] is False and v["stage"] == "correctness", "wrong verdict stage")
    check(v["speedup"] == 0 and v["reward"] == 0, "0 printed, not omitted")
    check("seed" in v and v["seed"] is None, "a secret seed is present as null, not revealed")

    # An Inf where the reference is finite is off by an unbounded amount, not by 0.
    r = run("--problem", "vector_add", "--source", overflowed, "--skip-timing")
    check(r.returncode == 1, f"overflowed kernel exits 1 (got {r.returncode})")
    check("max abs err inf, max rel err inf; first at [0]: got inf" in r.stdout,
          f"non-finite mismatches report infinite errors (got {r.stdout})")

    # A correct kernel without timing: the reward of 0 is explained.
    r = run("--problem", "vector_add", "--source", good, "--skip-timing")
    check(r.returncode == 0, f"--skip-timing passes (got {r.returncode})")
    check("note      not timed (--skip-timing)" in r.stdout,
          f"--skip-timing explains the reward (got {r.stdout})")

    r = run("--problem", "no_such_problem", "--source", good)
    check(r.returncode == 2, f"unknown problem exits 2 (got {r.returncode})")
    check("no_such_problem" in r.stderr, "the error names the problem")

    r = run("--problem", "vector_add", "--source", os.path.join(tmp, "missing.cu"))
    check(r.returncode == 2, f"missing source exits 2 (got {r.returncode})")

    r = run("--problem", "softmax", "--source", os.path.join(EXAMPLES, "softmax.cu"),
            "--skip-timing")
    check(r.returncode == 0, f"the README's example kernel passes (got {r.returncode}: {r.stdout}{r.stderr})")
    check("stage     passed" in r.stdout, "readable verdict printed")

    # Several sources: one group, a verdict each in order, a ranking.
    r = run("--problem", "vector_add", "--source", good, "--source", wrong, "--json", "--partial")
    check(r.returncode == 1, f"a group with a wrong kernel exits 1 (got {r.returncode}: {r.stderr})")
    g = json.loads(r.stdout)
    stages = [v["stage"] for v in g["verdicts"]]
    check(stages == ["passed", "correctness"], f"group verdicts in order (got {stages})")
    check(g["verdicts"][1]["reward"] == 0.05, "partial credit applies to the group")
    check(g["reference_timing"]["samples"] > 0, "one shared reference measurement")
    check(all("seed" in v and v["seed"] is None for v in g["verdicts"]),
          "every group verdict has a seed field")
    r = run("--problem", "vector_add", "-s", wrong, "-s", good, "--skip-timing")
    check(r.returncode == 1, f"group text output exits 1 (got {r.returncode})")
    ranking = r.stdout[r.stdout.find("rank"):].splitlines()
    check(len(ranking) == 3 and "good.cu" in ranking[1] and "wrong.cu" in ranking[2],
          f"ranking puts the correct kernel first (got {ranking})")
    r = run("--problem", "vector_add", "--source", wrong, "--skip-timing")
    check("failing checks (an output on a case); the first" in r.stdout,
          f"the text output says the failing checks shown are the first few (got {r.stdout})")
    r = run("--problem", "vector_add", "-s", good, "-s", good, "--skip-timing")
    check(r.returncode == 0, f"a group of correct kernels exits 0 (got {r.returncode}: {r.stderr})")
    check(r.stdout.count("cached    identical to an earlier source of this group") == 1,
          f"the repeated source of a group is marked as run once (got {r.stdout})")

    # --timeout is each run's limit as given (not cut at a multiple of the
    # reference's run): a kernel that spins ends at 1 s with a timeout.
    spin = os.path.join(tmp, "spin.cu")
    open(spin, "w").write(GOOD.replace("if (i < n) c[i] = a[i] + b[i];",
                                       "volatile int k = 0; while (true) { k = k + 1; }"))
    r = run("--problem", "vector_add", "--source", spin, "--skip-timing", "--json",
            "--timeout", "1")
    check(r.returncode == 1, f"a spinning kernel exits 1 (got {r.returncode}: {r.stderr})")
    v = json.loads(r.stdout)
    check(v["stage"] == "timeout" and "within 1 s" in v["error"]
          and "the reference's run" not in v["error"],
          f"--timeout 1 is the limit as given (got {v['stage']}: {v['error']})")

    r = subprocess.run([KERNELEVAL, "evaluate", "--source", good], capture_output=True, text=True)
    check(r.returncode == 2, "a usage error exits 2")

    # A failing verdict's JSON has every message too, empty: a script reading
    # d["timing"]["candidate"]["samples"] gets 0, not a KeyError.
    r = run("--problem", "vector_add", "--source", wrong, "--json")
    v = json.loads(r.stdout)
    check(v["timing"]["candidate"]["samples"] == 0 and v["correctness"]["passed"] is False,
          f"an untimed verdict has an empty timing message (got {sorted(v)})")

    # The invocation's own mistakes exit 2, never 1 (a failing kernel) or 3
    # (the server): a config typo must not pass for a bad kernel in CI.
    for args, what in (
        (["--arch", "sm_999"], "an architecture NVRTC refuses"),
        (["--arch", "sm_1"], "a malformed architecture"),
        (["--option=--evil"], "an option off the allow-list"),
        (["--seed", "-5"], "a negative seed"),
    ):
        r = run("--problem", "vector_add", "--source", good, "--skip-timing", *args)
        check(r.returncode == 2, f"{what} exits 2 (got {r.returncode}: {r.stderr[-300:]})")
    # (The limit has a floor of 0.05 s; softmax's reference takes longer on
    # the CPU backend.)
    r = run("--problem", "softmax", "--source", os.path.join(EXAMPLES, "softmax.cu"),
            "--skip-timing", "--timeout", "0.001")
    check(r.returncode == 2 and "limits.timeout_seconds" in r.stderr,
          f"a limit the reference cannot meet exits 2 (got {r.returncode}: {r.stderr[-300:]})")
    r = run("--problem", "vector_add", "--source", good, "--source", good, "--skip-timing",
            "--arch", "sm_999")
    check(r.returncode == 2, f"a refused architecture exits 2 for a group (got {r.returncode})")
    # A kernel whose own #error quotes NVRTC's refusal is still a failed compile.
    quoting = os.path.join(tmp, "quoting.cu")
    open(quoting, "w").write("#error nvrtc: error: invalid value for --gpu-architecture\n" + GOOD)
    r = run("--problem", "vector_add", "--source", quoting, "--skip-timing")
    check(r.returncode == 1, f"a kernel's own #error exits 1 (got {r.returncode}: {r.stderr[-300:]})")
    r = subprocess.run([KERNELEVAL, "evalute", "-p", "vector_add"], capture_output=True, text=True)
    check(r.returncode == 2 and "unknown subcommand 'evalute'" in r.stderr,
          f"a misspelt subcommand is named (got {r.returncode}: {r.stderr})")

    # Engine logs go to stderr: stdout stays one JSON document whatever they
    # say (an engine warning once came first on stdout and broke the JSON).
    r = subprocess.run([KERNELEVAL, "evaluate", "--backend", "cpu", "--problem", "vector_add",
                        "--source", wrong, "--json", "--skip-timing"], capture_output=True,
                       text=True, timeout=600, env={**os.environ, "SPDLOG_LEVEL": "debug"})
    try:
        json.loads(r.stdout)
        parsed = True
    except json.JSONDecodeError:
        parsed = False
    check(parsed and "[debug]" in r.stderr,
          f"with SPDLOG_LEVEL=debug stdout is still JSON, the logs on stderr ({r.stdout[:200]})")

# Every command run with --json that fails prints one JSON error object on
# stdout (besides the message on stderr), usage errors included: a negative
# seed, an unknown problem for `problems show` and an empty source for
# `compile` printed nothing there (docs audit rt9 #1).
with tempfile.TemporaryDirectory() as tmp:
    empty = os.path.join(tmp, "empty.cu")
    open(empty, "w").write("")
    for args, code in [
            (["evaluate", "-p", "vector_add", "-s", empty.replace("empty", "missing"), "--json"],
             "INVALID_ARGUMENT"),
            (["evaluate", "-p", "vector_add", "-s", empty, "--json", "--seed", "-1"],
             "INVALID_ARGUMENT"),
            (["evaluate", "-p", "vector_add", "--json"], "INVALID_ARGUMENT"),  # no -s
            (["evaluate", "-p", "vector_add", "--json", "--no-such-flag"], "INVALID_ARGUMENT"),
            (["compile", empty, "--json"], "INVALID_ARGUMENT"),
            (["problems", "show", "no_such_problem", "--json"], "NOT_FOUND"),
            (["problems", "list", "--json", "--tag"], "INVALID_ARGUMENT"),
            (["peaks", "h100", "--json"], "INVALID_ARGUMENT"),
            (["devices", "--json", "--server", "127.0.0.1:1", "--rpc-timeout", "2"],
             "UNAVAILABLE")]:
        r = subprocess.run([KERNELEVAL, *args], capture_output=True, text=True, timeout=120)
        try:
            error = json.loads(r.stdout)["error"]
        except (json.JSONDecodeError, KeyError, TypeError):
            error = {}
        check(r.returncode in (2, 3) and error.get("exit_code") == r.returncode and
              error.get("code") == code and error.get("message") and r.stderr.strip(),
              f"{' '.join(args)}: a {code} error object on stdout and a message on stderr "
              f"(rc {r.returncode}, stdout {r.stdout[:300]!r}, stderr {r.stderr[-200:]!r})")
    r = subprocess.run([KERNELEVAL, "evaluate", "--help", "--json"], capture_output=True,
                       text=True, timeout=60)
    check(r.returncode == 0 and "--problem" in r.stdout,
          f"--help with --json is still the help (rc {r.returncode}: {r.stdout[:200]!r})")

# Against a server (when its binary is given): a group whose deadline
# (--rpc-timeout) leaves kernels unjudged while no judged one failed exits 3,
# not 1 (a failed kernel) or 0, and its JSON names them "not_evaluated". Two
# hanging kernels under a 10 s deadline: the correctness runs end 4.5 s into
# it (half of the 9 s before the answer is due), before a hang is cut at the
# 5 s floor.
if len(sys.argv) > 3:
    import re
    import threading
    server = subprocess.Popen([sys.argv[3], "--backend", "cpu", "--listen", "127.0.0.1:0"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    port = None
    log = []
    timer = threading.Timer(120, server.kill)  # a server that never listens
    timer.start()
    for line in server.stdout:
        log.append(line)
        match = re.search(r"listening on port ([0-9]+)", line)
        if match:
            port = match.group(1)
            break
    timer.cancel()
    threading.Thread(target=lambda: [log.append(l) for l in server.stdout], daemon=True).start()
    try:
        check(port is not None, f"the server listens ({''.join(log)[-500:]})")
        if port is not None:
            with tempfile.TemporaryDirectory() as tmp:
                paths = []
                for name, source in [("good", GOOD)] + [
                        (f"hang{k}", GOOD.replace("if (i < n) c[i] = a[i] + b[i];",
                                                 f"while ({k + 1}) {{ if (i < n) c[i] = a[i] + "
                                                 f"b[i]; __threadfence(); }}"))
                        for k in range(2)]:
                    paths.append(os.path.join(tmp, name + ".cu"))
                    open(paths[-1], "w").write(source)
                args = [KERNELEVAL, "evaluate", "--server", f"127.0.0.1:{port}", "--rpc-timeout",
                        "10", "--problem", "vector_add", "--json"]
                for path in paths:
                    args += ["--source", path]
                r = subprocess.run(args, capture_output=True, text=True, timeout=120)
                check(r.returncode == 3,
                      f"a group its deadline left unjudged exits 3 (got {r.returncode}: "
                      f"{r.stdout[-600:]} {r.stderr[-300:]})")
                try:
                    stages = [v["stage"] for v in json.loads(r.stdout)["verdicts"]]
                except (json.JSONDecodeError, KeyError, TypeError):
                    stages = []
                check(stages[1:] == ["not_evaluated"] * 2 and stages[0] in ("passed",
                                                                            "not_evaluated"),
                      f"the hanging kernels are not_evaluated, the correct one passed or "
                      f"not_evaluated (got {stages})")
    finally:
        server.kill()
        server.wait()

print("evaluate CLI:", "ok" if not failures else f"{len(failures)} checks failed")
sys.exit(1 if failures else 0)
