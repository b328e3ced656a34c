"""Training the tasks with Brax's agents: tuned hyper-parameters and a ``train`` call
that records the learning curve.

``brax.training``'s agents take a jaxsim task unchanged; this module only holds what a
user would otherwise look up: per task and agent, the keyword arguments of
``brax.training.agents.ppo.train`` / ``apg.train`` and the network sizes. For
``cartpole``, ``cube_push`` and ``ant`` they are the settings that trained the task on
a 2-core CPU; ``humanoid``, ``quadruped_walk`` and ``go2_terrain`` train too slowly
there to tune, and get the published settings of their Brax and MuJoCo Playground
counterparts, scaled to 256 envs (APG's ``cube_push`` and ``quadruped_walk`` entries
are the settings tried, on which it does not learn the task). ``train`` runs the
agent with them and returns the policy and the curve (evaluation reward against
env-steps and wall time); ``final_metrics`` reports where a policy's episodes end (a task's success rate).

``brax.training``'s agents also place their state with ``jax.device_put_replicated``,
which newer JAX releases removed in favour of ``jax.device_put`` with a sharding;
``use_with_brax()`` (which ``train`` calls) restores that one function, built on
``jax.device_put``, where it is missing.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

AGENTS = ("ppo", "apg")

# Brax's PPO settings for its locomotion tasks at 256 envs, the batch a 2-core CPU runs
_PPO_ON_CPU = dict(num_envs=256, batch_size=256, num_minibatches=8, num_updates_per_batch=4, discounting=0.97,
                   learning_rate=3e-4, normalize_observations=True, num_evals=6, num_eval_envs=64)
_BRAX_NETWORKS = ((32, 32, 32, 32), (256, 256, 256, 256, 256))
# the legged walks: MuJoCo Playground's joystick settings (servo-target actions)
_LEGGED_PPO = dict(_PPO_ON_CPU, num_timesteps=20_000_000, unroll_length=20, entropy_cost=1e-2, reward_scaling=1.0)
_LEGGED_NETWORKS = ((128, 128, 128, 128), (256, 256, 256, 256, 256))

# task -> agent -> (keywords of the agent's train function, (policy, value) hidden sizes)
HYPERPARAMETERS: dict[str, dict[str, tuple[dict, tuple]]] = {
    "cartpole": {
        # small networks: on a CPU the learner's updates, not the simulation, are the cost
        "ppo": (dict(num_timesteps=20_000_000, episode_length=1000, num_envs=512, batch_size=512,
                     num_minibatches=16, unroll_length=30, num_updates_per_batch=8, discounting=0.995,
                     learning_rate=1e-3, entropy_cost=1e-2, reward_scaling=10.0, normalize_observations=True,
                     num_evals=11, num_eval_envs=128), ((32, 32), (64, 64))),
        # the balance variant (swingup=False): 24 updates take the pole from falling to balanced
        "apg": (dict(episode_length=200, policy_updates=60, horizon_length=32, num_envs=16, num_evals=6,
                     learning_rate=3e-4, normalize_observations=True, num_eval_envs=32), ((32, 32, 32, 32), None)),
    },
    "cube_push": {
        # a small entropy cost: the push must be aimed to a centimetre
        "ppo": (dict(num_timesteps=6_000_000, episode_length=200, num_envs=512, batch_size=512,
                     num_minibatches=8, unroll_length=10, num_updates_per_batch=4, discounting=0.97,
                     learning_rate=1e-3, entropy_cost=1e-3, reward_scaling=10.0, normalize_observations=True,
                     num_evals=7, num_eval_envs=64), ((64, 64), (128, 128))),
        # APG's settings as tried: it does not learn the push (the docs' learning page)
        "apg": (dict(episode_length=200, policy_updates=300, horizon_length=32, num_envs=64, num_evals=6,
                     learning_rate=3e-4, normalize_observations=True, num_eval_envs=64), ((64, 64), None)),
    },
    "ant": {
        # Brax's published ant settings, scaled from 4,096 envs on an accelerator to a CPU
        "ppo": (dict(_PPO_ON_CPU, num_timesteps=5_000_000, episode_length=1000, unroll_length=5,
                     entropy_cost=1e-2, reward_scaling=10.0), _BRAX_NETWORKS),
        # as tried: the quadruped's APG settings (experiments/apg_gradients.py measures
        # why the ant's rollout gradients explode past a few dozen steps)
        "apg": (dict(episode_length=1000, policy_updates=100, horizon_length=32, num_envs=16, num_evals=6,
                     learning_rate=2e-3, max_gradient_norm=1.0, normalize_observations=True, num_eval_envs=16,
                     deterministic_eval=True), ((256, 128), None)),
    },
    "humanoid": {
        # Brax's published humanoid settings, scaled from 2,048 envs to a CPU
        "ppo": (dict(_PPO_ON_CPU, num_timesteps=50_000_000, episode_length=1000, unroll_length=10,
                     entropy_cost=1e-3, reward_scaling=0.1), _BRAX_NETWORKS),
    },
    "quadruped_walk": {
        "ppo": (dict(_LEGGED_PPO, episode_length=500), _LEGGED_NETWORKS),
        # as tried beside experiments/shac.py, with its actor's step size, clip and
        # network (the task built with gait_period=0.8 and the posture rewards on)
        "apg": (dict(episode_length=200, policy_updates=150, horizon_length=32, num_envs=16, num_evals=6,
                     learning_rate=2e-3, max_gradient_norm=1.0, normalize_observations=True, num_eval_envs=16,
                     deterministic_eval=True), ((256, 128), None)),
    },
    "go2_terrain": {"ppo": (dict(_LEGGED_PPO, episode_length=1000), _LEGGED_NETWORKS)},
}


def _device_put_replicated(x, devices):
    """``x``'s leaves stacked ``len(devices)`` times on a new leading axis, one slice
    per device (the removed ``jax.device_put_replicated``)."""
    devices = list(devices)
    if not devices:
        raise ValueError("device_put_replicated: no devices")
    mesh = jax.sharding.Mesh(np.asarray(devices), ("devices",))
    sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("devices"))

    def replicate(leaf):
        leaf = jnp.asarray(leaf)
        return jax.device_put(jnp.broadcast_to(leaf[None], (len(devices),) + leaf.shape), sharding)

    return jax.tree.map(replicate, x)


def use_with_brax() -> None:
    """Make ``jax.device_put_replicated`` available to Brax's agents (see the module)."""
    try:
        jax.device_put_replicated  # noqa: B018
    except AttributeError:
        jax.device_put_replicated = _device_put_replicated


