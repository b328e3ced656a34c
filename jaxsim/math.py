"""Rotations, quaternions and spatial (6-D) algebra.

Conventions used everywhere in jaxsim (written once, here):

* SI units: metres, kilograms, seconds, radians, newtons.
* Quaternions are ``(w, x, y, z)`` and rotate vectors from a child frame to its parent:
  ``v_parent = quat_rotate(quat_parent_child, v_child)``.
* Rotation matrices are named ``rot_ab``: they map coordinates in frame ``b`` to frame
  ``a`` (``v_a = rot_ab @ v_b``). ``_w`` is the world frame, ``_b`` a body frame.
* Spatial vectors are ``(angular, linear)``, as in MuJoCo. Motion vectors (twists) are
  ``[omega; v_o]`` with ``v_o`` the velocity of the body-fixed point at the reference
  point ``o``; force vectors (wrenches) are ``[torque_o; force]``.
* Dynamics works in world orientation with one reference point per kinematic tree (the
  tree root body's origin): this keeps float32 accurate far from the world origin.
* Angular velocities of ball and free joints are expressed in the child body frame
  (MuJoCo's convention), and their quaternions integrate by right multiplication.

Every function is pure and works under ``jit``, ``vmap`` and ``grad``; the ``safe_*``
helpers keep gradients finite at zero vectors. The ``*_np`` functions at the end are
their NumPy (float64) counterparts for build-time code (the builder and loaders).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

Array = jnp.ndarray


# longest axis written out term by term instead of reduced over: ``small_dot``'s,
# ``linalg.block_apply``'s shared axis, the face planes of ``convex._within_front_planes``
SHORT_AXIS = 8


def small_dot(x: Array, y: Array) -> Array:
    """(...) dot products along the last axis of broadcastable ``x`` and ``y``.

    A short axis (3 for points and normals, up to ``SHORT_AXIS``) is written out term
    by term: under ``vmap``, ``jnp.sum(x * y, -1)`` is a reduction over a tiny
    innermost axis, which XLA's CPU backend hands to a library kernel far slower than
    the few multiplications, while term by term it stays an element-wise loop that
    fuses with its neighbours."""
    k = max(x.shape[-1], y.shape[-1])
    if not 0 < k <= SHORT_AXIS:
        return jnp.sum(x * y, -1)
    out = x[..., 0] * y[..., 0]
    for i in range(1, k):
        out = out + x[..., i] * y[..., i]
    return out


def safe_norm(v: Array, axis: int = -1) -> Array:
    """Euclidean norm whose gradient is zero (not NaN) at the zero vector."""
    sq = small_dot(v, v) if axis in (-1, v.ndim - 1) else jnp.sum(v * v, axis=axis)
    positive = sq > 0
    return jnp.where(positive, jnp.sqrt(jnp.where(positive, sq, 1.0)), 0.0)


def capped_scale(size: Array, cap: Array) -> Array:
    """``min(1, cap / size)``: the factor that shrinks a vector of norm ``size`` (>= 0) to
    at most ``cap`` (> 0, possibly inf), with finite derivatives everywhere. Written as
    ``min(1, cap / max(size, tiny))`` its forward-mode derivative is NaN where the cap
    does not act: the division's derivative multiplies a zero tangent by ``cap /
    tiny**2``, which overflows (or is ``inf`` for an infinite cap), and ``0 * inf`` is
    NaN; here the division only runs where ``size > cap``."""
    over = size > cap
    return jnp.where(over, cap / jnp.where(over, size, 1.0), 1.0)


def normalize(v: Array, axis: int = -1) -> Array:
    """``v / |v|``; the zero vector maps to the zero vector with finite gradients."""
    n = safe_norm(v, axis=axis)
    return v / jnp.expand_dims(jnp.where(n > 0, n, 1.0), axis)


def skew(v: Array) -> Array:
    """Cross-product matrix: ``skew(a) @ b == cross(a, b)``. (..., 3) -> (..., 3, 3)."""
    x, y, z = v[..., 0], v[..., 1], v[..., 2]
    zero = jnp.zeros_like(x)
    return jnp.stack(
        [
            jnp.stack([zero, -z, y], -1),
            jnp.stack([z, zero, -x], -1),
            jnp.stack([-y, x, zero], -1),
        ],
        -2,
    )


# ---------------------------------------------------------------------------- quaternions


def quat_mul(a: Array, b: Array) -> Array:
    """Hamilton product ``a * b`` of (..., 4) quaternions."""
    aw, ax, ay, az = a[..., 0], a[..., 1], a[..., 2], a[..., 3]
    bw, bx, by, bz = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
    return jnp.stack(
        [
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ],
        -1,
    )


def quat_conj(q: Array) -> Array:
    """Conjugate (the inverse of a unit quaternion)."""
    return q * jnp.array([1.0, -1.0, -1.0, -1.0], dtype=q.dtype)


def quat_rotate(q: Array, v: Array) -> Array:
    """Rotate (..., 3) vectors by unit quaternions (..., 4)."""
    w = q[..., :1]
    u = q[..., 1:]
    t = 2.0 * jnp.cross(u, v)
    return v + w * t + jnp.cross(u, t)


def quat_yaw(q: Array) -> Array:
    """Yaw (rad) about the z axis of (..., 4) unit quaternions (w, x, y, z): the
    heading of the rotated x axis in the xy plane."""
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    return jnp.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))


def quat_to_mat(q: Array) -> Array:
    """Rotation matrix (..., 3, 3) of unit quaternions (..., 4)."""
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    return jnp.stack(
        [
            jnp.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
            jnp.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
            jnp.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
        ],
        -2,
    )


def axis_angle_to_quat(axis: Array, angle: Array) -> Array:
    """Quaternion of a rotation by ``angle`` (rad) about a unit ``axis``."""
    half = 0.5 * angle
    return jnp.concatenate([jnp.cos(half)[..., None], jnp.sin(half)[..., None] * axis], -1)


def _sin_over_x(x: Array) -> Array:
    """sin(x)/x, smooth and with finite derivatives at 0."""
    small = jnp.abs(x) < 1e-4
    xs = jnp.where(small, 1.0, x)
    return jnp.where(small, 1.0 - x * x / 6.0, jnp.sin(xs) / xs)


def rotvec_to_quat(rotvec: Array) -> Array:
    """Quaternion of the rotation vector ``theta * axis``; smooth at zero."""
    theta = safe_norm(rotvec)
    half = 0.5 * theta
    return jnp.concatenate(
        [jnp.cos(half)[..., None], (0.5 * _sin_over_x(half))[..., None] * rotvec], -1
    )


def quat_integrate(q: Array, omega_b: Array, dt: Array) -> Array:
    """Advance a unit quaternion by a body-frame angular velocity over ``dt`` seconds."""
    return normalize(quat_mul(q, rotvec_to_quat(omega_b * dt)))


def quat_to_rotvec(q: Array) -> Array:
    """Rotation vector (axis * angle, angle in [-pi, pi]) of a unit quaternion."""
    q = jnp.where(q[..., :1] < 0, -q, q)  # shortest rotation
    s = safe_norm(q[..., 1:])
    angle = 2.0 * jnp.arctan2(s, q[..., 0])
    # angle / s -> 2 / w as s -> 0
    scale = jnp.where(s > 1e-8, angle / jnp.where(s > 1e-8, s, 1.0), 2.0 / q[..., 0])
    return scale[..., None] * q[..., 1:]


def quat_diff_rotvec(qa: Array, qb: Array) -> Array:
    """Rotation vector taking ``qb`` to ``qa``, in ``qb``'s frame (MuJoCo's subQuat)."""
    return quat_to_rotvec(quat_mul(quat_conj(qb), qa))


# ------------------------------------------------------------------- spatial algebra


def motion_cross(v: Array, m: Array) -> Array:
    """Spatial motion cross product ``v x m`` of (..., 6) motion vectors."""
    w, u = v[..., :3], v[..., 3:]
    mw, mu = m[..., :3], m[..., 3:]
    return jnp.concatenate([jnp.cross(w, mw), jnp.cross(w, mu) + jnp.cross(u, mw)], -1)


def force_cross(v: Array, f: Array) -> Array:
    """Spatial force cross product ``v x* f`` of a motion vector and a force vector."""
    w, u = v[..., :3], v[..., 3:]
    fn, ff = f[..., :3], f[..., 3:]
    return jnp.concatenate([jnp.cross(w, fn) + jnp.cross(u, ff), jnp.cross(w, ff)], -1)


def inertia_compact(mass: Array, com: Array, inertia_com: Array) -> Array:
    """Compact spatial inertia about a reference point: (..., 13) =
    ``[mass, mass * com (3), rotational inertia about the point (3x3, row-major)]``.

    Composite inertias are sums of these vectors, and ``inertia_apply`` multiplies by a
    motion vector with two cross products instead of a 6x6 product.
    """
    c = skew(com)
    rot = inertia_com - mass[..., None, None] * (c @ c)
    return jnp.concatenate([mass[..., None], mass[..., None] * com,
                            rot.reshape(rot.shape[:-2] + (9,))], -1)


def inertia_apply(inertia: Array, motion: Array) -> Array:
    """Momentum ``I v`` (force vector) of a compact inertia (..., 13) and a motion (..., 6)."""
    m, h = inertia[..., 0:1], inertia[..., 1:4]
    rot = inertia[..., 4:13].reshape(inertia.shape[:-1] + (3, 3))
    w, u = motion[..., :3], motion[..., 3:]
    return jnp.concatenate([jnp.einsum("...ij,...j->...i", rot, w) + jnp.cross(h, u),
                            m * u - jnp.cross(h, w)], -1)


def inertia_matrix(inertia: Array) -> Array:
    """The (..., 6, 6) matrix of a compact inertia."""
    m, h = inertia[..., 0], inertia[..., 1:4]
    rot = inertia[..., 4:13].reshape(inertia.shape[:-1] + (3, 3))
    hx = skew(h)
    eye = jnp.eye(3, dtype=inertia.dtype)
    top = jnp.concatenate([rot, hx], -1)
    bottom = jnp.concatenate([-hx, m[..., None, None] * eye], -1)
    return jnp.concatenate([top, bottom], -2)


def transform_point_motion(motion: Array, point: Array) -> Array:
    """Linear velocity of ``point`` (relative to the motion's reference point)."""
    return motion[..., 3:] + jnp.cross(motion[..., :3], point)


# ------------------------------------------------------------- NumPy, at build time


def quat_to_mat_np(q: np.ndarray) -> np.ndarray:
    """Rotation matrix of a unit (w, x, y, z) quaternion, in NumPy (``quat_to_mat``)."""
    w, x, y, z = q
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def mat_to_quat_np(r: np.ndarray) -> np.ndarray:
    """Unit (w, x, y, z) quaternion of a rotation matrix, in NumPy."""
    tr = np.trace(r)
    if tr > 0:
        s = 2.0 * np.sqrt(1.0 + tr)
        q = np.array([0.25 * s, (r[2, 1] - r[1, 2]) / s, (r[0, 2] - r[2, 0]) / s, (r[1, 0] - r[0, 1]) / s])
    else:
        i = int(np.argmax(np.diag(r)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * np.sqrt(1.0 + r[i, i] - r[j, j] - r[k, k])
        q = np.empty(4)
        q[0] = (r[k, j] - r[j, k]) / s
        q[1 + i] = 0.25 * s
        q[1 + j] = (r[j, i] + r[i, j]) / s
        q[1 + k] = (r[k, i] + r[i, k]) / s
    return q / np.linalg.norm(q)
