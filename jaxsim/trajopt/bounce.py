"""Bouncing: throw a ball so that it bounces off the floor and a wall and is
at a target point at a given time (Springhead's impact model, restitution 0.6)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxsim.builder import ModelBuilder
from jaxsim.step import make_state, step
from jaxsim.types import Model

Array = jax.Array

BALL_RADIUS, BALL_MASS = 0.05, 0.2  # m, kg
RESTITUTION = 0.6  # every geom's: the pair's mean is 0.6
# (static, kinetic): frictionless, so that an impact's outcome is its restitution's
# alone (with friction, whether the floor's impact leaves the ball slipping or rolling
# varies with the impact's phase within the step, a second sawtooth in its path)
FRICTION = (0.0, 0.0)
WALL_X = 0.5  # m, the wall's face, facing -x
RELEASE = (0.0, 0.0, 1.0)  # m, the ball's centre at the throw


def build_model(dtype=jnp.float32, timestep: float = 1e-3, **options) -> Model:
    """The floor (z = 0), a wall whose face is the plane x = ``WALL_X`` (a fixed 0.1 m
    thick box, 4 m wide and 2 m high) and a free ball of radius 5 cm and 0.2 kg at
    ``RELEASE``, all of restitution 0.6 and frictionless, under Springhead's contact
    model with an impact threshold of 0.5 m/s (every approach of the throws here is an
    impact), the QP solver (implicit gradients) and the impacts' derivative taken at
    the instant of contact (``impact_gradient="time_of_impact"``: the step's own
    derivative slopes against the trend of the ball's path, ``SpringheadParams``).

    Args:
      dtype: the model's float dtype.
      timestep: s. Which step an impact falls in moves the ball's later path by up to
        ``(1 + e) |v| dt``: 5 mm at 1 ms for these throws, half the target's tolerance.
      **options: further ModelBuilder options (``solver_tol``, ``impact_gradient``,
        ...).
    """
    options = {"contact": "springhead", "impact_threshold": 0.5, "solver": "qp", "impact_gradient": "time_of_impact",
               **options}
    b = ModelBuilder(timestep=timestep, **options)
    b.add_geom("world", "plane", (5, 5, 0.1), name="floor", friction=FRICTION, restitution=RESTITUTION)
    b.add_geom("world", "box", (0.05, 2.0, 1.0), name="wall", pos=(WALL_X + 0.05, 0.0, 1.0), friction=FRICTION,
               restitution=RESTITUTION)
    b.add_body("ball", pos=RELEASE, mass=BALL_MASS, inertia=(0.4 * BALL_MASS * BALL_RADIUS ** 2,) * 3)
    b.add_joint("ball", "free", name="ball")
    b.add_geom("ball", "sphere", (BALL_RADIUS,), name="ball", friction=FRICTION, restitution=RESTITUTION)
    return b.build(dtype)


class BounceProblem:
    """Throw the ball so that its centre is at ``target`` at time ``horizon_s``.

    ``theta`` (3,) sets the throw's velocity, ``v0 = (softplus(theta_x), theta_y,
    -softplus(theta_z))`` m/s: towards the wall and not upwards. From 1 m the ball
    then reaches the floor within 0.45 s, and a target nearer than the release to the
    wall's far side (x < 0) is reachable only off the wall, so every solution bounces
    off both. The loss is ``|p - target|^2 / scale^2`` with ``p`` the ball's centre at
    ``horizon_s`` (1 below ``scale`` = 1 cm).
    """

    def __init__(self, target: tuple[float, float, float], dtype=jnp.float32, horizon_s: float = 0.7,
                 scale: float = 0.01, **options):
        """Args:
          target: m, the point the ball's centre must be at, at ``horizon_s``.
          dtype: the model's float dtype.
          horizon_s: s, the time of the hit (a whole number of the model's steps).
          scale: m, the miss the loss counts as 1.
          **options: ``build_model`` options (``timestep``, ``solver_tol``, ...).
        """
        self.model = build_model(dtype, **options)
        self.dtype = dtype
        dt = float(self.model.opt.timestep)
        self.steps = int(round(horizon_s / dt))
        if self.steps < 1 or abs(self.steps * dt - horizon_s) > 1e-4 * dt:
            raise ValueError(f"BounceProblem: horizon_s = {horizon_s} s is not a whole number of {dt} s steps")
        self.target = jnp.asarray(target, dtype)
        if self.target.shape != (3,):
            raise ValueError(f"BounceProblem: target must be a point (x, y, z), got {target}")
        if not float(self.target[0]) < WALL_X - BALL_RADIUS or not float(self.target[2]) > BALL_RADIUS:
            raise ValueError(f"BounceProblem: the target {target} is not in front of the wall (x < "
                             f"{WALL_X - BALL_RADIUS} m) and above the floor (z > {BALL_RADIUS} m)")
        self.scale = float(scale)
        self.state0 = make_state(self.model)

    def initial_guess(self) -> Array:
        """A throw at (3, 0, -2) m/s: off the wall, then the floor. The height at
        ``horizon_s`` is lowest (0.38 m) for a throw down at 1.4 m/s; this start is on
        the faster side, which reaches up to 0.58 m at 4 m/s."""
        return self.theta_of(jnp.asarray([3.0, 0.0, -2.0], self.dtype))

    @staticmethod
    def velocity(theta: Array) -> Array:
        """(3,) m/s, the throw's velocity."""
        return jnp.stack([jax.nn.softplus(theta[0]), theta[1], -jax.nn.softplus(theta[2])])

    @staticmethod
    def theta_of(velocity: Array) -> Array:
        """The ``theta`` of a throw (vx > 0, vz < 0)."""
        inverse_softplus = lambda y: y + jnp.log(-jnp.expm1(-y))  # noqa: E731
        return jnp.stack([inverse_softplus(velocity[0]), velocity[1], inverse_softplus(-velocity[2])])

    def rollout(self, theta: Array) -> tuple[Array, Array, Array]:
        """(the ball's centre at ``horizon_s`` (3,) m, the floor bounces, the wall
        bounces): a bounce is a step that turns the ball's approach to the surface
        (v_z < 0, v_x > 0) into a departure."""
        s0 = self.state0.replace(v=self.state0.v.at[:3].set(self.velocity(theta)))

        def body(carry, _):
            s, floor, wall = carry
            s1 = step(self.model, s, None)
            floor = floor + ((s.v[2] < 0) & (s1.v[2] > 0))
            wall = wall + ((s.v[0] > 0) & (s1.v[0] < 0))
            return (s1, floor, wall), None

        zero = jnp.zeros((), jnp.int32)
        (s, floor, wall), _ = jax.lax.scan(body, (s0, zero, zero), None, length=self.steps)
        return s.q[:3], floor, wall

    def residuals(self, theta: Array) -> Array:
        """(3,) the miss in units of ``scale``: ``loss`` is their sum of squares, for
        least-squares solvers (Gauss-Newton, Levenberg-Marquardt)."""
        return (self.rollout(theta)[0] - self.target) / self.scale

    def loss(self, theta: Array) -> Array:
        """The scalar loss (class docstring)."""
        return jnp.sum(self.residuals(theta) ** 2)

    def metrics(self, theta: Array) -> dict[str, Array]:
        """``miss_cm`` (the centre's distance from the target at ``horizon_s``),
        ``floor_bounces`` and ``wall_bounces``."""
        p, floor, wall = self.rollout(theta)
        return {"miss_cm": 100 * jnp.linalg.norm(p - self.target), "floor_bounces": floor, "wall_bounces": wall}

    @staticmethod
    def solved(metrics: dict) -> bool:
        """Within 1 cm of the target, having bounced off the floor and the wall."""
        return (float(metrics["miss_cm"]) <= 1.0 and int(metrics["floor_bounces"]) >= 1
                and int(metrics["wall_bounces"]) >= 1)
