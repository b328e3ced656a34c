"""What the legged walking tasks share (``QuadrupedWalk``, ``Go2Terrain``): ``LeggedWalk``,
a ``PipelineEnv`` for a robot on a free-floating trunk whose every actuator is a
position servo.

- Action in [-1, 1]^nu (clipped there): servo target offsets around the standing pose,
  ``ctrl = standing targets + action_scale * action`` (rad). Zero action holds the
  standing pose, so a policy starts out from standing rather than from limp joints,
  as in legged_gym's and MuJoCo Playground's legged-robot tasks (Brax's ``ant``
  drives torques instead).
- Observation (``10 + 3 nu``): trunk height (m, world z of the root body); gravity's
  direction in the trunk frame (3, unit; ``(0, 0, -1)`` upright, the tilt without the
  heading, which a walk should not depend on); the servos' positions relative to their
  standing targets (nu, rad: a hinge's angle, a ball joint's rotation vector along the
  servo's gear, what the servo measures); trunk linear velocity (3, m/s) and angular
  velocity (3, rad/s), both in the trunk frame; the servos' velocities (nu, rad/s);
  the last action (nu; zeros at reset); with ``gait_period`` set, a gait clock
  ``(cos, sin)(2 pi t / gait_period)`` of the simulated time ``t`` last (2; the phase
  input of MuJoCo Playground's joystick tasks, which lets a feedback policy keep a
  periodic gait); with ``heading_observation``, the world x axis (the walking
  direction) in the trunk frame after that (3: the heading, which the walk's reward
  depends on and the blocks above leave out). Every entry through ``finite_or``.
- Reward: ``forward_reward_weight * vx - ctrl_cost_weight * sum(action^2) +
  healthy_reward * (1 - done) + height_reward_weight * (z - min_height) +
  upright_reward_weight * up_z - rock_cost_weight * (wx^2 + wy^2)``, ``vx`` the
  trunk's world x displacement over the env step divided by ``dt`` (Brax's ``ant``):
  the healthy reward is not paid for the step that ends the episode. The last three
  terms (0 by default) are smooth posture terms: the trunk's height ``z`` above the
  fall height and the world z of its up axis (1 upright), as in the Ant task of
  SHAC's differentiable-simulation benchmarks, and its roll and pitch rates ``wx,
  wy`` (rad/s, trunk frame), as in MuJoCo Playground's joystick tasks. The healthy
  reward is a step function of the state, so a gradient-based learner sees no cost
  in falling until they are on. Two more optional shapes, also off by default:

  - ``forward_speed_cap`` (m/s) ``= c`` replaces ``vx`` in the forward term by
    ``c tanh(vx / c)``: the same reward at low speed, saturating above ``c``, so that
    running faster stops paying for less stable steps;
  - ``fall_margin_weight`` ``= w`` subtracts ``w (h(z_m - z) + h(u_m - up_z))``, with
    ``h(x) = s softplus(x / s)`` a smooth hinge of width ``s = 0.02`` (about 0 for
    ``x < 0``, ``x`` beyond) and ``fall_margin = (dz, dtilt)`` placing its knees
    ``z_m = min_height + dz`` and ``u_m = cos(max_tilt_deg - dtilt)``: a penalty that
    is nil near standing and steep as the trunk nears the fall criteria (the walk
    trajectory optimization's loss, ``jaxsim.trajopt.QuadrupedGaitProblem``), which
    a gradient sees before the fall does.
- Termination (``done = 1``): fallen, i.e. the trunk's height below ``min_height`` or
  its up axis tilted more than ``max_tilt_deg`` from the vertical; or a non-finite
  simulator state.
- Reset: the standing pose with its servo joints turned by uniform noise of up to
  ``joint_noise`` rad (each rotational dof), every dof's velocity Gaussian with std
  ``velocity_noise``, then the trunk moved vertically so that the robot's lowest
  point just touches the ground (a collision query with a 0.5 m margin: the deepest
  contact's depth or gap), so it starts on its feet on the plane and on a height field
  alike.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import jaxsim
from jaxsim import math
from jaxsim.envs.base import PipelineEnv, State, finite_or
from jaxsim.integrator import integrate_positions
from jaxsim.kinematics import transmission_positions
from jaxsim.types import JointType, Model

PLACEMENT_MARGIN = 0.5  # m: the reset's collision query sees ground this far below the feet


# LeggedWalk's optional observation blocks and reward shapes (all off by default): the
# tasks built on it take them among their keyword options
SHAPING_OPTIONS = ("gait_period", "heading_observation", "height_reward_weight", "upright_reward_weight",
                   "rock_cost_weight", "forward_speed_cap", "fall_margin_weight", "fall_margin")
FALL_MARGIN_WIDTH = 0.02  # m of height, or of up-axis z: the fall-margin hinges' smoothing width


def _hinge(x: jax.Array) -> jax.Array:
    """A smooth ``max(x, 0)``: ``s softplus(x / s)``, ``s = FALL_MARGIN_WIDTH``."""
    return FALL_MARGIN_WIDTH * jax.nn.softplus(x / FALL_MARGIN_WIDTH)


def split_shaping_options(options: dict) -> tuple[dict, dict]:
    """(LeggedWalk's ``SHAPING_OPTIONS`` among ``options``, the other options)."""
    shaping = {k: v for k, v in options.items() if k in SHAPING_OPTIONS}
    return shaping, {k: v for k, v in options.items() if k not in SHAPING_OPTIONS}


class LeggedWalk(PipelineEnv):
    """Walk forward (+x) on a legged robot without falling (module docstring)."""

    def __init__(self, sys: Model, n_frames: int, standing_q, standing_ctrl, *, action_scale: float,
                 forward_reward_weight: float, ctrl_cost_weight: float, healthy_reward: float, min_height: float,
                 max_tilt_deg: float = 60.0, joint_noise: float = 0.05, velocity_noise: float = 0.05,
                 gait_period: float | None = None, heading_observation: bool = False,
                 height_reward_weight: float = 0.0, upright_reward_weight: float = 0.0,
                 rock_cost_weight: float = 0.0, forward_speed_cap: float | None = None,
                 fall_margin_weight: float = 0.0, fall_margin: tuple[float, float] = (0.25, 30.0)):
        """Args:
          sys: the robot; its first joint the trunk's free joint (q[:7], v[:6]), its
            actuators position servos.
          n_frames: simulator steps per env step.
          standing_q: (nq,) the standing configuration (the trunk at any height
            within ``PLACEMENT_MARGIN`` of the ground: reset moves it onto it).
          standing_ctrl: (nu,) the servo targets holding ``standing_q``, rad.
          action_scale: rad, the target offset of a full action.
          forward_reward_weight: reward per m/s of the trunk's x velocity.
          ctrl_cost_weight: cost per unit of ``sum(action^2)``.
          healthy_reward: reward per env step that does not end fallen.
          min_height: m, world z of the trunk below which the robot has fallen.
          max_tilt_deg: deg, tilt of the trunk's up axis beyond which it has fallen.
          joint_noise: rad, half width of the reset's uniform joint offsets.
          velocity_noise: std of the reset's velocities (m/s, rad/s).
          gait_period: s, the period of the gait clock appended to the observation;
            None (the default) leaves it out.
          heading_observation: append the world x axis in the trunk frame.
          height_reward_weight: reward per m of trunk height above ``min_height``
            (unbounded above: a policy can collect it by rearing up, the front of
            the trunk raised, which ends in a fall past ``max_tilt_deg``; the
            fall-margin hinges penalize a low trunk without paying for a high one).
          upright_reward_weight: reward per unit of the trunk up axis' world z.
          rock_cost_weight: cost per (rad/s)^2 of the trunk's roll and pitch rates.
          forward_speed_cap: m/s, the speed at which the forward term saturates;
            None (the default): linear in ``vx``.
          fall_margin_weight: weight of the fall-margin hinges (per m of height, per
            unit of up-axis z past their knees).
          fall_margin: (m, deg), how far above ``min_height`` and below
            ``max_tilt_deg`` the hinges' knees lie.

        Raises:
          ValueError: on a robot without a leading free joint, mis-sized standing
            arrays, a ``gait_period`` or ``forward_speed_cap`` that is not positive,
            or a ``fall_margin`` outside (0, ...) x (0, max_tilt_deg).
        """
        super().__init__(sys, n_frames)
        if gait_period is not None and not float(gait_period) > 0:
            raise ValueError(f"{type(self).__name__}: gait_period must be positive (s) or None, got {gait_period}")
        self._gait_period = None if gait_period is None else float(gait_period)
        self._heading_observation = bool(heading_observation)
        self._height_reward_weight = float(height_reward_weight)
        self._upright_reward_weight = float(upright_reward_weight)
        self._rock_cost_weight = float(rock_cost_weight)
        if forward_speed_cap is not None and not float(forward_speed_cap) > 0:
            raise ValueError(f"{type(self).__name__}: forward_speed_cap must be positive (m/s) or None, "
                             f"got {forward_speed_cap}")
        self._forward_speed_cap = None if forward_speed_cap is None else float(forward_speed_cap)
        margin_height, margin_tilt = (float(x) for x in fall_margin)
        if not (margin_height > 0 and 0 < margin_tilt < max_tilt_deg):
            raise ValueError(f"{type(self).__name__}: fall_margin must be (m > 0, deg in (0, max_tilt_deg = "
                             f"{max_tilt_deg})), got {fall_margin}")
        self._fall_margin_weight = float(fall_margin_weight)
        self._margin_height = float(min_height) + margin_height
        self._margin_up = float(np.cos(np.radians(max_tilt_deg - margin_tilt)))
        topo = sys.topo
        if topo.njnt == 0 or JointType(topo.jnt_type[0]) != JointType.FREE or topo.jnt_qposadr[0] != 0:
            raise ValueError(f"{type(self).__name__}: the first joint must be the trunk's free joint")
        dtype = sys.dtype
        self._standing_q = jnp.asarray(standing_q, dtype)
        self._standing_ctrl = jnp.asarray(standing_ctrl, dtype)
        if self._standing_q.shape != (sys.nq,) or self._standing_ctrl.shape != (sys.nu,):
            raise ValueError(f"{type(self).__name__}: standing_q must be ({sys.nq},) and standing_ctrl ({sys.nu},), "
                             f"got {self._standing_q.shape} and {self._standing_ctrl.shape}")
        # the dofs a servo turns: the reset's joint noise goes there (not on the trunk)
        self._servo_dofs = np.any(np.asarray(sys.actuator_moment) != 0, axis=0)
        self._action_scale = float(action_scale)
        self._forward_reward_weight = float(forward_reward_weight)
        self._ctrl_cost_weight = float(ctrl_cost_weight)
        self._healthy_reward = float(healthy_reward)
        self._min_height = float(min_height)
        self._min_up = float(np.cos(np.radians(max_tilt_deg)))
        self._joint_noise = float(joint_noise)
        self._velocity_noise = float(velocity_noise)

    def reset(self, rng: jax.Array) -> State:
        k1, k2 = jax.random.split(rng)
        sys, dtype = self.sys, self.sys.dtype
        offset = self._joint_noise * jax.random.uniform(k1, (sys.nv,), dtype, -1.0, 1.0)
        offset = jnp.where(jnp.asarray(self._servo_dofs), offset, 0.0)
        q = integrate_positions(sys, self._standing_q, offset, jnp.ones((), dtype))  # ball joints stay unit quats
        q = q.at[2].add(self._lift_to_ground(q))
        v = self._velocity_noise * jax.random.normal(k2, (sys.nv,), dtype)
        ps = self.pipeline_init(q, v).replace(ctrl=self._standing_ctrl)
        zero = jnp.zeros((), dtype)
        metrics = {"reward_forward": zero, "reward_ctrl": zero, "reward_survive": zero, "reward_posture": zero,
                   "x_position": q[0], "x_velocity": zero, "trunk_height": q[2]}
        return State(ps, self._obs(ps, jnp.zeros((sys.nu,), dtype)), zero, zero, metrics=metrics)

    def step(self, state: State, action: jax.Array) -> State:
        dtype = self.sys.dtype
        action = jnp.clip(jnp.asarray(action, dtype), -1.0, 1.0)
        ps0 = state.pipeline_state
        ps = self.pipeline_step(ps0, self.ctrl(action))
        vx = (ps.q[0] - ps0.q[0]) / self.dt
        done = (self.fallen(ps) | ps.nonfinite).astype(dtype)
        cap = self._forward_speed_cap
        speed = vx if cap is None else cap * jnp.tanh(vx / cap)
        forward = self._forward_reward_weight * speed
        ctrl_cost = self._ctrl_cost_weight * jnp.sum(action ** 2)
        survive = self._healthy_reward * (1.0 - done)
        posture = (self._height_reward_weight * (ps.q[2] - self._min_height)
                   + self._upright_reward_weight * self._up_z(ps)
                   - self._rock_cost_weight * jnp.sum(ps.v[3:5] ** 2)  # trunk-frame roll, pitch rates
                   - self._fall_margin_weight * (_hinge(self._margin_height - ps.q[2])
                                                 + _hinge(self._margin_up - self._up_z(ps))))
        reward = finite_or(forward - ctrl_cost + survive + posture).astype(dtype)
        # in place, as Brax's envs do: wrappers keep metrics of their own in the same dict
        state.metrics.update(reward_forward=finite_or(forward), reward_ctrl=finite_or(-ctrl_cost),
                             reward_survive=survive, reward_posture=finite_or(posture),
                             x_position=finite_or(ps.q[0]), x_velocity=finite_or(vx), trunk_height=finite_or(ps.q[2]))
        return state.replace(pipeline_state=ps, obs=self._obs(ps, action), reward=reward, done=done)

    def ctrl(self, action: jax.Array) -> jax.Array:
        """(nu,) servo targets (rad) of an action (nu,) in [-1, 1]."""
        return self._standing_ctrl + self._action_scale * action

    def fallen(self, ps: jaxsim.State) -> jax.Array:
        """() bool: the trunk below ``min_height`` or tilted past ``max_tilt_deg``
        (False where the state is not finite: ``step`` ends those episodes itself)."""
        return (ps.q[2] < self._min_height) | (self._up_z(ps) < self._min_up)

    @staticmethod
    def _up_z(ps: jaxsim.State) -> jax.Array:
        """() the world z of the trunk's z axis: the cosine of its tilt."""
        quat = ps.q[3:7]
        return 1.0 - 2.0 * (quat[1] ** 2 + quat[2] ** 2)

    def _lift_to_ground(self, q: jax.Array) -> jax.Array:
        """() m to add to the trunk's height at ``q`` so the robot's lowest point just
        touches the ground: the deepest contact's depth (a gap counts negative); 0 if
        nothing is within ``PLACEMENT_MARGIN``. Every contact is robot-ground: the
        tasks' robots do not collide with themselves."""
        contacts = jaxsim.collide(self.sys, jaxsim.forward_kinematics(self.sys, q), margin=PLACEMENT_MARGIN)
        depth = jnp.where(contacts.active, contacts.depth, -jnp.inf)
        deepest = jnp.max(depth)
        return jnp.where(jnp.isfinite(deepest), deepest, 0.0)

    def _obs(self, ps: jaxsim.State, action: jax.Array) -> jax.Array:
        """(10 + 3 nu [+ 2] [+ 3],) the observation after ``action`` (module docstring)."""
        sys = self.sys
        quat_inv = math.quat_conj(ps.q[3:7])
        gravity = math.quat_rotate(quat_inv, jnp.asarray([0.0, 0.0, -1.0], ps.q.dtype))
        servo_pos = sys.actuator_moment @ transmission_positions(sys, ps.q) - self._standing_ctrl
        lin_vel = math.quat_rotate(quat_inv, ps.v[:3])  # the free joint's v[:3] is in the world frame
        ang_vel = ps.v[3:6]  # already in the trunk frame
        servo_vel = sys.actuator_moment @ ps.v
        blocks = [ps.q[2:3], gravity, servo_pos, lin_vel, ang_vel, servo_vel, action]
        if self._gait_period is not None:
            phase = (2 * np.pi / self._gait_period) * ps.time
            blocks.append(jnp.stack([jnp.cos(phase), jnp.sin(phase)]).astype(ps.q.dtype))
        if self._heading_observation:
            blocks.append(math.quat_rotate(quat_inv, jnp.asarray([1.0, 0.0, 0.0], ps.q.dtype)))
        return finite_or(jnp.concatenate(blocks))