@dataclasses.dataclass
class Curve:
    """The evaluations of one training run.

    Attributes:
      env_steps: environment steps taken before each evaluation (for APG, its policy
        updates times ``num_envs * horizon_length``).
      wall_s: s since the start of ``train`` (compiles included).
      reward: mean evaluation episode reward.
      reward_std: its standard deviation over the evaluation envs.
      training_s: s spent in the agent's training epochs before each evaluation
        (Brax's ``training/walltime``: compiles included, evaluations excluded; nan
        where the agent does not report it, as before the first epoch).
    """

    env_steps: list = dataclasses.field(default_factory=list)
    wall_s: list = dataclasses.field(default_factory=list)
    reward: list = dataclasses.field(default_factory=list)
    reward_std: list = dataclasses.field(default_factory=list)
    training_s: list = dataclasses.field(default_factory=list)


def hyperparameters(task: str, agent: str) -> tuple[dict, tuple]:
    """(train keywords, (policy, value) hidden layer sizes) tuned for ``task``."""
    if agent not in AGENTS:
        raise ValueError(f"unknown agent {agent!r}; one of {AGENTS}")
    if task not in HYPERPARAMETERS or agent not in HYPERPARAMETERS[task]:
        tuned = sorted(f"{t}/{a}" for t, by in HYPERPARAMETERS.items() for a in by)
        raise ValueError(f"no tuned {agent} hyper-parameters for {task!r}; tuned: {', '.join(tuned)}")
    kwargs, sizes = HYPERPARAMETERS[task][agent]
    return dict(kwargs), sizes


