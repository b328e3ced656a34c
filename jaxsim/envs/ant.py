"""Ant running: gymnasium's ``Ant-v5`` (Brax's ``ant``) on gymnasium's ``ant.xml``.

A quadruped (a 0.25 m sphere torso on a free joint, four legs of two hinges each, eight
motors of gear 150 with ``ctrlrange`` [-1, 1]) runs in +x without flipping over.

- Observation (105, v5's): ``qpos[2:]`` (13: torso height (m), torso quaternion (w, x,
  y, z), 8 joint angles (rad); x and y left out, v5's
  ``exclude_current_positions_from_observation``), ``qvel`` (14: torso linear velocity
  (m/s, world), angular velocity (rad/s, body frame), 8 joint velocities (rad/s)),
  then the 13 bodies' contact wrenches (MuJoCo's ``cfrc_ext[1:]``, ``[torque (N m)
  about the ant's centre of mass; force (N)]`` each, world axes, clipped to
  ``contact_force_range``). ``include_cfrc_ext_in_observation=False`` leaves the
  wrenches out (27 values, Brax's ``ant`` and gymnasium v4's).
- Reward: ``healthy_reward`` 1 while healthy + the torso's x velocity over the step
  (m/s) - 0.5 * ``sum(action^2)`` - ``contact_cost_weight`` (5e-4) * ``sum(clipped
  cfrc_ext^2)``.
- Healthy while the state is finite and the torso height ``qpos[2]`` lies in [0.2, 1.0]
  m; the episode terminates when not healthy (and when the simulation diverged).
- Reset: ``qpos0`` (torso at 0.75 m, upright, joints at 0) + U(-0.1, 0.1) on every qpos
  entry, the torso quaternion then normalized; ``qvel`` = 0.1 * N(0, 1).
- Action: the 8 motor controls, clipped to [-1, 1] by the step (the ctrl cost takes the
  unclipped action, as gymnasium's).
- dt = 50 ms: 5 RK4 steps of 10 ms (``frame_skip`` 5), as gymnasium's.

Differences from gymnasium v5:

- Contact is jaxsim's (``Options.contact``: jaxsim's default, ``relaxed`` point
  contacts, unless ``contact=`` picks another), not MuJoCo's soft contacts (their 1 cm
  margin included); joint limits are jaxsim's constraint rows, not MuJoCo's soft
  limits (the ankles start at 0, outside their limits, in both).
- The contact wrenches, in the observation and the contact cost, come from jaxsim's
  contact model, so they differ from MuJoCo's wherever bodies touch.
- The x velocity is the torso's from ``qpos[0]`` before and after the step;
  gymnasium's reads ``data.xpos`` after ``mj_step``, which with the file's RK4
  integrator is the kinematics of RK4's last stage, a hair before the final ``qpos``
  (the same forward reward to 1e-5 from a state in the air).
- The torso quaternion of the reset state is normalized (gymnasium's is not: MuJoCo
  normalizes it for the kinematics, and the reset observation shows the raw one).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

import jaxsim
from jaxsim import math
from jaxsim.envs import running
from jaxsim.envs.base import PipelineEnv, State, finite_or
from jaxsim.envs.com_based import com_external_forces, model_path, tree_com
from jaxsim.kinematics import forward_kinematics


class Ant(PipelineEnv):
    """Run forward (+x) as fast as possible without flipping over, with little effort."""

    def __init__(self, dtype=jnp.float32, forward_reward_weight: float = 1.0,
                 ctrl_cost_weight: float = 0.5, healthy_reward: float = 1.0,
                 terminate_when_unhealthy: bool = True,
                 healthy_z_range: tuple[float, float] = (0.2, 1.0),
                 reset_noise_scale: float = 0.1, include_cfrc_ext_in_observation: bool = True,
                 contact_cost_weight: float = 5e-4,
                 contact_force_range: tuple[float, float] = (-1.0, 1.0), model: str | None = None,
                 **options):
        """Args:
          dtype: the model's float dtype.
          forward_reward_weight: reward per m/s of the torso's x velocity.
          ctrl_cost_weight: cost per unit of ``sum(action^2)``.
          healthy_reward: reward of every step that ends healthy.
          terminate_when_unhealthy: end the episode when the ant is not healthy.
          healthy_z_range: (low, high) m, the closed range of healthy torso heights.
          reset_noise_scale: half-width of the uniform noise on the initial qpos, std
            of the Gaussian noise on the initial qvel.
          include_cfrc_ext_in_observation: append the clipped contact wrenches of the
            13 bodies (78 values), as v5 does.
          contact_cost_weight: cost per unit of ``sum(clipped cfrc_ext^2)``, v5's.
          contact_force_range: (low, high), the clip of every ``cfrc_ext`` component.
          model: an MJCF file of the same ant to load in place of gymnasium's (the
            same bodies, joints and actuators; e.g. Brax's ``ant.xml``, in which only
            four foot spheres collide with the floor).
          **options: ModelBuilder options (``contact``, ``timestep``, ...) overriding
            the file's.
        """
        from jaxsim.io import load_mjcf
        super().__init__(load_mjcf(model or model_path("ant.xml"), dtype=dtype, **options), n_frames=5)
        self._forward_reward_weight = forward_reward_weight
        self._ctrl_cost_weight = ctrl_cost_weight
        self._healthy_reward = healthy_reward
        self._terminate_when_unhealthy = terminate_when_unhealthy
        self._healthy_z_range = healthy_z_range
        self._reset_noise_scale = reset_noise_scale
        self._include_cfrc_ext = include_cfrc_ext_in_observation
        self._contact_cost_weight = contact_cost_weight
        self._contact_force_range = contact_force_range

    def reset(self, rng: jax.Array) -> State:
        k1, k2 = jax.random.split(rng)
        sys, dtype, s = self.sys, self.sys.dtype, self._reset_noise_scale
        q = sys.qpos0 + jax.random.uniform(k1, (sys.nq,), dtype, -s, s)
        # noise on a unit quaternion leaves it off the unit sphere
        q = q.at[3:7].set(math.normalize(q[3:7]))
        v = s * jax.random.normal(k2, (sys.nv,), dtype)
        ps = self.pipeline_init(q, v)
        zero = jnp.zeros((), dtype)
        return State(ps, self._obs(ps, self._contact_forces(ps)), zero, zero, metrics=running.zero_metrics(dtype))

    def step(self, state: State, action: jax.Array) -> State:
        ps0 = state.pipeline_state
        ps = self.pipeline_step(ps0, action)
        # the free joint's position is the torso's origin: no kinematics needed
        velocity = (ps.q[:2] - ps0.q[:2]) / self.dt
        forward_reward = self._forward_reward_weight * velocity[0]
        ctrl_cost = self._ctrl_cost_weight * jnp.sum(jnp.square(action))
        cfrc_ext = self._contact_forces(ps)
        contact_cost = (self._contact_cost_weight * jnp.sum(jnp.square(cfrc_ext))
                        if cfrc_ext is not None else jnp.zeros((), ps.q.dtype))
        reward, done = running.outcome(ps, velocity, forward_reward, ctrl_cost, contact_cost, self._healthy_reward,
                                       self._healthy_z_range, True, self._terminate_when_unhealthy, state.metrics)
        return state.replace(pipeline_state=ps, obs=self._obs(ps, cfrc_ext), reward=reward, done=done)

    def _contact_forces(self, ps: jaxsim.State) -> jax.Array | None:
        """(nbody - 1, 6) the clipped ``cfrc_ext[1:]``, or None when neither the
        observation nor the reward uses it (nothing is computed then)."""
        if not self._include_cfrc_ext and self._contact_cost_weight == 0:
            return None
        kin = forward_kinematics(self.sys, ps.q)
        wrench = com_external_forces(self.sys, kin, ps, tree_com(self.sys, kin))[1:]
        return jnp.clip(wrench, *self._contact_force_range)

    def _obs(self, ps: jaxsim.State, cfrc_ext: jax.Array | None) -> jax.Array:
        blocks = [ps.q[2:], ps.v]
        if self._include_cfrc_ext:
            blocks.append(cfrc_ext.ravel())
        return finite_or(jnp.concatenate(blocks))
