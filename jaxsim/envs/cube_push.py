"""Cube pushing: slide a 0.1 m cube across a floor to a random target with a round
pusher (a planar counterpart of Brax's ``pusher`` and Meta-World's ``push``, without
the arm).

A 0.5 kg cube (free joint, friction 0.5 with the floor) starts at rest on the floor at
the origin with a random yaw. A 0.3 kg sphere of radius 2.5 cm, its centre 3 cm above the
floor, moves on two slide joints (x, then y; +-0.6 m) driven by velocity servos, each
pushing with up to 10 N. The pusher only touches the cube (never the floor), below the
cube's centre, where a push slides the cube rather than tipping it. Each episode draws
the target (uniform over the annulus ``target_min_radius`` to ``target_radius`` around
the cube's start, 5-30 cm) and the pusher's start (15-25 cm from the cube, any side).

The policy sees and acts in the episode's task frame: the floor plane turned so that
its x axis points from the cube's start (the origin) to the target, z up. Every target
direction is then the same problem, and a policy need not learn each one apart.

- Action in [-1, 1]^2: the commanded pusher velocity (task frame) in units of
  ``max_speed`` (0.5 m/s); each world axis' servo command is clipped to
  ``max_speed``.
- Observation (23), planar vectors in the task frame: pusher position (2, m) and
  velocity (2, m/s); cube position (3, m), ``cos 4 yaw`` and ``sin 4 yaw`` (2: its
  yaw from the task frame's x axis; the cube looks the same every quarter turn),
  linear velocity (3, m/s) and angular velocity (3, rad/s); target position (2, m);
  cube-to-target, pusher-to-cube and pusher-to-push-point vectors (2 + 2 + 2, m).
- Reward: ``- distance - reach_weight * reach - ctrl_cost_weight * |action|^2 +
  success_bonus * tolerance(distance, (0, 0), margin=bonus_margin)``
  with ``distance`` the cube-to-target distance and ``reach`` the distance from the
  pusher's centre to the push point, the pusher's place touching the cube on the far
  side from the target (where a push moves the cube towards the target), in the floor
  plane (m), and ``rewards.tolerance``'s Gaussian (1 at the target, 0.91 at 2 cm, 0.1
  at ``bonus_margin`` = 10 cm: it pays for every centimetre, success's 2 cm
  included). Every term is smooth in the action, so ``apg`` gets gradients through
  the contacts.
- Metrics: ``distance`` (m), ``success`` (1 while the cube is within 2 cm of the
  target), ``reach`` (m).
- Termination: the cube's centre below the floor or above 0.2 m, or a non-finite
  state. A cube pushed far away does not end the episode: its rewards are negative,
  so an early end would pay.
- dt = 20 ms: two 10 ms steps of the default contact model (see ``CubePush``);
  episodes of 200 steps (4 s) leave time to circle the cube and push it 30 cm.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxsim import math
from jaxsim.builder import ModelBuilder
from jaxsim.envs.base import PipelineEnv, State, finite_or
from jaxsim.envs.rewards import tolerance
from jaxsim.types import Model

CUBE_SIZE, CUBE_MASS = 0.1, 0.5  # m (edge), kg: the scenes' cube (jaxsim.scenes.cube)
# (static, kinetic) of the floor, the cube and the pusher: one coefficient, so that a
# cube starting or stopping to slide (at ``slip_speed``) makes no jump in the friction
# force and in the gradients through it
FRICTION = (0.5, 0.5)
PUSHER_RADIUS, PUSHER_MASS = 0.025, 0.3  # m, kg
# m: the pusher's centre, below the cube's (0.05): a push low on a face slides the cube
# (tipping it would take a push above 0.1 m at friction 0.5) and the sphere stays
# clear of the floor
PUSHER_HEIGHT = 0.03
STAGE_MASS = 1e-3  # kg, the x stage carrying the y slide (a moving body needs a mass)
# N s/m, the velocity servos' gain: a 0.3 ms time constant on the 0.3 kg pusher, so it
# lags its command by 2.5 mm/s when pushing against the cube's friction (2.5 N). It is
# implicit, so stable at any timestep; an explicit servo at 10 ms is dead-beat at kv =
# 30 N s/m (unstable above 60) and could not start the cube below 8 cm/s
SERVO_KV = 1000.0
SERVO_FORCE = 10.0  # N, the servos' force limit (4x the cube's static friction, 2.5 N)
PUSHER_START = (0.15, 0.25)  # m, range of the pusher's start distance from the cube
CUBE_Z_RANGE = (0.0, 0.2)  # m, the cube's centre outside this height ends the episode


def build_model(dtype=jnp.float32, max_speed: float = 0.5, pusher_range: float = 0.6, **options) -> Model:
    """The cube, the floor and the pusher on its x and y slides.

    Args:
      dtype: the model's float dtype.
      max_speed: m/s, the servos' velocity limit (their ``ctrlrange``).
      pusher_range: m, the slides' limits (+-).
      **options: ModelBuilder options (``contact``, ``timestep``, ...); the timestep
        defaults to 10 ms.

    Returns:
      The Model: q = (pusher x, pusher y, cube position (3), cube quaternion (4)),
      v = (pusher vx, vy, cube linear velocity (3, world), angular velocity (3, body)).
    """
    options.setdefault("timestep", 0.01)
    b = ModelBuilder(**options)
    # collision bits: the floor (1) touches the cube, the pusher (2) only the cube
    b.add_geom("world", "plane", name="floor", friction=FRICTION, contype=1, conaffinity=1)
    b.add_body("stage", pos=(0.0, 0.0, PUSHER_HEIGHT), mass=STAGE_MASS)
    b.add_joint("stage", "slide", axis=(1, 0, 0), name="pusher_x", range=(-pusher_range, pusher_range))
    b.add_body("pusher", "stage", mass=PUSHER_MASS, inertia=np.full(3, 0.4 * PUSHER_MASS * PUSHER_RADIUS ** 2))
    b.add_joint("pusher", "slide", axis=(0, 1, 0), name="pusher_y", range=(-pusher_range, pusher_range))
    b.add_geom("pusher", "sphere", (PUSHER_RADIUS,), name="pusher", friction=FRICTION, contype=2,
               conaffinity=0, rgba=(0.9, 0.4, 0.2, 1.0))
    b.add_body("cube", pos=(0.0, 0.0, CUBE_SIZE / 2), mass=CUBE_MASS,
               inertia=np.full(3, CUBE_MASS * CUBE_SIZE ** 2 / 6))
    b.add_joint("cube", "free", name="cube")
    b.add_geom("cube", "box", (CUBE_SIZE / 2,) * 3, name="cube", friction=FRICTION, contype=1, conaffinity=3)
    # implicit PD: the servo is a soft row of the contact solve, its force bounded by
    # the force limit there, so a stiff servo stays stable and pushes with its full force
    for axis in ("x", "y"):
        b.add_actuator(f"pusher_{axis}", joint=f"pusher_{axis}", kind="velocity", kv=SERVO_KV,
                       ctrlrange=(-max_speed, max_speed), forcerange=(-SERVO_FORCE, SERVO_FORCE),
                       implicit_pd=True)
    return b.build(dtype)


class CubePush(PipelineEnv):
    """Push the cube to within ``success_radius`` of a random target on the floor.

    Actuation: velocity servos. A velocity command makes the action's effect local in
    time (a step's action moves the pusher by at most ``max_speed * dt`` = 1 cm), so
    PPO's Gaussian exploration neither flings the pusher across the table as force
    commands would nor pins it near the centre as absolute position targets would, and
    APG's gradient through a step is the servo's near-identity response rather than a
    double integration. The servos are implicit (solved with the contacts) and stiff:
    the pusher moves at its command, pushing with up to 10 N, the force it takes to
    start the cube from rest at 0.25 m/s within a 10 ms step being above that; a servo
    at its force limit passes no gradient to its action (as any clipped force).

    Timing: 10 ms simulator steps resolve a sliding contact (the pusher moves 5 mm per
    step at full speed, a fifth of its radius) at half the cost of 5 ms ones; two of
    them per environment step (dt = 20 ms) keep a 4 s episode at 200 decisions.

    Reward weights: ``reach_weight`` 0.5 as Brax's ``pusher``; ``ctrl_cost_weight``
    0.01 makes a step at full speed (``|action|^2`` = 2) cost what 2 cm of distance to
    the target does, so moving is cheap but idling at the target is not penalized.
    """

    def __init__(self, dtype=jnp.float32, target_radius: float = 0.3, target_min_radius: float = 0.05,
                 success_radius: float = 0.02, max_speed: float = 0.5, reach_weight: float = 0.5,
                 ctrl_cost_weight: float = 0.01, success_bonus: float = 1.0, bonus_margin: float = 0.1,
                 workspace: float = 0.5,
                 n_frames: int = 2, **options):
        """Args:
          dtype: the model's float dtype.
          target_radius: m, the farthest target from the cube's start.
          target_min_radius: m, the nearest (targets are uniform over the annulus).
          success_radius: m, the cube-to-target distance that counts as success.
          max_speed: m/s, the pusher speed an action of 1 commands.
          reach_weight: weight of the pusher-to-push-point distance in the reward.
          ctrl_cost_weight: weight of ``|action|^2`` in the reward.
          success_bonus: the closeness bonus per step with the cube on the target.
          bonus_margin: m, the bonus falls off from the target as a Gaussian, to a
            tenth at this distance: a cube pushed closer earns more of it well
            before it arrives.
          workspace: m, the region the targets lie in (from the origin); the pusher's
            slides reach 0.1 m farther.
          n_frames: simulator steps per environment step.
          **options: ModelBuilder options (``contact``: any of
            ``jaxsim.CONTACT_MODELS``; ``timestep``, default 10 ms; ...).
        """
        if not 0 <= target_min_radius <= target_radius:
            raise ValueError(f"CubePush: need 0 <= target_min_radius <= target_radius, got {target_min_radius}, "
                             f"{target_radius}")
        if not target_radius + CUBE_SIZE < workspace:
            raise ValueError(f"CubePush: the workspace ({workspace} m) must hold the targets ({target_radius} m) "
                             f"and the cube")
        if not (success_radius > 0 and max_speed > 0 and bonus_margin > 0):
            raise ValueError(f"CubePush: success_radius, bonus_margin and max_speed must be positive, got "
                             f"{success_radius}, {bonus_margin}, {max_speed}")
        super().__init__(build_model(dtype, max_speed=max_speed, pusher_range=workspace + 0.1, **options),
                         n_frames=n_frames)
        self._target_radius, self._target_min_radius = float(target_radius), float(target_min_radius)
        self._success_radius, self._max_speed = float(success_radius), float(max_speed)
        self._reach_weight, self._ctrl_cost_weight = float(reach_weight), float(ctrl_cost_weight)
        self._success_bonus, self._bonus_margin = float(success_bonus), float(bonus_margin)

    def reset(self, rng: jax.Array) -> State:
        k_yaw, k_target, k_pusher = jax.random.split(rng, 3)
        dtype = self.sys.dtype
        # every distinct yaw of a cube lies within a quarter turn
        yaw = jax.random.uniform(k_yaw, (), dtype, -jnp.pi / 4, jnp.pi / 4)
        target = _annulus(k_target, self._target_min_radius, self._target_radius, dtype)
        pusher = _annulus(k_pusher, *PUSHER_START, dtype)
        zero = jnp.zeros((), dtype)
        # resting on a face: its centre half an edge above the floor (the contact
        # models settle it by at most 10 um in the first step, ``relaxed``'s compliance)
        cube = jnp.concatenate([jnp.asarray([0.0, 0.0, CUBE_SIZE / 2], dtype),
                                jnp.stack([jnp.cos(yaw / 2), zero, zero, jnp.sin(yaw / 2)])])
        ps = self.pipeline_init(jnp.concatenate([pusher, cube]), jnp.zeros(self.sys.nv, dtype))
        axes = target / math.safe_norm(target)  # the task frame's x axis in the world (cos, sin)
        return State(ps, self._obs(ps, target, axes), zero, zero,
                     metrics={"distance": zero, "success": zero, "reach": zero},
                     info={"target": target, "task_axes": axes})

    def step(self, state: State, action: jax.Array) -> State:
        target, axes = state.info["target"], state.info["task_axes"]
        # the action is a velocity in the task frame; the servos' ctrlrange clamps each
        # world axis' command to +-max_speed
        ps = self.pipeline_step(state.pipeline_state, self._max_speed * _rotate(axes, action))
        pusher, cube = ps.q[0:2], ps.q[2:5]
        distance = math.safe_norm(cube[:2] - target)
        reach = math.safe_norm(self._push_point(cube[:2], target) - pusher)
        near = tolerance(distance, bounds=(0.0, 0.0), margin=self._bonus_margin)
        reward = finite_or(-distance - self._reach_weight * reach
                           - self._ctrl_cost_weight * jnp.sum(action ** 2) + self._success_bonus * near)
        outside = (cube[2] < CUBE_Z_RANGE[0]) | (cube[2] > CUBE_Z_RANGE[1])
        done = jnp.where(ps.nonfinite | outside, 1.0, state.done).astype(reward.dtype)
        success = (distance < self._success_radius).astype(reward.dtype)
        # in place, as Brax's envs do: wrappers keep metrics of their own in the same dict
        state.metrics.update(distance=finite_or(distance), success=success, reach=finite_or(reach))
        return state.replace(pipeline_state=ps, obs=self._obs(ps, target, axes), reward=reward, done=done)

    def _push_point(self, cube_xy: jax.Array, target: jax.Array) -> jax.Array:
        """(2,) m, the pusher's place behind the cube on the far side from the target:
        from there a push moves the cube towards the target (a reach to the cube's
        centre would not say from which side to push)."""
        offset = target - cube_xy
        heading = offset / jnp.maximum(math.safe_norm(offset), self._success_radius)
        return cube_xy - (CUBE_SIZE / 2 + PUSHER_RADIUS) * heading

    def _obs(self, ps, target: jax.Array, axes: jax.Array) -> jax.Array:
        pusher, cube, quat = ps.q[0:2], ps.q[2:5], ps.q[5:9]
        yaw = math.quat_yaw(quat) - jnp.arctan2(axes[1], axes[0])
        omega = math.quat_rotate(quat, ps.v[5:8])  # the free joint's angular velocity is in the body frame

        to_task = axes * jnp.asarray([1, -1], axes.dtype)

        def planar(v):  # a world vector's x, y in the task frame, z kept
            return jnp.concatenate([_rotate(to_task, v[:2]), v[2:]])

        return finite_or(jnp.concatenate([
            planar(pusher), planar(ps.v[0:2]), planar(cube), jnp.stack([jnp.cos(4 * yaw), jnp.sin(4 * yaw)]),
            planar(ps.v[2:5]), planar(omega), planar(target), planar(target - cube[:2]), planar(cube[:2] - pusher),
            planar(self._push_point(cube[:2], target) - pusher)]))


def _rotate(cos_sin: jax.Array, xy: jax.Array) -> jax.Array:
    """(2,) ``xy`` turned by the angle whose (cos, sin) is ``cos_sin``: the task frame's
    axes (its x axis in the world) take a task-frame vector to the world, their
    conjugate ``(cos, -sin)`` a world vector to the task frame."""
    return jnp.stack([cos_sin[0] * xy[0] - cos_sin[1] * xy[1], cos_sin[1] * xy[0] + cos_sin[0] * xy[1]])


def _annulus(rng: jax.Array, r_min: float, r_max: float, dtype) -> jax.Array:
    """(2,) a point uniform over the area of the annulus r_min <= r <= r_max, m."""
    k_r, k_angle = jax.random.split(rng)
    r = jnp.sqrt(jax.random.uniform(k_r, (), dtype, r_min ** 2, r_max ** 2))
    angle = jax.random.uniform(k_angle, (), dtype, -jnp.pi, jnp.pi)
    return r * jnp.stack([jnp.cos(angle), jnp.sin(angle)])
