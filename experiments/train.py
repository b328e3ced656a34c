"""Train a jaxsim task with Brax's PPO or APG and record the learning curve.

    python experiments/train.py cartpole --agent ppo
    python experiments/train.py cartpole --agent apg --set policy_updates=30
    python experiments/train.py ant --agent ppo --set num_timesteps=5000000 --env contact=cone
    python experiments/train.py ant --backend mjx       # Brax's MJX ant, the same PPO settings

Runs ``brax.training``'s agent with the task's tuned hyper-parameters
(``jaxsim.envs.training.HYPERPARAMETERS``; ``--set key=value`` overrides one), prints a
progress line per evaluation, and writes ``results/train_<task>_<agent>.json``
(evaluation reward against env-steps and wall time, the settings, the machine) and
the curve as a PNG beside it. ``--backend mjx`` trains the same task on MuJoCo MJX
instead (``cartpole``: the same model file, reset, observation and reward stepped by
MJX; ``ant``: Brax's MJX ``ant``, with jaxsim's ant then to be run with
``--env include_cfrc_ext_in_observation=False contact_cost_weight=0.0`` for the same
observation and reward, and ``model=<Brax's ant.xml>`` for the same model file), and
the JSON records env-steps/s during training (``steps_per_second``: a training
epoch's env-steps over the median epoch's duration, the first epoch's compile and
the evaluations left out; ``env_steps_per_wall_s`` counts the evaluations too).
``--eval-episodes`` (default 128) runs the trained policy deterministically and
reports the task's metrics at the episodes' ends (for ``cube_push``, ``success`` is
then the share of episodes that end with the cube within 2 cm of its target).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import sys
import time

import jax
import numpy as np

import jaxsim.envs
from jaxsim import parallel
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


def mjx_env(task: str, env_kwargs: dict):
    """The MuJoCo MJX counterpart of ``task`` (a Brax environment)."""
    import jax.numpy as jnp
    import mujoco
    from brax import envs as brax_envs
    from brax.envs.base import PipelineEnv, State
    from brax.io import mjcf

    from jaxsim.envs import cartpole

    if task == "ant":
        return brax_envs.get_environment("ant", backend="mjx", **env_kwargs)
    if task != "cartpole":
        raise SystemExit(f"--backend mjx: only cartpole and ant have an MJX counterpart here, not {task!r}")
    swingup = env_kwargs.get("swingup", True)

    class MjxCartpole(PipelineEnv):
        """jaxsim's cart-pole task (same file, reset, observation, reward) stepped by MJX."""

        def __init__(self):
            mj = mujoco.MjModel.from_xml_path(cartpole.model_path())
            mj.opt.enableflags &= ~int(mujoco.mjtEnableBit.mjENBL_ENERGY)  # MJX rejects the energy flag
            super().__init__(mjcf.load_model(mj), backend="mjx")

        def reset(self, rng):
            ps = self.pipeline_init(*cartpole.initial_state(rng, swingup, 0.01, jnp.float32))
            zero = jnp.zeros(())
            return State(ps, cartpole.observation(ps.q, ps.qd), zero, zero, metrics={"upright": zero, "centered": zero})

        def step(self, state, action):
            ps = self.pipeline_step(state.pipeline_state, action)
            reward, upright, centered = cartpole.swingup_reward(ps.q, ps.qd, action)
            state.metrics.update(upright=upright, centered=centered)
            return state.replace(pipeline_state=ps, obs=cartpole.observation(ps.q, ps.qd), reward=reward)

    return MjxCartpole()


def steps_per_second(curve: training.Curve, clock: str = "training_s") -> float:
    """Env-steps/s of a typical training epoch: the epoch's env-steps over its median
    duration, the first epoch (which holds the training step's compile) left out.

    ``clock="training_s"`` times only the agent's training epochs (an evaluation's
    cost depends on what the policy does, not on the training); ``"wall_s"`` also
    counts the evaluation that follows each epoch.
    """
    if len(curve.env_steps) < 3:
        return float("nan")
    steps, clock_s = np.diff(curve.env_steps[1:]), np.diff(getattr(curve, clock)[1:])
    return float(np.median(steps) / np.median(clock_s))


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
    p.add_argument("--backend", choices=("jaxsim", "mjx"), default="jaxsim")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--set", nargs="*", metavar="KEY=VALUE", help="train keywords replacing the tuned ones")
    p.add_argument("--env", nargs="*", metavar="KEY=VALUE", help="keywords of the task (contact=..., ...)")
    p.add_argument("--eval-episodes", type=int, default=128,
                   help="episodes of the trained policy whose final metrics are reported (0: none)")
    p.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results"))
    args = p.parse_args(argv)
    # one of several processes under python -m jaxsim.launch, srun or mpirun: Brax's
    # agents split the envs over every process's devices (jax.process_count())
    several = parallel.initialize()

    env_kwargs, overrides = _pairs(args.env), _pairs(args.set)
    env = jaxsim.envs.get(args.task, **env_kwargs) if args.backend == "jaxsim" else mjx_env(args.task, env_kwargs)
    settings, sizes = training.hyperparameters(args.task, args.agent)
    settings.update(overrides)
    print(f"{args.task} / {args.agent} / {args.backend} on {jax.devices()[0].platform}"
          + (f" ({jax.process_count()} processes, {jax.device_count()} devices)" if several else "")
          + f": {settings}, networks {sizes}", flush=True)

    def progress(steps, metrics):
        print(f"  {time.perf_counter() - start:7.1f} s  {int(steps):>10,d} env-steps  "
              f"reward {float(metrics['eval/episode_reward']):8.2f}", flush=True)

    start = time.perf_counter()
    make_policy, params, curve = training.train(env, args.task, args.agent, progress_fn=progress, seed=args.seed,
                                                **overrides)
    total = time.perf_counter() - start
    final = {}
    if args.eval_episodes > 0:
        ends = training.final_metrics(env, make_policy(params, deterministic=True), args.eval_episodes,
                                      settings["episode_length"], seed=args.seed + 1)
        final = {name: float(value.mean()) for name, value in ends.items()}
        print(f"trained policy, {args.eval_episodes} episodes, means at their ends: "
              + ", ".join(f"{name} {value:.4g}" for name, value in final.items()), flush=True)
    if jax.process_index() != 0:
        return  # process 0 writes the results
    os.makedirs(args.out, exist_ok=True)
    suffix = "" if args.backend == "jaxsim" else f"_{args.backend}"
    stem = os.path.join(args.out, f"train_{args.task}_{args.agent}{suffix}")
    with open(stem + ".json", "w") as f:
        json.dump(dict(task=args.task, agent=args.agent, backend=args.backend, env=env_kwargs,
                       env_steps_per_s=steps_per_second(curve),
                       env_steps_per_wall_s=steps_per_second(curve, "wall_s"), settings=settings, networks=sizes,
                       seed=args.seed, wall_s=total, final_metrics=final, eval_episodes=args.eval_episodes,
                       curve=curve.__dict__, platform=jax.devices()[0].platform, cpus=os.cpu_count(),
                       processes=jax.process_count(), devices=jax.device_count(),
                       argv=sys.argv[1:]), f, indent=1)
    plot(curve, f"{args.task}, {args.agent} ({args.backend})", stem + ".png")
    print(f"best reward {max(curve.reward):.2f}, {steps_per_second(curve):,.0f} env-steps/s while training "
          f"({steps_per_second(curve, 'wall_s'):,.0f} with the evaluations), "
          f"{total:.0f} s in all; wrote {stem}.json and .png")


if __name__ == "__main__":
    main()
