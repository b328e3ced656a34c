"""Reaching and pushing: gymnasium's pusher arm pushes its object to a target on the
table, steered by the waypoints of a joint-space PD controller."""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np

from jaxsim.kinematics import forward_kinematics
from jaxsim.step import make_state, step

Array = jax.Array
SHOULDER_XY = (0.1, -0.6)  # m, the shoulder lift axis above the table (pusher_v5.xml)
TORQUE_LIMIT = 2.0  # N m, the file's ctrlrange


OBJECT_GEOM = '<geom rgba="1 1 1 1" type="cylinder" size="0.05 0.05 0.05" density="0.01" contype="1" conaffinity="0"/>'


def pusher_xml(object_density: float = 300.0) -> str:
    """gymnasium's ``pusher_v5.xml`` with two changes.

    * The object's density is ``object_density`` kg/m^3 (default the file's density for
      every other geom, the arm's: 0.24 kg). At the file's 0.01 kg/m^3 (7.9e-6 kg)
      MuJoCo's contact, whose softness scales with the bodies' inverse masses, lets
      the arm pass through the object: along the straight push below MuJoCo C moved
      it 0.9 cm where jaxsim moved it 12 cm; at 300 both move it 12 cm, 0.6 cm apart.
    * The object's contact with the table is excluded: its x/y slides hold its height
      and its contacts are frictionless (condim 1), so that contact exerts nothing
      and only costs solver work.
    """
    try:
        import gymnasium
    except ImportError as e:  # the bench and test extras install it
        raise ImportError("ArmPushProblem needs gymnasium (pip install gymnasium)") from e
    path = os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets", "pusher_v5.xml")
    with open(path) as f:
        xml = f.read()
    if OBJECT_GEOM not in xml:
        raise ValueError(f"{path}: the object's cylinder geom is not the one ArmPushProblem expects")
    xml = xml.replace(OBJECT_GEOM, OBJECT_GEOM.replace('density="0.01"', f'density="{float(object_density)}"'))
    return xml.replace("  <actuator>", '  <contact><exclude body1="world" body2="object"/></contact>\n  <actuator>', 1)


