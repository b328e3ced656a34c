"""Train a jaxsim task with Brax's PPO or APG and record the learning curve.

    python experiments/train.py cartpole --agent ppo
    python experiments/train.py cartpole --agent apg --set policy_updates=30
    python experiments/train.py ant --agent ppo --set num_timesteps=5000000 --env contact=cone

Runs ``brax.training``'s agent with the task's tuned hyper-parameters
(``jaxsim.envs.training.HYPERPARAMETERS``; ``--set key=value`` overrides one), prints a
progress line per evaluation, and writes ``results/train_<task>_<agent>.json``
(evaluation reward against env-steps and wall time, the settings, the machine) and
the curve as a PNG beside it.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import sys
import time

import jax

import jaxsim.envs
from jaxsim.envs import training


def _value(text: str):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text  # a plain string (a contact model's name)


def _pairs(items) -> dict:
    out = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"expected key=value, got {item!r}")
        out[key] = _value(value)
    return out


def plot(curve: training.Curve, title: str, path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    for ax, x, label in ((axes[0], [s / 1e6 for s in curve.env_steps], "env-steps (millions)"),
                         (axes[1], curve.wall_s, "wall time (s)")):
        ax.plot(x, curve.reward, marker="o")
        ax.set_xlabel(label)
        ax.set_ylabel("evaluation reward")
        ax.grid(alpha=0.3)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("task", choices=jaxsim.envs.names())
    p.add_argument("--agent", choices=training.AGENTS, default="ppo")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--set", nargs="*", metavar="KEY=VALUE", help="train keywords replacing the tuned ones")
    p.add_argument("--env", nargs="*", metavar="KEY=VALUE", help="keywords of the task (contact=..., ...)")
    p.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results"))
    args = p.parse_args(argv)

    env_kwargs, overrides = _pairs(args.env), _pairs(args.set)
    env = jaxsim.envs.get(args.task, **env_kwargs)
    settings, sizes = training.hyperparameters(args.task, args.agent)
    settings.update(overrides)
    print(f"{args.task} / {args.agent} on {jax.devices()[0].platform}: {settings}, networks {sizes}", flush=True)

    def progress(steps, metrics):
        print(f"  {time.perf_counter() - start:7.1f} s  {int(steps):>10,d} env-steps  "
              f"reward {float(metrics['eval/episode_reward']):8.2f}", flush=True)

    start = time.perf_counter()
    _, _, curve = training.train(env, args.task, args.agent, progress_fn=progress, seed=args.seed, **overrides)
    total = time.perf_counter() - start
    os.makedirs(args.out, exist_ok=True)
    stem = os.path.join(args.out, f"train_{args.task}_{args.agent}")
    with open(stem + ".json", "w") as f:
        json.dump(dict(task=args.task, agent=args.agent, env=env_kwargs, settings=settings, networks=sizes,
                       seed=args.seed, wall_s=total, curve=curve.__dict__, platform=jax.devices()[0].platform,
                       cpus=os.cpu_count(), argv=sys.argv[1:]), f, indent=1)
    plot(curve, f"{args.task}, {args.agent} (jaxsim)", stem + ".png")
    print(f"best reward {max(curve.reward):.2f}, {total:.0f} s in all; wrote {stem}.json and .png")


if __name__ == "__main__":
    main()
