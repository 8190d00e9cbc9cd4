#!/usr/bin/env python3
"""End-to-end test of `kerneleval rescore` (cli/rescore_command.cc).

Usage: rescore_cli_test.py PATH/TO/kerneleval. Expected rewards are computed by
hand from the seed's formulas (rubric/README.md), then taken from the seed itself
(tests/rubric/golden_rewards.jsonl) for every row of the golden; exit 0 on success.
"""

import json
import os
import subprocess
import sys
import tempfile

KERNELEVAL = sys.argv[1]
ENV_VARS = ("KERNEL_ENV_REWARD", "KERNEL_ENV_PARTIAL_CREDIT")
failures = []

# (input object, reward speedup, speedup+partial, roofline, roofline+partial)
ROWS = [
    ({"id": 1, "correct": True, "stage": "passed", "speedup": 2.0, "roofline_frac": 0.5,
      "reward": 99.0}, 1.3, 1.3, 0.3 + 2.7 * 0.5, 0.3 + 2.7 * 0.5),
    ({"correct": True, "stage": "passed", "speedup": 100, "roofline_frac": None}, 3.3, 3.3, 3.3, 3.3),
    ({"correct": True, "stage": "passed", "speedup": 0.5}, 0.3 - 0.2, 0.3 - 0.2, 0.3 - 0.2, 0.3 - 0.2),
    ({"correct": True, "stage": "passed"}, 0.0, 0.0, 0.0, 0.0),
    ({"correct": True, "stage": "passed", "speedup": 4.0, "roofline_frac": 2.0}, 2.3, 2.3, 3.0, 3.0),
    # NaN roofline: the seed gives NaN; kerneleval reports 0 (rubric/README.md "NaN policy").
    ({"correct": True, "stage": "passed", "speedup": 4.0, "roofline_frac": "nan"}, 2.3, 2.3, 0.0, 0.0),
    ({"correct": True, "stage": "passed", "speedup": "inf"}, 3.3, 3.3, 3.3, 3.3),
    ({"correct": False, "stage": "correctness", "speedup": None}, 0.0, 0.05, 0.0, 0.05),
    ({"correct": False, "stage": "runtime", "extra": {"nested": [1, 2]}}, 0.0, 0.02, 0.0, 0.02),
    ({"correct": False, "stage": "timeout"}, 0.0, 0.02, 0.0, 0.02),
    ({"correct": False, "stage": "compile", "speedup": 3.0}, 0.0, 0.0, 0.0, 0.0),
]
COLUMNS = {("speedup", False): 1, ("speedup", True): 2, ("roofline", False): 3,
           ("roofline", True): 4}


def run(args, stdin=None, env=None):
    clean = {k: v for k, v in os.environ.items() if k not in ENV_VARS}
    clean.update(env or {})
    return subprocess.run([KERNELEVAL, "rescore", *args], input=stdin, capture_output=True,
                          text=True, env=clean, timeout=30)


def check(name, condition, detail=""):
    if not condition:
        failures.append(f"{name}: {detail}")


def check_rewards(name, result, mode, partial):
    check(name + " exit", result.returncode == 0, f"rc={result.returncode} {result.stderr}")
    lines = result.stdout.splitlines()
    # The input's trailing blank line comes back blank: line N is line N.
    check(name + " lines", len(lines) == len(ROWS) + 1 and lines[-1] == "", f"{len(lines)} lines")
    lines = lines[:-1]
    for line, row in zip(lines, ROWS):
        out = json.loads(line)
        expected = row[COLUMNS[(mode, partial)]]
        check(name, abs(out["reward"] - expected) <= 1e-12, f"{row[0]} -> {out['reward']}, "
              f"want {expected}")
        # Every other field kept, in order; "reward" replaced in place or appended.
        keys = list(row[0]) + ([] if "reward" in row[0] else ["reward"])
        check(name + " keys", list(out) == keys, f"{list(out)} vs {keys}")
        check(name + " fields", all(out[k] == v for k, v in row[0].items() if k != "reward"),
              line)