class ArmPushProblem:
    """Push the pusher's object (a 5 cm radius, 10 cm tall cylinder on x/y slides) to a
    target (the scene: ``pusher_xml``).

    The arm's seven joints follow a piecewise-linear path of joint targets through a
    PD controller, ``tau = clip(kp (q* - q) - kd dq, +-2 N m)`` (the file's torque
    limit; no gravity). The path is fixed by inverse kinematics of the wrist's
    U-shaped pusher: from the file's pose over and down behind the object
    (``start_behind``, 0.2 m, on the shoulder's side), then ``push_knots`` waypoints
    straight through it, along the line from the shoulder, to 5 cm past its centre
    (the default push carries it about 12 cm). ``theta`` (push_knots, 2) moves each push waypoint by
    ``reach * tanh(theta)`` m in the table plane, through the fixed pseudo-inverse of
    the pusher's position Jacobian at that waypoint. The loss is

        (|p - p*| / position_scale)^2 + effort_weight * mean(tanh(theta)^2)

    with ``p`` the object's final table position: within 1 cm is a loss below 1.
    """

    def __init__(self, target: tuple[float, float], dtype=jnp.float32, push_knots: int = 4,
                 reach: float = 0.06, kp: float = 10.0, kd: float = 1.0, position_scale: float = 0.01,
                 effort_weight: float = 1e-3, object_density: float = 300.0, start_behind: float = 0.2,
                 knot_s: float = 0.5, hold_s: float = 0.4, approach: bool = True, **options):
        """Args:
          target: (x m, y m) world position of the object's centre at the end.
          dtype: the model's float dtype.
          push_knots: waypoints of the push, ``knot_s`` apart.
          reach: m, the largest move of a push waypoint.
          kp, kd: N m / rad and N m s / rad, the controller's gains.
          position_scale: m, the position error the loss counts as 1.
          effort_weight: the weight of ``mean(tanh(theta)^2)``.
          object_density: kg/m^3, the object's (``pusher_xml``).
          start_behind: m, where the push starts: the pusher's bar this far behind the
            object's centre (the bar touches the object at 7 cm).
          knot_s, hold_s: s, the time between push waypoints, and the hold after the
            last. The rollout (10 ms steps) lasts 1.8 s of approach, then ``knot_s``
            per push waypoint, then ``hold_s``.
          approach: False starts the arm at rest at the push's start instead (no
            approach phase: a short problem, for tests).
          **options: ``load_mjcf`` options (``solver_tol``, ``contact``, ...).
        """
        from jaxsim.io.mjcf import load_mjcf

        self.xml = pusher_xml(object_density)
        self.model = load_mjcf(self.xml, dtype=dtype, **options)
        self.dtype, self.knots, self.reach = dtype, int(push_knots), float(reach)
        self.start_behind = float(start_behind)
        if not self.start_behind > 0.07:
            raise ValueError(f"ArmPushProblem: the push must start clear of the object (start_behind > 0.07 m), "
                             f"got {start_behind}")
        self.kp, self.kd = float(kp), float(kd)
        self.position_scale, self.effort_weight = float(position_scale), float(effort_weight)
        self.target = jnp.asarray(target, dtype)
        self._wrist, self._object = self.model.body_id("r_wrist_roll_link"), self.model.body_id("object")
        self.state0 = make_state(self.model)
        # jitted: run eagerly, the kinematics would compile each of their operations alone (seconds)
        self.object0 = np.asarray(jax.jit(forward_kinematics)(self.model, self.state0.q).body_pos_w[self._object],
                                  np.float64)
        joints, jacobians = self._waypoints()
        start = joints[2] if not approach else np.zeros(7)  # at rest behind the object, or the file's pose
        self.state0 = make_state(self.model, q=self.state0.q.at[:7].set(jnp.asarray(start, dtype)))
        t_push = 1.8 if approach else 0.0  # the push starts from the last approach waypoint
        times = [0.0] + ([1.0, 1.4, 1.8] if approach else []) + [t_push + knot_s * (k + 1) for k in range(self.knots)]
        self.horizon_s = times[-1] + hold_s
        dt = float(self.model.opt.timestep)
        self.steps = int(round(self.horizon_s / dt))
        t = (np.arange(self.steps) + 1) * dt
        # weights (steps, knots) of each knot in the piecewise-linear joint targets
        knot_times = np.asarray(times + [self.horizon_s])
        weights = np.stack([np.interp(t, knot_times, np.eye(len(knot_times))[i]) for i in range(len(knot_times))], 1)
        self._weights = jnp.asarray(weights, dtype)
        knots = [start] + (list(joints[:3]) if approach else []) + list(joints[3:]) + [joints[-1]]
        self._joints = jnp.asarray(np.stack(knots), dtype)
        self._first_push = len(knots) - 1 - self.knots  # index of the first push waypoint
        self._pinv = jnp.asarray(jacobians, dtype)  # (knots, 7, 2)

    def _pusher_residual(self, qa, point, heading):
        kin = forward_kinematics(self.model, self.state0.q.at[:7].set(qa))
        rot = kin.body_rot_w[self._wrist]
        return jnp.concatenate([kin.body_pos_w[self._wrist] - point, 0.3 * (rot[:, 0] - heading), 0.3 * rot[2, 1:2]])

    def _waypoints(self) -> tuple[np.ndarray, np.ndarray]:
        """Joint targets of the approach and push waypoints (Gauss-Newton on the
        pusher's position, its forward axis along the push and its plane level), and
        the push waypoints' (7, 2) pseudo-inverses of the pusher's table-plane
        position Jacobian."""
        lo = np.asarray(self.model.jnt_range[:7, 0]) + 1e-3
        hi = np.asarray(self.model.jnt_range[:7, 1]) - 1e-3
        obj = self.object0
        along = obj[:2] - np.asarray(SHOULDER_XY)
        along /= np.linalg.norm(along)
        heading = jnp.asarray([along[0], along[1], 0.0], self.dtype)
        z = obj[2] + 0.015  # the pusher's bar a little above the object's mid-height
        behind = obj[:2] - self.start_behind * along
        points = [np.r_[behind, z + 0.10], np.r_[behind, z + 0.05], np.r_[behind, z]]
        points += [np.r_[obj[:2] + s * along, z] for s in np.linspace(-self.start_behind, 0.05, self.knots + 1)[1:]]

        @jax.jit
        def solve(qa, point):
            def gauss_newton(qa, _):
                r = self._pusher_residual(qa, point, heading)
                J = jax.jacfwd(self._pusher_residual)(qa, point, heading)
                dq = jnp.linalg.solve(J.T @ J + 1e-3 * jnp.eye(7, dtype=qa.dtype), -J.T @ r)
                return jnp.clip(qa + dq, lo, hi), None
            return jax.lax.scan(gauss_newton, qa, None, length=60)[0]

        qa = jnp.asarray([0.9, 0.5, 0.0, -1.0, 0.0, -0.3, 0.0], self.dtype)  # arm down and forward
        joints = []
        for p in points:
            qa = solve(qa, jnp.asarray(p, self.dtype))
            joints.append(np.asarray(qa, np.float64))
        position = lambda qa: forward_kinematics(  # noqa: E731
            self.model, self.state0.q.at[:7].set(qa)).body_pos_w[self._wrist][:2]
        jacobian = jax.jit(jax.jacfwd(position))
        pinvs = [np.linalg.pinv(np.asarray(jacobian(jnp.asarray(q, self.dtype)), np.float64)) for q in joints[3:]]
        return np.stack(joints), np.stack(pinvs)

    def initial_guess(self) -> Array:
        """The straight push through the object's centre (every offset 0)."""
        return jnp.zeros((self.knots, 2), self.dtype)

    def joint_targets(self, theta: Array) -> Array:
        """(steps, 7) rad, the controller's targets along the rollout."""
        moves = jnp.einsum("kjc,kc->kj", self._pinv, self.reach * jnp.tanh(theta))
        first = self._first_push
        knots = self._joints.at[first:first + self.knots].add(moves).at[-1].add(moves[-1])
        return self._weights @ knots

    def control(self, q: Array, v: Array, target: Array) -> Array:
        """(7,) N m, the PD torques toward ``target`` at joint positions ``q`` and
        velocities ``v`` (the model's full vectors; an MJX ``qpos``/``qvel`` alike)."""
        return jnp.clip(self.kp * (target - q[:7]) - self.kd * v[:7], -TORQUE_LIMIT, TORQUE_LIMIT)

    def final_state(self, theta: Array):
        """The State after the rollout."""
        def body(state, target):
            return step(self.model, state, self.control(state.q, state.v, target)), None
        return jax.lax.scan(body, self.state0, self.joint_targets(theta))[0]

    def object_xy(self, q: Array) -> Array:
        """(2,) m, the object's table position at positions ``q`` (slides: y, then x)."""
        return jnp.asarray(self.object0[:2], q.dtype) + q[jnp.asarray([8, 7])]

    def pose_loss(self, q: Array, theta: Array) -> Array:
        """The loss of the final positions ``q`` reached with ``theta``."""
        error = jnp.sum((self.object_xy(q) - self.target) ** 2) / self.position_scale ** 2
        return error + self.effort_weight * jnp.mean(jnp.tanh(theta) ** 2)

    def loss(self, theta: Array) -> Array:
        """The scalar loss (class docstring)."""
        return self.pose_loss(self.final_state(theta).q, theta)

    def pose_metrics(self, q: Array) -> dict[str, Array]:
        """``position_cm``: the object's distance to the target at positions ``q``."""
        return {"position_cm": 100 * jnp.linalg.norm(self.object_xy(q) - self.target)}

    def metrics(self, theta: Array) -> dict[str, Array]:
        """``pose_metrics`` of the final state."""
        return self.pose_metrics(self.final_state(theta).q)

    @staticmethod
    def solved(metrics: dict) -> bool:
        """Within 1 cm of the target."""
        return float(metrics["position_cm"]) <= 1.0
