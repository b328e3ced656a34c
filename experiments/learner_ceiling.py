"""The PPO learner's own speed: a task's tuned PPO settings trained on an environment
that costs nothing to step.

    python experiments/learner_ceiling.py ant --env include_cfrc_ext_in_observation=False

``brax.training``'s PPO spends its time in two places: stepping the environments and
updating the networks (minibatch SGD over each batch). This script replaces the task by
``FreeEnv``, an environment with the task's observation and action sizes whose step is
a few array operations (the observation drifts with the action, the reward is minus the
action's square, nothing ends), and trains it with the task's settings. The env-steps/s
it reaches bounds what any simulator can reach under those settings on this machine:
a backend's training rate divided by this ceiling is the share of the time left to the
learner. Writes ``results/learner_ceiling_<task>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import jax
import jax.numpy as jnp

import jaxsim.envs
from jaxsim.envs import State, training


class FreeEnv(jaxsim.envs.Env):
    """An environment of the given sizes whose step costs almost nothing."""

    def __init__(self, observation_size: int, action_size: int):
        self._obs_size, self._act_size = int(observation_size), int(action_size)

    def reset(self, rng):
        obs = jax.random.normal(rng, (self._obs_size,))
        zero = jnp.zeros(())
        return State(obs, obs, zero, zero, metrics={}, info={})

    def step(self, state, action):
        obs = 0.99 * state.obs + 0.01 * jnp.resize(action, self._obs_size)
        return state.replace(pipeline_state=obs, obs=obs, reward=-jnp.sum(action ** 2))

    @property
    def observation_size(self):
        return self._obs_size

    @property
    def action_size(self):
        return self._act_size

    @property
    def backend(self):
        return "free"


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("task", choices=jaxsim.envs.names())
    p.add_argument("--set", nargs="*", metavar="KEY=VALUE", help="train keywords replacing the tuned ones")
    p.add_argument("--env", nargs="*", metavar="KEY=VALUE", help="keywords of the task, for its sizes")
    p.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results"))
    args = p.parse_args(argv)
    from train import _pairs, steps_per_second  # noqa: E402 (experiments/ is the script's directory)

    task_env = jaxsim.envs.get(args.task, **_pairs(args.env))
    env = FreeEnv(task_env.observation_size, task_env.action_size)
    overrides = _pairs(args.set)
    settings, sizes = training.hyperparameters(args.task, "ppo")
    settings.update(overrides)
    start = time.perf_counter()
    _, _, curve = training.train(env, args.task, "ppo", **overrides)
    rate = steps_per_second(curve)
    print(f"{args.task}'s PPO settings on a free env ({env.observation_size} obs, {env.action_size} actions): "
          f"{rate:,.0f} env-steps/s while training, {time.perf_counter() - start:.0f} s in all")
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, f"learner_ceiling_{args.task}.json"), "w") as f:
        json.dump(dict(task=args.task, env_steps_per_s=rate, settings=settings, networks=sizes,
                       observation_size=env.observation_size, action_size=env.action_size,
                       curve=curve.__dict__, platform=jax.devices()[0].platform, cpus=os.cpu_count(),
                       argv=sys.argv[1:]), f, indent=1)


if __name__ == "__main__":
    main()
