#!/usr/bin/env python3
"""Golden rewards for the C++ rubric, produced by the seed's reward_rubric.py itself.

Imports the seed file verbatim (by path) with openenv-core installed and scores a
reproducible set of observations (seeded RNG plus an edge-case grid) in both modes,
partial credit on and off, plus a grid of mode/partial arguments and environment
variables. Writes JSON lines:

  line 1:        {"meta": {...}}
  observations:  {"correct", "stage", "speedup", "roofline_frac",
                  "reward": {"speedup", "speedup+partial", "roofline", "roofline+partial"}}
  configs:       {"config": {"mode_arg", "partial_arg", "env_reward", "env_partial"},
                  "probe_rewards": [...]} or {..., "error": "KeyError"}

Doubles are Python repr (shortest round-trip, exact); missing is null; non-finite
values are the strings "nan", "inf", "-inf".

Seed path: --seed, else $KERNELEVAL_SEED_RUBRIC, else <repo>/../shared/seed/reward_rubric.py,
else /work/shared/seed/reward_rubric.py.

  make_golden.py [--seed PATH] [--out PATH]   write the golden (default: next to this file)
  make_golden.py [--seed PATH] --check PATH   regenerate into a temp file and diff against PATH;
                                              exit 77 (skip) if openenv-core or the default seed is missing
"""

import argparse
import difflib
import hashlib
import importlib.util
import json
import math
import os
import random
import sys
import tempfile
import types

SKIP = 77  # ctest SKIP_RETURN_CODE
RNG_SEED = 20250131
NUM_RANDOM = 9000
HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))

NAN, INF = float("nan"), float("inf")
STAGES = ["passed", "compile", "runtime", "timeout", "correctness", "", "unknown", "Runtime",
          " correctness"]
SPEEDUP_EDGES = [None, 0.0, -0.0, -1.0, -1e-300, 1e-300, 5e-324, 2.2250738585072014e-308,
                 1e300, 1.7976931348623157e308, INF, -INF, NAN, 1.0, 2 ** -0.2,
                 math.nextafter(2 ** -0.2, 0), math.nextafter(2 ** -0.2, 1), 8.0,
                 math.nextafter(8.0, 0), math.nextafter(8.0, 16), 0.5, 100.0]
ROOFLINE_EDGES = [None, 0.0, -0.0, -1.0, -1 / 9, -0.5, -INF, 1e-300, 5e-324, 0.5, 1.0,
                  math.nextafter(1.0, 0), math.nextafter(1.0, 2), 2.0, 1e300, INF, NAN]
# (mode, partial) column names of the "reward" object.
CONFIGS = [("speedup", False), ("speedup", True), ("roofline", False), ("roofline", True)]


def column(mode, partial):
    return mode + ("+partial" if partial else "")


def find_seed(cli_path):
    """An explicit path (--seed, else $KERNELEVAL_SEED_RUBRIC) must exist; otherwise the
    first of the default locations that does."""
    explicit = cli_path or os.environ.get("KERNELEVAL_SEED_RUBRIC")
    candidates = [explicit] if explicit else [
        os.path.join(REPO_ROOT, "..", "shared", "seed", "reward_rubric.py"),
        "/work/shared/seed/reward_rubric.py"]
    for path in candidates:
        if os.path.isfile(path):
            return os.path.abspath(path)
    return None