with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "verdicts.jsonl")
    text = "\n".join(json.dumps(row[0]) for row in ROWS) + "\n\n"  # a trailing blank line
    with open(path, "w") as f:
        f.write(text)

    check_rewards("default", run([path]), "speedup", False)
    check_rewards("stdin roofline partial", run(["--mode", "roofline", "--partial", "-"], text),
                  "roofline", True)
    check_rewards("env defaults", run([path], env={"KERNEL_ENV_REWARD": "roofline",
                                                   "KERNEL_ENV_PARTIAL_CREDIT": "1"}),
                  "roofline", True)
    check_rewards("--no-partial beats env", run(["--no-partial", path],
                                                 env={"KERNEL_ENV_PARTIAL_CREDIT": "1"}),
                  "speedup", False)
    check_rewards("partial env not exactly 1", run([path], env={"KERNEL_ENV_PARTIAL_CREDIT": "true"}),
                  "speedup", False)
    check_rewards("--mode beats env", run(["--mode", "speedup", "--partial", path],
                                          env={"KERNEL_ENV_REWARD": "bogus"}),
                  "speedup", True)

    # proto3 JSON's spellings of non-finite numbers (what `evaluate --json` writes).
    for spelling, value in [("NaN", float("nan")), ("Infinity", float("inf")),
                            ("-Infinity", float("-inf"))]:
        row = {"correct": True, "stage": "passed", "speedup": spelling}
        result = run(["-"], stdin=json.dumps(row) + "\n")
        check(f"speedup {spelling!r} exit", result.returncode == 0,
              f"rc={result.returncode} {result.stderr}")
        if result.returncode == 0:
            expected = {"NaN": 0.0, "Infinity": 3.3, "-Infinity": 0.0}[spelling]
            out = json.loads(result.stdout)
            check(f"speedup {spelling!r} reward", abs(out["reward"] - expected) <= 1e-12,
                  f"{out['reward']} want {expected}")
            check(f"speedup {spelling!r} kept", out["speedup"] == spelling, result.stdout)

    # A verdict's reward_settings follow the settings the reward was computed with.
    verdict = {"correct": False, "stage": "correctness", "speedup": 0, "reward": 0,
               "reward_settings": {"mode": "REWARD_MODE_SPEEDUP", "partial_credit": False},
               "problem_id": "vector_add"}
    result = run(["--mode", "roofline", "--partial", "-"], stdin=json.dumps(verdict) + "\n")
    check("reward_settings exit", result.returncode == 0, f"rc={result.returncode} {result.stderr}")
    if result.returncode == 0:
        out = json.loads(result.stdout)
        check("reward_settings updated", out["reward_settings"] ==
              {"mode": "REWARD_MODE_ROOFLINE", "partial_credit": True}, result.stdout)
        check("reward_settings reward", out["reward"] == 0.05, result.stdout)
        check("reward_settings keys in order", list(out) == list(verdict), result.stdout)

    # Usage errors: exit 2 with a message naming the problem.
    for name, args, env, needle in [
        ("unknown --mode", ["--mode", "fastest", path], {}, '"fastest"'),
        ("empty env mode", [path], {"KERNEL_ENV_REWARD": ""}, "KERNEL_ENV_REWARD"),
        ("both partial flags", ["--partial", "--no-partial", path], {}, "excludes"),
        ("missing file", [os.path.join(tmp, "absent.jsonl")], {}, "absent.jsonl"),
    ]:
        result = run(args, env=env)
        check(name, result.returncode == 2 and needle in result.stderr,
              f"rc={result.returncode} stderr={result.stderr!r}")

    # Malformed input: stops at the first bad line (named), after printing the good ones.
    good = json.dumps(ROWS[0][0])
    for bad, needle in [("{not json", "not valid JSON"),
                        ('{"correct": "yes", "stage": "passed"}', '"correct"'),
                        ('{"correct": true}', '"stage"'),
                        ('{"correct": true, "stage": "passed", "speedup": "fast"}', '"speedup"'),
                        ('[1, 2]', "not a JSON object")]:
        result = run(["-"], stdin="\n".join([good, "", bad, good]) + "\n")
        check(f"malformed {bad}", result.returncode == 2, f"rc={result.returncode}")
        check(f"malformed {bad} names line 3", "<stdin>:3:" in result.stderr and
              needle in result.stderr, repr(result.stderr))
        check(f"malformed {bad} prints good lines", result.stdout.count("\n") == 2,
              repr(result.stdout))  # the good line and the blank one

    # A group's response, as `kerneleval evaluate -s a -s b --json` prints it:
    # each verdict rescored.
    group = {"verdicts": [dict(ROWS[0][0]), {"correct": False, "stage": "correctness"}]}
    result = run(["-"], stdin=json.dumps(group) + "\n")
    check("group exit", result.returncode == 0, f"rc={result.returncode} {result.stderr}")
    out = json.loads(result.stdout) if result.returncode == 0 else {"verdicts": [{}, {}]}
    check("group first", abs(out["verdicts"][0].get("reward", -1) -
                             ROWS[0][COLUMNS[("speedup", False)]]) <= 1e-12, result.stdout)
    check("group second", out["verdicts"][1].get("reward") == 0.0, result.stdout)

    # Numbers a double cannot hold as written come back as written: an id
    # past 64 bits (was rewritten 1.2345678901234568e+29), and a speedup of
    # 1e400, which Python's json reads as inf (was "not valid JSON"); a string
    # that looks like one stays a string.
    line = ('{"id": 123456789012345678901234567890, "correct": true, "stage": "passed", '
            '"speedup": 1e400, "low": -99999999999999999999999, "s": "1e400 \\"7\\" 9", '
            '"ok": 18446744073709551615}')
    result = run(["-", "--mode", "speedup"], stdin=line + "\n")
    check("numbers as written exit", result.returncode == 0, f"rc={result.returncode} {result.stderr}")
    out = result.stdout.strip()
    for token in ('"id":123456789012345678901234567890', '"speedup":1e400',
                  '"low":-99999999999999999999999', '"s":"1e400 \\"7\\" 9"',
                  '"ok":18446744073709551615'):
        check(f"{token} kept as written", token in out, out)
    parsed = json.loads(out) if result.returncode == 0 else {}
    check("a speedup of 1e400 scores as inf", parsed.get("reward") == 0.3 + 3.0, out)

