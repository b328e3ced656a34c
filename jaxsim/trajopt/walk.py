"""Walking: an open-loop periodic gait that carries jaxsim's implicit-PD quadruped
(``jaxsim.quadruped``) forward without falling."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxsim import quadruped
from jaxsim.envs.quadruped_walk import MIN_HEIGHT
from jaxsim.step import make_state, step

Array = jax.Array

TARGET_DISTANCE = 1.0  # m, forward travel of the trunk that solves the task
MAX_TILT_DEG = 60.0  # deg, the walk environment's fall criterion (with MIN_HEIGHT)
SYMMETRIES = ("glide", "mirror", "none")
SERVO_SETS = ("all", "sagittal")


def _mirror_sign(name: str) -> float:
    """How a servo's angle maps under the reflection y -> -y: a rotation vector is a
    pseudovector, so its x and z components (roll, yaw) change sign and its y
    component (pitch, and every hinge, which turns about y) keeps it."""
    return -1.0 if name.rsplit("_", 1)[-1] in ("x", "z") else 1.0


def _coefficient_map(names: list[str], harmonics: int, symmetry: str, servos: str) -> np.ndarray:
    """(nu * (2 harmonics + 1), n) the linear map from ``theta`` (n,) to every servo's
    Fourier coefficients [bias, cos 1, sin 1, ..., cos K, sin K], flattened servo by
    servo. ``symmetry``:

    * ``"glide"``: a right servo repeats its left twin half a period later, mirrored
      (walk, trot and pace): harmonic k's coefficients times ``sign (-1)^k``. A servo
      on the midline (trunk, neck, head, tail) is its own twin, so it keeps only the
      harmonics with ``sign (-1)^k = 1``: pitch the even ones, roll and yaw the odd.
    * ``"mirror"``: a right servo equals its mirrored left twin (bound, pronk): the
      motion stays in the sagittal plane; midline roll and yaw servos stay at 0.
    * ``"none"``: every coefficient free.

    Servos outside the set ``servos`` (``"sagittal"``: hinges and the ball joints' y
    servos only) keep their standing target 0."""
    nb = 2 * harmonics + 1
    order = np.array([0] + [k for k in range(1, harmonics + 1) for _ in (0, 1)])
    index = {name: i for i, name in enumerate(names)}
    columns = []

    def column(entries):
        col = np.zeros(len(names) * nb)
        for i, b, value in entries:
            col[i * nb + b] = value
        columns.append(col)

    for i, name in enumerate(names):
        sign = _mirror_sign(name)
        if servos == "sagittal" and sign < 0:
            continue
        twin = name.replace("_left", "_right") if "_left" in name else None
        if symmetry != "none" and "_right" in name:
            continue  # set with its left twin
        for b, k in enumerate(order):
            shift = (-1.0) ** k if symmetry == "glide" else 1.0
            if symmetry == "none" or (twin is None and "_right" not in name and sign * shift == 1.0):
                column([(i, b, 1.0)])
            elif twin is not None:
                column([(i, b, 1.0), (index[twin], b, sign * shift)])
    return np.stack(columns, axis=1)


class QuadrupedGaitProblem:
    """Walk the implicit-PD quadruped forward (+x) for ``horizon_s`` without falling, by
    an open-loop periodic gait.

    The model is ``jaxsim.quadruped.build(timestep, implicit_pd=True)``: 50 position
    servos whose targets 0 hold the standing pose (trunk at 0.85 m), on a floor with
    friction 1. Servo j's target at step i (time ``t = i timestep``) is

        u_j(t) = amplitude tanh(ramp(t) r_j(t)),
        r_j(t) = c_j0 + sum_k (a_jk cos(k w t) + b_jk sin(k w t)) / k,   w = 2 pi / period_s,

    with ``ramp`` rising from 0 to 1 over ``ramp_s`` as ``(1 - cos(pi t / ramp_s)) / 2``
    so that the gait starts from the standing targets without a jolt; tanh keeps every
    target within ``amplitude`` of standing whatever ``theta`` is. Harmonic k is
    divided by k so that a unit of ``theta`` moves a servo about equally fast in every
    harmonic. ``theta`` (n,) holds the free coefficients (``coefficients`` maps it to
    the (50, 2 harmonics + 1) table): ``symmetry`` ties right servos to their left twins
    (``_coefficient_map``), which halves n, and ``servos`` picks which servos move.
    The defaults (a glide-symmetric gait of all 50 servos, 2 harmonics: n = 122, a
    0.5 s period, 0.3 rad) were chosen by measurement: Adam from standing still walks
    1 m within about ten steps, where gaits of a 1 s period tipped the robot over and
    their gradients grew about tenfold per 0.5 s of horizon (``experiments/trajopt.py``).

    The loss (in m) is

        -distance + height_weight mean_t s softplus((height_margin - z_t) / s)
                  + tilt_weight mean_t s softplus((cos(tilt_margin) - up_t) / s)
                  + rock_weight mean_t (wx_t^2 + wy_t^2)
                  + effort_weight mean_{t, j} (u_j(t) / amplitude)^2,

    ``distance`` the trunk's x travel at the horizon, ``z_t`` its height, ``up_t`` the
    world z of its up axis (the cosine of its tilt), ``wx, wy`` its roll and pitch rates
    (rad/s, trunk frame) after step t, ``s = penalty_width``. The softplus terms are
    smooth hinges: about 0 while the trunk stays above ``height_margin`` and within
    ``tilt_margin_deg`` of upright, linear beyond, so they warn the optimizer before the
    fall criteria (0.5 m, 60 deg). The rocking term keeps the trunk from swinging: a
    gait that rocks it is close to tipping over, where the rollout's sensitivity to
    ``theta`` (and so the gradient) grows exponentially with the horizon.
    """

    def __init__(self, dtype=jnp.float32, horizon_s: float = 3.0, timestep: float = 0.02, period_s: float = 0.5,
                 harmonics: int = 2, amplitude: float = 0.3, ramp_s: float = 0.5, symmetry: str = "glide",
                 servos: str = "all", height_margin: float = 0.75, tilt_margin_deg: float = 30.0,
                 height_weight: float = 20.0, tilt_weight: float = 20.0, rock_weight: float = 0.1,
                 effort_weight: float = 0.01, penalty_width: float = 0.02, **options):
        """Args:
          dtype: the model's float dtype.
          horizon_s: s, the rollout's length (a whole number of steps).
          timestep: s, the simulator step.
          period_s: s, the gait's period.
          harmonics: K, the Fourier harmonics per servo (besides the bias).
          amplitude: rad, the largest servo target offset from standing.
          ramp_s: s, how long the gait takes to fade in from standing (0: at once).
          symmetry: "glide", "mirror" or "none" (``_coefficient_map``).
          servos: "all" or "sagittal" (hinges and ball joints' y servos).
          height_margin: m, trunk height below which the height penalty grows (between
            the fall height 0.5 m and the standing height 0.85 m).
          tilt_margin_deg: deg, trunk tilt beyond which the tilt penalty grows (below
            the fall criterion's 60).
          height_weight: weight of the height penalty (m of loss per m below the
            margin).
          tilt_weight: weight of the tilt penalty (m of loss per unit of up-axis
            cosine below the margin's).
          rock_weight: m s^2 / rad^2, weight of the mean squared roll and pitch rate.
          effort_weight: m, weight of the mean squared servo offset (in units of
            ``amplitude``).
          penalty_width: the softplus hinges' width (m for height, cosine for tilt).
          **options: ``jaxsim.quadruped.build`` / ModelBuilder options (``contact``,
            ``solver_tol``, ``solver_iterations``, ...).

        Raises:
          ValueError: on an argument outside its range.
        """
        def need(ok: bool, what: str):
            if not ok:
                raise ValueError(f"QuadrupedGaitProblem: {what}")

        need(timestep > 0 and horizon_s > 0, f"timestep and horizon_s must be positive, got {timestep}, {horizon_s}")
        steps = horizon_s / timestep
        need(round(steps) >= 1 and abs(steps - round(steps)) < 1e-6 * max(steps, 1.0),
             f"horizon_s ({horizon_s} s) must be a whole number of steps of {timestep} s")
        need(period_s > 0, f"period_s must be positive, got {period_s}")
        need(int(harmonics) == harmonics and harmonics >= 1, f"harmonics must be a positive integer, got {harmonics}")
        need(0 < amplitude <= np.pi / 2, f"amplitude must be in (0, pi/2] rad, got {amplitude}")
        need(0 <= ramp_s < horizon_s, f"ramp_s must be in [0, horizon_s), got {ramp_s}")
        need(symmetry in SYMMETRIES, f"symmetry must be one of {SYMMETRIES}, got {symmetry!r}")
        need(servos in SERVO_SETS, f"servos must be one of {SERVO_SETS}, got {servos!r}")
        need(MIN_HEIGHT < height_margin < quadruped.HEIGHT,
             f"height_margin must be between {MIN_HEIGHT} and {quadruped.HEIGHT} m, got {height_margin}")
        need(0 < tilt_margin_deg < MAX_TILT_DEG,
             f"tilt_margin_deg must be in (0, {MAX_TILT_DEG}), got {tilt_margin_deg}")
        need(min(height_weight, tilt_weight, rock_weight, effort_weight) >= 0, "the weights must be non-negative")
        need(penalty_width > 0, f"penalty_width must be positive, got {penalty_width}")

        self.model = quadruped.build(timestep, implicit_pd=True, dtype=dtype, **options)
        self.dtype, self.steps, self.harmonics = dtype, int(round(steps)), int(harmonics)
        self.amplitude = float(amplitude)
        self.height_margin, self.up_margin = float(height_margin), float(np.cos(np.deg2rad(tilt_margin_deg)))
        self.height_weight, self.tilt_weight = float(height_weight), float(tilt_weight)
        self.rock_weight, self.effort_weight = float(rock_weight), float(effort_weight)
        self.penalty_width = float(penalty_width)
        self.names = quadruped.actuator_names()
        self.expand = jnp.asarray(_coefficient_map(self.names, self.harmonics, symmetry, servos), dtype)
        self.size = int(self.expand.shape[1])
        t = np.arange(self.steps) * float(timestep)
        w = 2 * np.pi / period_s
        rows = [np.ones_like(t)]
        for k in range(1, self.harmonics + 1):
            rows += [np.cos(k * w * t) / k, np.sin(k * w * t) / k]
        ramp = 0.5 * (1 - np.cos(np.pi * np.minimum(t / ramp_s, 1.0))) if ramp_s > 0 else np.ones_like(t)
        self.basis = jnp.asarray(np.asarray(rows) * ramp, dtype)  # (2 harmonics + 1, steps)
        self.state0 = make_state(self.model)

    def initial_guess(self) -> Array:
        """(n,) zeros: standing still, the optimizers' common start."""
        return jnp.zeros((self.size,), self.dtype)

    def coefficients(self, theta: Array) -> Array:
        """(nu, 2 harmonics + 1) every servo's [bias, cos 1, sin 1, ...] coefficients."""
        return (self.expand @ theta).reshape(len(self.names), -1)

    def controls(self, theta: Array) -> Array:
        """(steps, nu) servo targets, rad."""
        return self.amplitude * jnp.tanh(self.coefficients(theta) @ self.basis).T

    def trajectory(self, theta: Array) -> Array:
        """(steps, 9) the trunk after each step: position (3, m), quaternion (4, w x y
        z), roll and pitch rates (2, rad/s, trunk frame)."""
        return self._trajectory(self.controls(theta))

    def _trajectory(self, controls: Array) -> Array:
        def body(state, u):
            state = step(self.model, state, u)
            return state, jnp.concatenate([state.q[:7], state.v[3:5]])

        return jax.lax.scan(body, self.state0, controls)[1]

    def _trunk(self, trajectory: Array) -> tuple[Array, Array, Array]:
        """(distance m, heights (steps,) m, up-axis z (steps,)) of a ``trajectory``."""
        quat = trajectory[:, 3:7]
        up = 1 - 2 * (quat[:, 1] ** 2 + quat[:, 2] ** 2)
        return trajectory[-1, 0] - self.state0.q[0], trajectory[:, 2], up

    def loss(self, theta: Array) -> Array:
        """The scalar loss, m (class docstring)."""
        controls = self.controls(theta)
        trajectory = self._trajectory(controls)
        distance, height, up = self._trunk(trajectory)
        s = self.penalty_width
        low = jnp.mean(s * jax.nn.softplus((self.height_margin - height) / s))
        tilted = jnp.mean(s * jax.nn.softplus((self.up_margin - up) / s))
        rocking = jnp.mean(jnp.sum(trajectory[:, 7:9] ** 2, axis=-1))
        effort = jnp.mean((controls / self.amplitude) ** 2)
        return (-distance + self.height_weight * low + self.tilt_weight * tilted + self.rock_weight * rocking
                + self.effort_weight * effort)

    def metrics(self, theta: Array) -> dict[str, Array]:
        """``distance_m``: the trunk's x travel at the horizon; ``min_height_m``: its
        lowest height; ``max_tilt_deg``: its largest tilt from upright."""
        distance, height, up = self._trunk(self.trajectory(theta))
        return {"distance_m": distance, "min_height_m": jnp.min(height),
                "max_tilt_deg": jnp.rad2deg(jnp.arccos(jnp.clip(jnp.min(up), -1.0, 1.0)))}

    @staticmethod
    def solved(metrics: dict) -> bool:
        """At least ``TARGET_DISTANCE`` (1 m) forward without falling: the trunk never
        below ``MIN_HEIGHT`` (0.5 m) nor tilted past ``MAX_TILT_DEG`` (60 deg)."""
        return (float(metrics["distance_m"]) >= TARGET_DISTANCE and float(metrics["min_height_m"]) >= MIN_HEIGHT
                and float(metrics["max_tilt_deg"]) <= MAX_TILT_DEG)
