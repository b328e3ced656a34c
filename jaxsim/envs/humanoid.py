"""Humanoid running: gymnasium's ``Humanoid-v5`` (Brax's ``humanoid``) on gymnasium's
``humanoid.xml``.

A 3D biped (13 bodies, a free torso and 17 hinge joints, each driven by a motor with
``ctrlrange`` [-0.4, 0.4] and gears 25 to 300) runs in +x without falling.

- Observation (348), gymnasium v5's blocks in its order:

  ==============  ====  ============================================================
  block           size  content
  ==============  ====  ============================================================
  qpos[2:]          22  torso height (m), torso quaternion (w, x, y, z), 17 joint
                        angles (rad); x and y left out, as v5's default
  qvel              23  torso linear (m/s, world) and angular (rad/s, body frame)
                        velocity, 17 joint velocities (rad/s)
  cinert[1:]       130  per body (13): rotational inertia about the centre of mass
                        of its kinematic tree (the whole humanoid), world axes,
                        ``xx yy zz xy xz yz`` (kg m^2), then ``mass * (body com -
                        tree com)`` (kg m) and the mass (kg): MuJoCo's ``cinert``
  cvel[1:]          78  per body: ``[angular (rad/s); linear (m/s)]`` velocity of
                        the body-fixed point at the tree's centre of mass, world
                        axes: MuJoCo's ``cvel``
  qfrc_actuator     17  actuator torques on the 17 hinge dofs (N m); the free
                        joint's 6 (always 0) left out
  cfrc_ext[1:]      78  per body: ``[torque (N m) about the tree's centre of mass;
                        force (N)]`` of the contacts on it in the last simulator
                        step, world axes: MuJoCo's ``cfrc_ext``
  ==============  ====  ============================================================

- Reward: ``healthy_reward`` 5 while healthy + 1.25 * the x velocity of the centre of
  mass over the step (m/s) - 0.1 * ``sum(action^2)`` - ``min(5e-7 *
  sum(cfrc_ext^2), 10)`` (the contact cost, on the contact forces of the step's last
  simulator step, as gymnasium's).
- Healthy while the state is finite and the torso height ``qpos[2]`` lies in (1.0, 2.0)
  m; the episode terminates when not healthy (and when the simulation diverged).
- Reset: ``qpos0`` (torso at 1.4 m, upright, joints at 0) + U(-0.01, 0.01) on every
  qpos entry, the torso quaternion then normalized; ``qvel`` = U(-0.01, 0.01).
- Action: the 17 motor controls, clipped to [-0.4, 0.4] by the step (the ctrl cost takes
  the unclipped action, as gymnasium's ``data.ctrl``).
- dt = 15 ms: 5 RK4 steps of 3 ms (``frame_skip`` 5), as gymnasium's.

Differences from gymnasium v5:

- Contact is jaxsim's (``Options.contact``: jaxsim's default, ``relaxed`` point
  contacts, unless ``contact=`` picks another), not MuJoCo's soft PGS contacts: contact
  forces, hence ``cfrc_ext`` and the contact cost, differ where bodies touch the floor
  or each other (the two feet can). Joint limits are jaxsim's constraint rows, not
  MuJoCo's soft limits.
- The centre-of-mass velocity, ``cinert``, ``cvel`` and ``qfrc_actuator`` are those
  of the states themselves; gymnasium reads MuJoCo's after ``mj_step``, which with the
  file's RK4 integrator are of RK4's last stage, a hair before the final ``qpos``
  (``cvel`` up to 2e-2 apart, the forward reward 3e-5, after a step with actions of
  0.4; at the same state the blocks agree with ``mj_forward``'s to 1e-14).
- ``cfrc_ext`` takes each contact's torque about its body's centre of mass at the start
  of the last simulator step (``jaxsim.contact_forces``) and moves it to the tree's
  centre of mass at the end of it: a difference of the body's motion over one 3 ms
  step.
- The torso quaternion of the reset state is normalized (gymnasium's is not: MuJoCo
  normalizes it for the kinematics, and the reset observation shows the raw one).
- Healthy also requires a finite state (v5 checks only the height).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

import jaxsim
from jaxsim import math
from jaxsim.dynamics import actuator_forces
from jaxsim.envs import running
from jaxsim.envs.base import PipelineEnv, State, finite_or
from jaxsim.envs.com_based import (com_external_forces, com_inertia, com_velocity, mass_centre, model_path,
                                   tree_com)
from jaxsim.kinematics import Kinematics, forward_kinematics


class Humanoid(PipelineEnv):
    """Run forward (+x) as fast as possible without falling, with little effort."""

    def __init__(self, dtype=jnp.float32, forward_reward_weight: float = 1.25,
                 ctrl_cost_weight: float = 0.1, contact_cost_weight: float = 5e-7,
                 contact_cost_max: float = 10.0, healthy_reward: float = 5.0,
                 terminate_when_unhealthy: bool = True,
                 healthy_z_range: tuple[float, float] = (1.0, 2.0),
                 reset_noise_scale: float = 1e-2, **options):
        """Args:
          dtype: the model's float dtype.
          forward_reward_weight: reward per m/s of the centre of mass's x velocity.
          ctrl_cost_weight: cost per unit of ``sum(action^2)``.
          contact_cost_weight: cost per N^2 (N^2 m^2 for torques) of ``sum(cfrc_ext^2)``.
          contact_cost_max: the contact cost's upper clip (gymnasium's
            ``contact_cost_range[1]``).
          healthy_reward: reward of every step that ends healthy.
          terminate_when_unhealthy: end the episode when the humanoid is not healthy.
          healthy_z_range: (low, high) m, the open range of healthy torso heights.
          reset_noise_scale: half-width of the uniform noise on the initial qpos and qvel.
          **options: ModelBuilder options (``contact``, ``timestep``, ...) overriding
            the file's.
        """
        from jaxsim.io import load_mjcf
        super().__init__(load_mjcf(model_path("humanoid.xml"), dtype=dtype, **options), n_frames=5)
        self._forward_reward_weight = forward_reward_weight
        self._ctrl_cost_weight = ctrl_cost_weight
        self._contact_cost_weight = contact_cost_weight
        self._contact_cost_max = contact_cost_max
        self._healthy_reward = healthy_reward
        self._terminate_when_unhealthy = terminate_when_unhealthy
        self._healthy_z_range = healthy_z_range
        self._reset_noise_scale = reset_noise_scale

    def reset(self, rng: jax.Array) -> State:
        k1, k2 = jax.random.split(rng)
        sys, dtype, s = self.sys, self.sys.dtype, self._reset_noise_scale
        q = sys.qpos0 + jax.random.uniform(k1, (sys.nq,), dtype, -s, s)
        # noise on a unit quaternion leaves it off the unit sphere
        q = q.at[3:7].set(math.normalize(q[3:7]))
        v = jax.random.uniform(k2, (sys.nv,), dtype, -s, s)
        ps = self.pipeline_init(q, v)
        zero = jnp.zeros((), dtype)
        return State(ps, self._obs(ps, forward_kinematics(sys, ps.q)), zero, zero,
                     metrics=running.zero_metrics(dtype))

    def step(self, state: State, action: jax.Array) -> State:
        sys, ps0 = self.sys, state.pipeline_state
        ps = self.pipeline_step(ps0, action)
        kin = forward_kinematics(sys, ps.q)
        velocity = (mass_centre(sys, kin) - mass_centre(sys, forward_kinematics(sys, ps0.q))) / self.dt
        forward_reward = self._forward_reward_weight * velocity[0]
        ctrl_cost = self._ctrl_cost_weight * jnp.sum(jnp.square(action))
        centre = tree_com(sys, kin)
        cfrc_ext = com_external_forces(sys, kin, ps, centre)
        contact_cost = jnp.minimum(self._contact_cost_weight * jnp.sum(jnp.square(cfrc_ext)),
                                   self._contact_cost_max)
        reward, done = running.outcome(ps, velocity, forward_reward, ctrl_cost, contact_cost, self._healthy_reward,
                                       self._healthy_z_range, False, self._terminate_when_unhealthy, state.metrics)
        obs = self._obs(ps, kin, centre, cfrc_ext)
        return state.replace(pipeline_state=ps, obs=obs, reward=reward, done=done)

    def _obs(self, ps: jaxsim.State, kin: Kinematics, centre: jax.Array | None = None,
             cfrc_ext: jax.Array | None = None) -> jax.Array:
        sys = self.sys
        centre = tree_com(sys, kin) if centre is None else centre
        if cfrc_ext is None:
            cfrc_ext = com_external_forces(sys, kin, ps, centre)
        qfrc_actuator, _ = actuator_forces(sys, ps.q, ps.v, ps.act, ps.ctrl)
        # row 0 is the world body, the first 6 dofs the free joint's: always 0
        return finite_or(jnp.concatenate([
            ps.q[2:], ps.v,
            com_inertia(sys, kin, centre)[1:].ravel(),
            com_velocity(sys, kin, ps.v, centre)[1:].ravel(),
            qfrc_actuator[6:],
            cfrc_ext[1:].ravel(),
        ]))