def load_seed(path):
    spec = importlib.util.spec_from_file_location("seed_reward_rubric", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def encode(x):
    if x is None:
        return None
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return float(x)


def observation(correct, stage, speedup, roofline_frac):
    return types.SimpleNamespace(correct=correct, stage=stage, speedup=speedup,
                                 roofline_frac=roofline_frac)


def random_speedup(rng):
    u = rng.random()
    if u < 0.05:
        return None
    if u < 0.15:
        return rng.choice(SPEEDUP_EDGES)
    if u < 0.65:
        return 2.0 ** rng.uniform(-6.0, 6.0)
    if u < 0.85:
        return rng.uniform(-1.0, 12.0)
    if u < 0.90:
        return 2.0 ** rng.uniform(-1070.0, 1020.0)
    # Around the clamp's corners: 2^-0.2 and 2^3.
    return rng.choice([2 ** -0.2, 8.0]) * (1.0 + rng.uniform(-1e-12, 1e-12))


def random_roofline(rng):
    u = rng.random()
    if u < 0.20:
        return None
    if u < 0.30:
        return rng.choice(ROOFLINE_EDGES)
    if u < 0.70:
        return rng.random()
    if u < 0.85:
        return rng.uniform(-0.5, 1.5)
    if u < 0.90:
        return 10.0 ** rng.uniform(-320.0, 3.0)
    return 1.0 + rng.uniform(-1e-12, 1e-12)


def observations(rng):
    for speedup in SPEEDUP_EDGES:
        for roofline_frac in ROOFLINE_EDGES:
            for stage in ["passed", "unknown"]:
                yield True, stage, speedup, roofline_frac
            for stage in STAGES:
                yield False, stage, speedup, roofline_frac
    for _ in range(NUM_RANDOM):
        correct = rng.random() < 0.7
        stage = "passed" if correct and rng.random() < 0.8 else rng.choice(STAGES)
        yield correct, stage, random_speedup(rng), random_roofline(rng)


# Probes that tell the configured mode and partial credit apart:
# speedup mode gives 1.3 / 0, roofline mode 1.65 / 0, partial credit 0.05 for the second.
PROBES = [observation(True, "passed", 2.0, 0.5), observation(False, "correctness", None, None)]
MODE_ARGS = ["", "speedup", "roofline", "bogus", "Speedup"]
PARTIAL_ARGS = [None, True, False]
ENV_REWARDS = [None, "", "speedup", "roofline", "bogus", "ROOFLINE"]
ENV_PARTIALS = [None, "", "1", "0", "true", " 1", "1 "]
ENV_NAMES = ("KERNEL_ENV_REWARD", "KERNEL_ENV_PARTIAL_CREDIT")


def set_env(name, value):
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


def config_rows(seed):
    saved = {name: os.environ.get(name) for name in ENV_NAMES}
    try:
        for mode_arg in MODE_ARGS:
            for partial_arg in PARTIAL_ARGS:
                for env_reward in ENV_REWARDS:
                    for env_partial in ENV_PARTIALS:
                        set_env("KERNEL_ENV_REWARD", env_reward)
                        set_env("KERNEL_ENV_PARTIAL_CREDIT", env_partial)
                        row = {"config": {"mode_arg": mode_arg, "partial_arg": partial_arg,
                                          "env_reward": env_reward, "env_partial": env_partial}}
                        try:
                            rubric = seed.kernel_rubric(mode_arg, partial_arg)
                            row["probe_rewards"] = [encode(rubric(None, p)) for p in PROBES]
                        except Exception as e:  # the seed's KeyError for an unknown mode
                            row["error"] = type(e).__name__
                        yield row
    finally:
        for name, value in saved.items():
            set_env(name, value)


def generate(seed_path, out):
    seed = load_seed(seed_path)
    with open(seed_path, "rb") as f:
        seed_sha256 = hashlib.sha256(f.read()).hexdigest()
    rubrics = {column(m, p): seed.kernel_rubric(m, p) for m, p in CONFIGS}
    rows = list(observations(random.Random(RNG_SEED)))
    meta = {"generator": "tests/rubric/make_golden.py", "seed_file": "reward_rubric.py",
            "seed_sha256": seed_sha256, "rng_seed": RNG_SEED, "observations": len(rows),
            "columns": [column(m, p) for m, p in CONFIGS]}
    dump = lambda obj: json.dumps(obj, allow_nan=False, separators=(",", ":")) + "\n"
    out.write(dump({"meta": meta}))
    for correct, stage, speedup, roofline_frac in rows:
        obs = observation(correct, stage, speedup, roofline_frac)
        out.write(dump({"correct": correct, "stage": stage, "speedup": encode(speedup),
                        "roofline_frac": encode(roofline_frac),
                        "reward": {name: encode(r(None, obs)) for name, r in rubrics.items()}}))
    for row in config_rows(seed):
        out.write(dump(row))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", help="path to the seed's reward_rubric.py")
    parser.add_argument("--out", default=os.path.join(HERE, "golden_rewards.jsonl"))
    parser.add_argument("--check", metavar="GOLDEN", help="diff a fresh run against GOLDEN")
    args = parser.parse_args()

    seed_path = find_seed(args.seed)
    if seed_path is None:
        print("make_golden: seed reward_rubric.py not found (use --seed or "
              "$KERNELEVAL_SEED_RUBRIC)", file=sys.stderr)
        explicit = args.seed or os.environ.get("KERNELEVAL_SEED_RUBRIC")
        return SKIP if args.check and not explicit else 2
    try:
        import openenv.core.rubrics  # noqa: F401  (the seed imports it)
    except ImportError as e:
        print(f"make_golden: openenv-core not importable ({e}); "
              "pip install openenv-core==0.3.0", file=sys.stderr)
        return SKIP if args.check else 2

    if not args.check:
        with open(args.out, "w", newline="\n") as out:
            generate(seed_path, out)
        print(f"make_golden: wrote {args.out} from {seed_path}")
        return 0

    with tempfile.TemporaryDirectory() as tmp:
        fresh_path = os.path.join(tmp, "golden_rewards.jsonl")
        with open(fresh_path, "w", newline="\n") as out:
            generate(seed_path, out)
        with open(fresh_path) as f:
            fresh = f.readlines()
    with open(args.check) as f:
        committed = f.readlines()
    if fresh == committed:
        print(f"make_golden: {args.check} is up to date ({len(committed)} lines, seed {seed_path})")
        return 0
    diff = difflib.unified_diff(committed, fresh, "committed", "regenerated", n=0)
    sys.stderr.writelines(line for _, line in zip(range(40), diff))
    print(f"\nmake_golden: {args.check} is stale; rerun tests/rubric/make_golden.py",
          file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
