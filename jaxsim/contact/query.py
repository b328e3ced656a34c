"""Contact-force queries: what the last step applied, read from the
State's per-slot ``ContactState`` (no re-solve), whatever the contact model or mode.

A slot's force is the mean over the step (impulse / dt) acting at the contact point of
the step's start; torques are about the centres of mass of the two bodies at the
step's start. Pure functions of ``(model, state)``: jit, vmap and grad work.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxsim.contact.space import slot_info
from jaxsim.parallel import accepts_explicit_axes
from jaxsim.precision import full_precision
from jaxsim.types import Model, State

Array = jax.Array


class ContactForces(NamedTuple):
    """Per contact slot (ncon,), world frame; zero where ``active`` is False."""

    active: Array  # (ncon,) bool
    body1: Array  # (ncon,) int32 body of geom1
    body2: Array  # (ncon,) int32 body of geom2
    pos_w: Array  # (ncon, 3) m, contact point
    normal_w: Array  # (ncon, 3) unit normal from geom1 into geom2
    force1_w: Array  # (ncon, 3) N on body1
    torque1_w: Array  # (ncon, 3) N m on body1 about its centre of mass
    force2_w: Array  # (ncon, 3) N on body2
    torque2_w: Array  # (ncon, 3) N m on body2 about its centre of mass
    cop_w: Array  # (ncon, 3) m, centre of pressure (the contact point, or a wrench slot's)


@accepts_explicit_axes
@full_precision
def contact_forces(model: Model, state: State) -> ContactForces:
    """Every slot's contact force and torque on its two bodies in the last step."""
    info, c = slot_info(model.topo), state.contact
    n = c.active.shape[-1]
    body1 = jnp.asarray(info.body1[:n], jnp.int32)
    body2 = jnp.asarray(info.body2[:n], jnp.int32)
    return ContactForces(c.active, body1, body2, c.pos_w, c.normal_w, -c.force_w, c.torque1_w,
                         c.force_w, c.torque2_w, c.cop_w)


@accepts_explicit_axes
@full_precision
def body_contact_wrench(model: Model, state: State, body: int | str) -> tuple[Array, Array]:
    """Total contact force (3,) N and torque (3,) N m about its centre of mass on one
    body (an id or a name), world frame, in the last step."""
    b = model.body_id(body) if isinstance(body, str) else int(body)
    if not 0 <= b < model.nbody:
        raise ValueError(f"body_contact_wrench: body id {b} out of range (nbody = {model.nbody})")
    info, c = slot_info(model.topo), state.contact
    n = c.active.shape[-1]
    on1 = jnp.asarray(np.asarray(info.body1[:n]) == b)[:, None]
    on2 = jnp.asarray(np.asarray(info.body2[:n]) == b)[:, None]
    force = jnp.sum(jnp.where(on2, c.force_w, 0.0) - jnp.where(on1, c.force_w, 0.0), 0)
    torque = jnp.sum(jnp.where(on2, c.torque2_w, 0.0) + jnp.where(on1, c.torque1_w, 0.0), 0)
    return force, torque
