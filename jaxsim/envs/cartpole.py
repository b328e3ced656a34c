"""Cart-pole swing-up: the DeepMind Control Suite's ``cartpole`` model and its
``swingup`` task (MuJoCo Playground's ``CartpoleSwingup``).

A 1 kg cart on a rail (slide joint, limited to +-1.8 m) carries a 1 m pole on a hinge;
a motor pushes the cart with up to 10 N (action in [-1, 1]). Each swing-up episode
starts with the pole hanging down (angle pi plus noise of 0.01 rad) and the cart near
the centre; with ``swingup=False`` (the suite's ``balance`` task) the pole starts within
0.034 rad of upright and the cart within 0.1 m of the centre.

- Observation (5): cart position (m), cosine and sine of the pole angle (0 upright),
  cart velocity (m/s), pole angular velocity (rad/s).
- Reward in [0, 1], as the Control Suite's: ``upright * centered * small_control *
  small_velocity`` with ``upright = (cos + 1) / 2``, ``centered = (1 + tol(x, 2)) / 2``,
  ``small_control = (4 + tol(u, 1, quadratic)) / 5`` and ``small_velocity = (1 +
  tol(omega, 5)) / 2`` (``rewards.tolerance``); a swung-up, balanced pole earns close to
  1 a step, a hanging one about 0.
- No termination, except a non-finite state.
- dt = 10 ms (one RK4 step), as the suite's; episodes of 1,000 steps there.
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp

from jaxsim.envs.base import PipelineEnv, State, finite_or
from jaxsim.envs.rewards import tolerance


def model_path() -> str:
    """The Control Suite's ``cartpole.xml`` (inside the ``dm_control`` package)."""
    try:
        import dm_control
    except ImportError as e:  # the envs' models come with the rl extra
        raise ImportError("cartpole: the model file ships with dm_control (pip install 'jaxsim[rl]')") from e
    return os.path.join(os.path.dirname(dm_control.__file__), "suite", "cartpole.xml")


def swingup_reward(q: jax.Array, v: jax.Array, action: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """(reward, upright, centered) of the Control Suite's smooth cart-pole reward at
    positions ``q`` (2,) (cart m, pole rad), velocities ``v`` (2,) and ``action`` (1,)."""
    upright = (jnp.cos(q[1]) + 1) / 2
    centered = (1 + tolerance(q[0], margin=2.0)) / 2
    small_control = (4 + tolerance(action[0], margin=1.0, sigmoid="quadratic", value_at_margin=0.0)) / 5
    small_velocity = (1 + tolerance(v[1], margin=5.0)) / 2
    return upright * centered * small_control * small_velocity, upright, centered


def initial_state(rng: jax.Array, swingup: bool, noise: float, dtype) -> tuple[jax.Array, jax.Array]:
    """(q (2,), v (2,)) at the start of an episode (module docstring)."""
    k1, k2 = jax.random.split(rng)
    if swingup:
        q = jnp.asarray([0.0, jnp.pi], dtype) + noise * jax.random.normal(k1, (2,), dtype)
    else:
        q = jax.random.uniform(k1, (2,), dtype, -1.0, 1.0) * jnp.asarray([0.1, 0.034], dtype)
    return q, noise * jax.random.normal(k2, (2,), dtype)


def observation(q: jax.Array, v: jax.Array) -> jax.Array:
    """(5,) cart position, cosine and sine of the pole angle, cart and pole velocities."""
    return jnp.stack([q[0], jnp.cos(q[1]), jnp.sin(q[1]), v[0], v[1]])


class Cartpole(PipelineEnv):
    """Swing the pole up from hanging and balance it, the cart kept near the centre."""

    def __init__(self, dtype=jnp.float32, swingup: bool = True, reset_noise: float = 0.01, **options):
        """Args:
          dtype: the model's float dtype.
          swingup: start hanging (swing-up) or near upright (balance).
          reset_noise: std of the Gaussian noise on the initial velocities, and on
            the initial positions of a swing-up.
          **options: ModelBuilder options (``contact``, ``timestep``, ...) overriding
            the file's.
        """
        from jaxsim.io import load_mjcf
        super().__init__(load_mjcf(model_path(), dtype=dtype, **options), n_frames=1)
        self._swingup = bool(swingup)
        self._reset_noise = reset_noise

    def reset(self, rng: jax.Array) -> State:
        dtype = self.sys.dtype
        ps = self.pipeline_init(*initial_state(rng, self._swingup, self._reset_noise, dtype))
        zero = jnp.zeros((), dtype)
        return State(ps, self._obs(ps), zero, zero, metrics={"upright": zero, "centered": zero})

    def step(self, state: State, action: jax.Array) -> State:
        ps = self.pipeline_step(state.pipeline_state, action)
        reward, upright, centered = swingup_reward(ps.q, ps.v, action)
        reward = finite_or(reward)
        done = jnp.where(ps.nonfinite, 1.0, state.done).astype(reward.dtype)
        # in place, as Brax's envs do: wrappers keep metrics of their own in the same dict
        state.metrics.update(upright=finite_or(upright), centered=finite_or(centered))
        return state.replace(pipeline_state=ps, obs=self._obs(ps), reward=reward, done=done)

    def _obs(self, ps) -> jax.Array:
        return finite_or(observation(ps.q, ps.v))
