"""Joint limits as constraint rows of the contact QP.

Every hinge or slide joint with a range gets one row for the limit it is nearer to:
``v_row = s * qdot`` (s = +1 at the lower limit, -1 at the upper), impulse ``>= 0``
(it only pushes back into the range), and ``dist`` the distance to that limit
(rad or m; < 0 when past it). A row is active within ``opt.contact_margin`` of its
limit and is treated like a contact's normal row: target ``v+ >= -dist/dt`` while
inside (the limit may be reached within the step, not passed), ``v+ = -K dist`` once
past it. Ball-joint (cone) limits are not enforced.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxsim.types import JointType, Model, Topology

Array = jax.Array


class LimitRows(NamedTuple):
    J: Array  # (nl, nv) row Jacobians (zero where inactive)
    dist: Array  # (nl,) distance to the nearer limit, rad or m (negative: violated)
    active: Array  # (nl,) bool


@functools.lru_cache(maxsize=64)
def limited_joints(topo: Topology) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(joint ids, qpos addresses, dof addresses) of the limited hinge / slide joints."""
    ids = [j for j in range(topo.njnt) if topo.jnt_limited[j]
           and JointType(topo.jnt_type[j]) in (JointType.HINGE, JointType.SLIDE)]
    ids = np.asarray(ids, np.int32)
    return ids, np.asarray(topo.jnt_qposadr, np.int32)[ids], np.asarray(topo.jnt_dofadr, np.int32)[ids]


def limit_rows(model: Model, q: Array) -> LimitRows:
    ids, qadr, dadr = limited_joints(model.topo)
    lo, hi = model.jnt_range[ids, 0], model.jnt_range[ids, 1]
    x = q[qadr]
    lower = (x - lo) <= (hi - x)
    dist = jnp.where(lower, x - lo, hi - x)
    sign = jnp.where(lower, 1.0, -1.0).astype(q.dtype)
    active = dist < model.opt.contact_margin
    J = jnp.zeros((len(ids), model.nv), q.dtype).at[np.arange(len(ids)), dadr].set(sign)
    return LimitRows(jnp.where(active[:, None], J, 0.0), dist, active)