def train(env, task: str, agent: str = "ppo", progress_fn: Callable[[int, dict], Any] | None = None,
          seed: int = 0, **overrides) -> tuple[Callable, Any, Curve]:
    """Train ``env`` with Brax's ``agent`` and ``task``'s tuned hyper-parameters.

    Args:
      env: the environment (``jaxsim.envs.get(task, ...)``, or any Brax-style Env).
      task: whose hyper-parameters to use (``HYPERPARAMETERS``).
      agent: "ppo" or "apg".
      progress_fn: called as ``(env_steps, metrics)`` after each evaluation, with
        Brax's metrics and the env-steps taken so far (Brax's APG itself passes the
        evaluation's index there).
      seed: the agent's seed.
      **overrides: train keywords replacing the tuned ones (``num_timesteps``, ...).

    Returns:
      (make_policy, params, Curve): Brax's policy factory and parameters
      (``make_policy(params, deterministic=True)`` is the policy) and the curve.
    """
    use_with_brax()
    kwargs, (policy_sizes, value_sizes) = hyperparameters(task, agent)
    kwargs.update(overrides, seed=seed)
    curve, start = Curve(), time.perf_counter()
    # Brax's APG reports evaluation epochs, not env-steps: each of its policy updates
    # steps every env horizon_length times
    env_steps_per_report = 1 if agent == "ppo" else (
        round(kwargs["policy_updates"] / max(kwargs.get("num_evals", 1) - 1, 1))
        * kwargs.get("num_envs", 1) * kwargs.get("horizon_length", 32))

    def progress(steps, metrics):
        curve.env_steps.append(int(steps) * env_steps_per_report)
        curve.wall_s.append(time.perf_counter() - start)
        curve.reward.append(float(metrics["eval/episode_reward"]))
        curve.reward_std.append(float(metrics.get("eval/episode_reward_std", np.nan)))
        curve.training_s.append(float(metrics.get("training/walltime", np.nan)))
        if progress_fn is not None:
            progress_fn(curve.env_steps[-1], metrics)

    if agent == "ppo":
        from brax.training.agents.ppo import networks, train as agent_train
        factory = functools.partial(networks.make_ppo_networks, policy_hidden_layer_sizes=policy_sizes,
                                    value_hidden_layer_sizes=value_sizes)
    else:
        from brax.training.agents.apg import networks, train as agent_train
        factory = functools.partial(networks.make_apg_networks, hidden_layer_sizes=policy_sizes)
    make_policy, params, _ = agent_train.train(environment=env, network_factory=factory, progress_fn=progress,
                                               **kwargs)
    return make_policy, params, curve


def final_metrics(env, policy: Callable, episodes: int, episode_length: int, seed: int = 0) -> dict:
    """The task's metrics at the end of ``episodes`` episodes of ``policy``.

    Brax's evaluator reports metrics summed over an episode; a task's success (the
    cube at its target, the pole up) is a statement about where an episode ends. Each
    episode runs ``episode_length`` steps or until ``done``, whose state is then held.

    Args:
      env: the environment.
      policy: ``policy(obs, rng) -> (action, extras)``, as Brax's
        ``make_policy(params, deterministic=True)``.
      episodes: how many episodes (run as one batch).
      episode_length: steps per episode.
      seed: draws the resets.

    Returns:
      name -> (episodes,) numpy array of the metric at each episode's end, plus
      ``"steps"``: how many steps each episode ran.
    """
    def run(rng):
        state = jax.vmap(env.reset)(jax.random.split(rng, episodes))
        steps = jnp.zeros(episodes, jnp.int32)

        def one(carry, key):
            state, steps = carry
            action = policy(state.obs, key)[0]
            new = jax.vmap(env.step)(state, action)
            live = state.done == 0
            state = jax.tree.map(lambda n, o: jnp.where(live.reshape(live.shape + (1,) * (n.ndim - 1)), n, o),
                                 new, state)
            return (state, steps + live), None

        (state, steps), _ = jax.lax.scan(one, (state, steps), jax.random.split(rng, episode_length))
        return state.metrics, steps

    metrics, steps = jax.jit(run)(jax.random.PRNGKey(seed))
    out = {name: np.asarray(value) for name, value in metrics.items()}
    out["steps"] = np.asarray(steps)
    return out