# Parity with the seed, through the CLI: every row of the rubric's golden file
# (tests/rubric/make_golden.py: the seed's rewards for ~13k observations, edge
# cases included), rescored in each of the four settings. rescore reports the
# sanitized reward (rubric/README.md "NaN policy": a non-finite reward is 0).
GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "rubric",
                      "golden_rewards.jsonl")
NON_FINITE = {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf")}
with open(GOLDEN) as f:
    golden = [json.loads(line) for line in f if line.strip()]
configs = [row for row in golden if "config" in row]
golden = [row for row in golden if "meta" not in row and "config" not in row]
check("golden rows", len(golden) > 1000, f"{len(golden)} rows in {GOLDEN}")
golden_text = "".join(
    json.dumps({k: v for k, v in row.items() if k != "reward"}) + "\n" for row in golden)
for column, args in [("speedup", ["--mode", "speedup", "--no-partial"]),
                     ("speedup+partial", ["--mode", "speedup", "--partial"]),
                     ("roofline", ["--mode", "roofline", "--no-partial"]),
                     ("roofline+partial", ["--mode", "roofline", "--partial"])]:
    result = run([*args, "-"], stdin=golden_text)
    check(f"golden {column} exit", result.returncode == 0,
          f"rc={result.returncode} {result.stderr[:500]}")
    lines = result.stdout.splitlines()
    check(f"golden {column} lines", len(lines) == len(golden), f"{len(lines)} of {len(golden)}")
    mismatches = []
    for line, row in zip(lines, golden):
        seed = row["reward"][column]
        seed = NON_FINITE.get(seed, seed) if isinstance(seed, str) else float(seed)
        want = seed if seed == seed and abs(seed) != float("inf") else 0.0
        got = json.loads(line)["reward"]
        if not (got == want or abs(got - want) <= 1e-12 * max(1.0, abs(want))):
            mismatches.append(f"{ {k: v for k, v in row.items() if k != 'reward'} } -> {got}, "
                              f"seed {row['reward'][column]}")
    check(f"golden {column}", not mismatches,
          f"{len(mismatches)} of {len(golden)} differ, e.g. {mismatches[:3]}")

# The seed's settings resolution (kernel_rubric(mode, partial) and its two
# variables): rescore's --mode / --partial / --no-partial stand for the
# arguments; a KeyError there is exit 2 here, else both probes score alike.
PROBES = ('{"correct": true, "stage": "passed", "speedup": 2.0, "roofline_frac": 0.5}\n'
          '{"correct": false, "stage": "correctness", "speedup": null, "roofline_frac": null}\n')
check("golden configs", len(configs) > 100, f"{len(configs)} config rows")
for row in configs:
    config = row["config"]
    args = ["--mode", config["mode_arg"]] if config["mode_arg"] else []
    if config["partial_arg"] is not None:
        args.append("--partial" if config["partial_arg"] else "--no-partial")
    env = {name: config[key] for name, key in (("KERNEL_ENV_REWARD", "env_reward"),
                                                ("KERNEL_ENV_PARTIAL_CREDIT", "env_partial"))
           if config[key] is not None}
    result = run([*args, "-"], stdin=PROBES, env=env)
    if "error" in row:
        check(f"config {config}", result.returncode == 2,
              f"the seed raises {row['error']}; rescore rc={result.returncode}")
        continue
    got = [json.loads(line)["reward"] for line in result.stdout.splitlines()]
    check(f"config {config}", result.returncode == 0 and got == row["probe_rewards"],
          f"rc={result.returncode} rewards {got}, seed {row['probe_rewards']} {result.stderr}")

if failures:
    print("\n".join(failures), file=sys.stderr)
    print(f"{len(failures)} check(s) failed", file=sys.stderr)
    sys.exit(1)
print("rescore CLI: all checks passed")
