"""Pushing: open-loop pusher commands bring the ``cube_push`` environment's
cube (``jaxsim.envs.cube_push``) to a pose (x, y, yaw) on the floor."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxsim.envs import cube_push
from jaxsim.math import quat_yaw
from jaxsim.step import make_state, step

Array = jax.Array


def quarter_turn_error(yaw: Array, target: Array) -> Array:
    """A cube's yaw error (rad) in [-pi/4, pi/4): yaws a quarter turn apart look the
    same."""
    return (yaw - target + jnp.pi / 4) % (jnp.pi / 2) - jnp.pi / 4


class CubePushProblem:
    """Push the cube to a target pose (x, y, yaw) by open-loop pusher commands.

    The scene is ``cube_push.build_model``'s: a 0.1 m, 0.5 kg cube at rest on the
    floor at the origin (yaw 0), a 2.5 cm sphere on x/y slides driven by stiff
    velocity servos (up to 10 N), starting ``pusher_start`` behind the cube on its -x
    side. ``theta`` (knots, 2) are piecewise-constant servo commands, each held for
    ``horizon_s / knots``, ``max_speed * tanh(theta)`` m/s. The loss is

        (|p - p*| / position_scale)^2 + (1 - cos 4 (yaw - yaw*)) / 8 / yaw_scale^2
        + effort_weight * mean(tanh(theta)^2)

    with ``p`` and ``yaw`` the cube's final floor position and yaw. The yaw term has
    the cube's quarter-turn symmetry and is ``((yaw - yaw*) / yaw_scale)^2`` near the
    target, so a pose within ``position_scale`` and ``yaw_scale`` (1 cm, 5 deg) has a
    loss below about 2.
    """

    def __init__(self, target: tuple[float, float, float], dtype=jnp.float32, horizon_s: float = 2.0,
                 knots: int = 20, max_speed: float = 0.5, pusher_start: float = 0.15,
                 position_scale: float = 0.01, yaw_scale_deg: float = 5.0, effort_weight: float = 1e-3,
                 **options):
        """Args:
          target: (x m, y m, yaw deg) of the cube's final pose.
          dtype: the model's float dtype.
          horizon_s: s, the rollout's length (a whole number of the model's steps
            per knot).
          knots: the number of piecewise-constant commands.
          max_speed: m/s, the servos' velocity limit.
          pusher_start: m, the pusher's start on the -x axis, from the cube's centre.
          position_scale: m, the position error the loss counts as 1.
          yaw_scale_deg: deg, the yaw error the loss counts as 1.
          effort_weight: the weight of the mean squared command (in units of
            ``max_speed``).
          **options: ``cube_push.build_model`` options (``contact``, ``timestep``).
        """
        self.model = cube_push.build_model(dtype, max_speed=max_speed, **options)
        self.dtype, self.max_speed, self.knots = dtype, float(max_speed), int(knots)
        self.steps = int(round(horizon_s / float(self.model.opt.timestep)))
        if knots < 1 or self.steps % knots:
            raise ValueError(f"CubePushProblem: {self.steps} steps of {float(self.model.opt.timestep)} s do not "
                             f"split into {knots} knots")
        if not pusher_start > cube_push.CUBE_SIZE / 2 + cube_push.PUSHER_RADIUS:
            raise ValueError(f"CubePushProblem: the pusher must start clear of the cube, got {pusher_start} m")
        x, y, yaw_deg = target
        self.target_xy = jnp.asarray([x, y], dtype)
        self.target_yaw = jnp.asarray(np.deg2rad(yaw_deg), dtype)
        self.position_scale, self.yaw_scale = float(position_scale), float(np.deg2rad(yaw_scale_deg))
        self.effort_weight = float(effort_weight)
        cube = [0.0, 0.0, cube_push.CUBE_SIZE / 2, 1.0, 0.0, 0.0, 0.0]
        self.state0 = make_state(self.model, q=jnp.asarray([-pusher_start, 0.0, *cube], dtype))

    def straight_push(self, speed: float = 0.3) -> Array:
        """(knots, 2) ``theta`` of a push at ``speed`` (m/s) from the pusher's start
        through the cube's centre towards the target: it moves the cube, but neither
        aims where it stops nor turns it. A first guess."""
        heading = self.target_xy - self.state0.q[:2]
        velocity = speed * heading / jnp.linalg.norm(heading)
        return jnp.broadcast_to(jnp.arctanh(velocity / self.max_speed), (self.knots, 2)).astype(self.dtype)

    def initial_guess(self) -> Array:
        """The optimizers' common start: ``straight_push()``."""
        return self.straight_push()

    def metrics(self, theta: Array) -> dict[str, Array]:
        """``position_cm`` and ``yaw_deg``: the cube's final pose error."""
        return self.pose_metrics(self.final_state(theta).q)

    @staticmethod
    def solved(metrics: dict) -> bool:
        """Within 1 cm and 5 deg of the target pose."""
        return float(metrics["position_cm"]) <= 1.0 and abs(float(metrics["yaw_deg"])) <= 5.0

    def controls(self, theta: Array) -> Array:
        """(steps, 2) servo commands, m/s."""
        return jnp.repeat(self.max_speed * jnp.tanh(theta), self.steps // self.knots, axis=0)

    def final_state(self, theta: Array):
        """The State after the rollout (its trajectory is not kept)."""
        return jax.lax.scan(lambda s, u: (step(self.model, s, u), None), self.state0, self.controls(theta))[0]

    def errors(self, theta: Array) -> tuple[Array, Array]:
        """(position error m, yaw error rad) of the cube's final pose."""
        return self.pose_errors(self.final_state(theta).q)

    def loss(self, theta: Array) -> Array:
        """The scalar loss (class docstring)."""
        return self.pose_loss(self.final_state(theta).q, theta)

    def pose_errors(self, q: Array) -> tuple[Array, Array]:
        """(position error m, yaw error rad) of the cube at positions ``q`` (pusher x,
        y, cube position, cube quaternion: the model's and an equivalent MJCF's)."""
        return jnp.linalg.norm(q[2:4] - self.target_xy), quarter_turn_error(quat_yaw(q[5:9]), self.target_yaw)

    def pose_metrics(self, q: Array) -> dict[str, Array]:
        """``metrics`` of the final positions ``q`` (``pose_errors`` in cm and deg)."""
        position, yaw = self.pose_errors(q)
        return {"position_cm": 100 * position, "yaw_deg": jnp.rad2deg(yaw)}

    def pose_loss(self, q: Array, theta: Array) -> Array:
        """The loss of the final positions ``q`` reached with ``theta`` (so that another
        simulator's rollout of the same scene can be scored alike)."""
        position = jnp.sum((q[2:4] - self.target_xy) ** 2) / self.position_scale ** 2
        turn = (1 - jnp.cos(4 * (quat_yaw(q[5:9]) - self.target_yaw))) / 8 / self.yaw_scale ** 2
        return position + turn + self.effort_weight * jnp.mean(jnp.tanh(theta) ** 2)
