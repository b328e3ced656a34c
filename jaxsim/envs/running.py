"""What gymnasium's running tasks (``ant``, ``humanoid``) share: their metrics, the
healthy test, and how the reward terms and termination combine."""

from __future__ import annotations

import jax
import jax.numpy as jnp

import jaxsim
from jaxsim.envs.base import finite_or

METRICS = ("forward_reward", "reward_ctrl", "reward_contact", "reward_survive",
           "x_position", "y_position", "x_velocity", "y_velocity")


def zero_metrics(dtype) -> dict:
    """Every metric a running task's ``step`` writes, at 0 (for ``reset``)."""
    zero = jnp.zeros((), dtype)
    return {k: zero for k in METRICS}


def outcome(ps: jaxsim.State, velocity: jax.Array, forward_reward: jax.Array, ctrl_cost: jax.Array,
            contact_cost: jax.Array, healthy_reward: float, healthy_z: tuple[float, float], closed: bool,
            terminate_when_unhealthy: bool, metrics: dict) -> tuple[jax.Array, jax.Array]:
    """(reward, done) of one env step, and ``metrics`` updated in place.

    Healthy means a finite state with the torso height ``ps.q[2]`` inside
    ``healthy_z`` (the closed interval if ``closed``, as Ant-v5's, else the open one, as
    Humanoid-v5's); the healthy reward is paid only then.

    Args:
      ps: the simulator state after the step.
      velocity: (2,) m/s, the x and y velocity the task rewards (torso or centre of mass).
      forward_reward, ctrl_cost, contact_cost: () the reward terms.
      healthy_reward: reward of a healthy step.
      healthy_z: (low, high) m.
      closed: whether the bounds themselves are healthy.
      terminate_when_unhealthy: end the episode when not healthy.
      metrics: the State's metrics dict (Brax's wrappers keep entries of their own in it).
    """
    low, high = healthy_z
    z = ps.q[2]
    inside = (z >= low) & (z <= high) if closed else (z > low) & (z < high)
    healthy = (~ps.nonfinite & inside).astype(ps.q.dtype)  # the step flags a non-finite q, v or act
    survive = healthy_reward * healthy
    reward = finite_or(forward_reward + survive - ctrl_cost - contact_cost)
    done = 1.0 - healthy if terminate_when_unhealthy else jnp.zeros_like(healthy)
    done = jnp.where(ps.nonfinite, 1.0, done).astype(reward.dtype)
    metrics.update(
        forward_reward=finite_or(forward_reward), reward_ctrl=finite_or(-ctrl_cost),
        reward_contact=finite_or(-contact_cost), reward_survive=survive,
        x_position=finite_or(ps.q[0]), y_position=finite_or(ps.q[1]),
        x_velocity=finite_or(velocity[0]), y_velocity=finite_or(velocity[1]))
    return reward, done
