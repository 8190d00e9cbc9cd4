"""GRPO training of a CUDA-kernel writer with TRL, rewarded by a kerneleval server.

Not run in CI (it needs trl, a model and GPUs). Install and run:

    pip install "./clients/python" trl datasets
    kerneleval-server --listen 0.0.0.0:50051 &            # or a Kubernetes Service
    KERNELEVAL_SERVER=localhost:50051 python examples/grpo_train.py --model Qwen/Qwen2.5-Coder-1.5B-Instruct

How the pieces fit:
  * The dataset has one row per problem: the problem's prompt (from the
    server's GetProblem) as a chat message, and its `problem_id`.
  * GRPOTrainer samples `num_generations` completions per prompt and calls the
    reward function with them; extra dataset columns (here `problem_id`) arrive
    as keyword arguments with one value per completion.
  * kerneleval's reward function extracts the ```cuda block of each completion,
    sends each GRPO group to the server as one EvaluateGroup (one shared
    reference measurement per group; groups of different problems in parallel),
    and returns the server's rewards: 0 unless correct, then the seed rubric's
    speed score. It never raises: code-less completions and server errors score
    0.0 with a logged reason.
  * For a fleet of servers behind a Kubernetes headless Service use
    --server dns:///kerneleval-headless.<namespace>.svc.cluster.local:50051
    (round robin over every pod).
"""

from __future__ import annotations

import argparse
import logging

from kerneleval import Client
from kerneleval.rewards import make_kernel_reward

SYSTEM_PROMPT = (
    "You write CUDA kernels. Answer with one ```cuda code block holding device code only "
    "(no host code, no #include of system headers) and a `// @launch` line that says how to launch "
    "your kernel, like the example in the task."
)


def build_dataset(client: Client, problem_ids: list[str], repeats: int):
    """A datasets.Dataset of chat prompts, one row per problem (repeated)."""
    from datasets import Dataset  # installed with trl

    rows = {"prompt": [], "problem_id": []}
    for problem_id in problem_ids:
        problem = client.problem(problem_id)
        prompt = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": problem.prompt},
        ]
        for _ in range(repeats):
            rows["prompt"].append(prompt)
            rows["problem_id"].append(problem_id)
    return Dataset.from_dict(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="Qwen/Qwen2.5-Coder-1.5B-Instruct")
    parser.add_argument("--server", default=None, help="kerneleval server (default $KERNELEVAL_SERVER)")
    parser.add_argument("--token", default=None, help="bearer token (default $KERNELEVAL_TOKEN)")
    parser.add_argument("--problems", default="vector_add,relu,softmax,row_sum,layernorm,matmul")
    parser.add_argument("--reward-mode", choices=["speedup", "roofline"], default="speedup")
    parser.add_argument("--partial-credit", action=argparse.BooleanOptionalAction, default=True,
                        help="small rewards for kernels that compile but fail (all-fail groups still learn)")
    parser.add_argument("--num-generations", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=64, help="rows per problem in the dataset")
    parser.add_argument("--output-dir", default="grpo-kernels")
    args = parser.parse_args()

    logging.basicConfig(level=logging.INFO)
    logging.getLogger("kerneleval.rewards").setLevel(logging.INFO)  # why a completion scored 0

    from trl import GRPOConfig, GRPOTrainer  # not a kerneleval dependency

    # Evaluations on a busy fleet queue: give each group call a generous deadline.
    client = Client(args.server, token=args.token, timeout=900)
    dataset = build_dataset(client, [p.strip() for p in args.problems.split(",") if p.strip()], args.repeats)

    kernel_reward = make_kernel_reward(
        client=client,
        reward_mode=args.reward_mode,
        partial_credit=args.partial_credit,
        pick="last",  # the model's final block, after any drafts
    )

    config = GRPOConfig(
        output_dir=args.output_dir,
        num_generations=args.num_generations,
        # Each GRPO group is one EvaluateGroup call; a batch of B prompts sends B groups in parallel.
        per_device_train_batch_size=args.num_generations,
        max_completion_length=2048,
        learning_rate=1e-6,
        logging_steps=1,
    )
    trainer = GRPOTrainer(
        model=args.model,
        reward_funcs=[kernel_reward],
        train_dataset=dataset,
        args=config,
    )
    trainer.train()
    client.close()


if __name__ == "__main__":
    main()
