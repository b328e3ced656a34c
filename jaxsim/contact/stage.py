"""The constraint stage, the same whatever the contact model (``contact/__init__.py``):

    collision -> match last step's slots -> equalities (solved out) -> generic rows
      -> penalty pairs' forces -> constraint pairs' contact space -> the selected
      model's solve -> ContactState

It returns the velocity change of the step's contact and constraint impulses; ``step``
adds it to the contact-free velocity.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxsim import math
from jaxsim.collision.driver import bound_radius, collide
from jaxsim.collision.pairs import pair_plan
from jaxsim.contact import equality, materials, penalty_forces
from jaxsim.contact.interface import ContactModel, Problem, SlotData, get, zero_stats
from jaxsim.contact.rows import Rows, constraint_rows, row_layout
from jaxsim.contact.space import contact_jacobian, contact_space, slot_info
from jaxsim.kinematics import Kinematics, body_velocities
from jaxsim.types import ContactMode, Contacts, ContactState, Model, SolverStats

Array = jax.Array


class StageResult(NamedTuple):
    dv: Array  # (nv,) velocity change of all contact and constraint impulses
    contact: ContactState
    carry: Any
    stats: SolverStats
    overflow: Array  # () int32, active contacts left out this step
    dv_position: Array | None = None  # (nv,) velocity change for q+ only (Solution.position_impulse)


def num_slots(model: Model) -> int:
    return pair_plan(model.topo).ncon if model.opt.constraint else 0


def has_constraints(model: Model) -> bool:
    """Whether a step has anything for the stage to do (static)."""
    live = np.any(slot_info(model.topo).mode != ContactMode.NONE) if num_slots(model) else False
    return bool(model.opt.constraint and (live or row_layout(model.topo).n > 0 or model.topo.neq > 0))


def solve_size(model: Model) -> int:
    """The number of unknowns of the step's contact solve (static): the contact model's
    rows per constraint slot times the slots it solves (``opt.max_contacts`` when
    set), plus the generic rows (limits, friction loss, implicit PD); 0 without a
    stage."""
    if not has_constraints(model):
        return 0
    con = int(np.sum(slot_info(model.topo).mode == ContactMode.CONSTRAINT)) if num_slots(model) else 0
    k = model.opt.max_contacts
    solved = k if 0 < k < con else con
    return contact_model(model).slot_rows * solved + row_layout(model.topo).n


def contact_model(model: Model) -> ContactModel:
    """The selected contact model, checked against the slot layout the Model was built
    with (static: a model swapped into ``opt.contact`` after the build may need
    another layout)."""
    cmodel = get(model.opt.contact)
    if cmodel.collision != model.topo.pair_geometry:
        raise ValueError(f"contact model {cmodel.name!r} needs {cmodel.collision!r} contact slots, but the "
                         f"Model was built with {model.topo.pair_geometry!r} slots: build it with "
                         f"contact={cmodel.name!r} instead of replacing opt.contact")
    return cmodel


def initial_contact(model: Model) -> tuple[ContactState, Any]:
    """The ContactState and the model's carry before the first step (no contact)."""
    n, dtype, cmodel = num_slots(model), model.dtype, contact_model(model)
    z3 = jnp.zeros((n, 3), dtype)
    state = ContactState(active=jnp.zeros((n,), bool), feature=jnp.zeros((n,), jnp.int32), pos_w=z3,
                         normal_w=z3, depth=jnp.zeros((n,), dtype), impulse=jnp.zeros((n, cmodel.slot_rows), dtype),
                         force_w=z3, torque1_w=z3, torque2_w=z3, cop_w=z3)
    return state, cmodel.init(model, n)


def speculative_margin(model: Model, kin: Kinematics, v: Array) -> Array:
    """(ngeom,) m: how far each geom can travel in one step at the velocity ``v``
    (a bound: speed of its origin plus angular speed times its bounding radius), plus
    half of ``opt.contact_margin``. Pairs closer than the sum of their two margins get
    speculative contacts, so a fast fall is stopped at the surface instead of sinking
    a step's travel into it (which the penetration correction would turn into a
    bounce: a gymnasium ant at dt = 10 ms jumped 2 m)."""
    body_vel, _ = body_velocities(model, kin, v)
    body = np.asarray(model.topo.geom_body, np.int32)  # int even with no geom
    omega, v_ref = body_vel[body, :3], body_vel[body, 3:]
    v_origin = v_ref + jnp.cross(omega, kin.geom_pos_w - kin.body_ref_w[body])
    radius = bound_radius(model)
    radius = jnp.where(jnp.isfinite(radius), radius, 0.0)
    speed = math.safe_norm(v_origin) + math.safe_norm(omega) * radius
    return 0.5 * model.opt.contact_margin + model.opt.timestep * speed


def match_previous(model: Model, contacts: Contacts, prev: ContactState, carry: Any):
    """For each active slot, the slot of the same pair that held the same feature last
    step (slot order within a pair may change with the depth ranking).

    Returns:
      (kept (n,) bool, last impulse (n, 3), the carry re-indexed to this step's slots).
    """
    tree = (prev.impulse, carry)
    parts_kept, parts = [], []
    for first, npair, nslot in slot_info(model.topo).groups:
        sl = slice(first, first + npair * nslot)
        new_f = contacts.feature[sl].reshape(npair, nslot)
        old_f = prev.feature[sl].reshape(npair, nslot)
        same = ((new_f[:, :, None] == old_f[:, None, :]) & prev.active[sl].reshape(npair, 1, nslot)
                & contacts.active[sl].reshape(npair, nslot, 1))
        kept = jnp.any(same, -1)
        src = jnp.argmax(same, -1)  # (npair, nslot): last step's slot in the pair, its first match

        def pick(x, kept=kept, src=src, sl=sl, npair=npair, nslot=nslot):
            # a gather within each pair: the equivalent one-hot product and sum lowers to a
            # library reduction on the CPU that costs ten times as much under vmap
            x = x[sl].reshape((npair, nslot) + x.shape[1:])
            tail = (1,) * (x.ndim - 2)
            out = jnp.take_along_axis(x, src.reshape(src.shape + tail), 1)
            out = jnp.where(kept.reshape(kept.shape + tail), out, jnp.zeros((), x.dtype))
            return out.reshape((npair * nslot,) + x.shape[2:])

        parts_kept.append(kept.reshape(-1))
        parts.append(jax.tree.map(pick, tree))
    if not parts:
        return jnp.zeros((0,), bool), prev.impulse, carry
    impulse, carry = jax.tree.map(lambda *xs: jnp.concatenate(xs), *parts)
    return jnp.concatenate(parts_kept), impulse, carry


def _static_index(idx: np.ndarray):
    """A contiguous static slot index as a slice: slicing instead of a gather or a
    scatter (measurable at batch 1 on small scenes)."""
    if idx.size and np.all(np.diff(idx) == 1):
        return slice(int(idx[0]), int(idx[-1]) + 1)
    return idx


def _take(contacts: Contacts, idx) -> Contacts:
    per_slot = lambda x: x[idx]  # noqa: E731
    return contacts.replace(active=per_slot(contacts.active), pos_w=per_slot(contacts.pos_w),
                            normal_w=per_slot(contacts.normal_w), depth=per_slot(contacts.depth),
                            frame_w=per_slot(contacts.frame_w), geom1=per_slot(contacts.geom1),
                            geom2=per_slot(contacts.geom2), feature=per_slot(contacts.feature),
                            volume=jax.tree.map(per_slot, contacts.volume))


def _slot_data(model: Model, idx) -> SlotData:
    info = slot_info(model.topo)
    at = lambda a: jnp.asarray(a)[idx]  # noqa: E731
    pair = at(info.pair)
    params = materials.pair_params(model, get(model.opt.contact).friction_blend)
    return SlotData(at(info.geom1), at(info.geom2), at(info.body1), at(info.body2),
                    params.friction[pair], params.restitution[pair],
                    params.penalty_stiffness[pair], params.penalty_damping[pair])


def _problem(model, kin, contacts, idx, kept, prev_impulse, rows, factor, v, v_free, slot_rows, eqs) -> Problem:
    sub, slots = _take(contacts, idx), _slot_data(model, idx)
    jac = contact_jacobian(model, kin, sub, slots.body1, slots.body2, slot_rows == 6).reshape(-1, model.nv)
    space = contact_space(jnp.concatenate([jac, rows.J]), factor, v_free, eqs)
    keep = kept[idx] & sub.active
    prev = jnp.where(keep[:, None], prev_impulse[idx, :slot_rows], 0.0)
    return Problem(kin, sub, slots, keep, prev, rows, space, v)


def _no_rows(rows: Rows) -> Rows:
    nv, dtype = rows.J.shape[1], rows.J.dtype
    z = jnp.zeros((0,), dtype)
    return Rows(jnp.zeros((0, nv), dtype), z, jnp.zeros((0,), bool), z, z)


def constraint_stage(model: Model, kin: Kinematics, state, factor, v_free: Array,
                     ctrl: Array | None = None) -> StageResult:
    """One step's contact and constraint impulses at the configuration of ``kin``.

    Args:
      state: the State at the step's start (``q``, ``v``, ``contact``, ``contact_carry``).
      factor: the Cholesky factor of the mass matrix (``jaxsim.linalg.BlockCholesky``).
      v_free: (nv,) the velocity after the step without contact or constraint impulses.
      ctrl: (nu,) the step's controls (default the state's), for implicit-PD rows.

    With ``opt.max_contacts = K`` (0 < K < number of constraint slots) only the K
    deepest active constraint slots enter the solve (a static-size selection by
    ``top_k``); active slots beyond K are counted as overflow.
    """
    info, opt, dtype = slot_info(model.topo), model.opt, v_free.dtype
    cmodel = contact_model(model)
    nrow = cmodel.slot_rows
    contacts = collide(model, kin, speculative_margin(model, kin, v_free))
    kept, prev_impulse, carry = match_previous(model, contacts, state.contact, state.contact_carry)
    eqs = None
    dv = jnp.zeros_like(v_free)
    if model.topo.neq:
        eqs = equality.eliminate(model, kin, state.q, v_free, factor)
        dv, v_free = eqs.dv, v_free + eqs.dv
    rows = constraint_rows(model, state.q, v_free, factor, state.act, state.ctrl if ctrl is None else ctrl)
    n = contacts.active.shape[0]
    impulse = jnp.zeros((n, nrow), dtype)
    handled = jnp.zeros((n,), bool)
    overflow = contacts.overflow

    pen = np.flatnonzero(info.mode == ContactMode.PENALTY)
    if pen.size:
        pen = _static_index(pen)  # spring-dampers act as smooth forces: the solve below sees their effect
        problem = _problem(model, kin, contacts, pen, kept, prev_impulse, _no_rows(rows), factor, state.v,
                           v_free, 3, eqs)
        df, _ = penalty_forces.slot_impulses(model, problem)
        dv_pen = problem.space.Minv_JT @ df.reshape(-1)
        dv, v_free = dv + dv_pen, v_free + dv_pen
        impulse, handled = impulse.at[pen, :3].set(df), handled.at[pen].set(problem.contacts.active)

    con = np.flatnonzero(info.mode == ContactMode.CONSTRAINT)
    k = opt.max_contacts
    if 0 < k < con.size:
        _, pick = jax.lax.top_k(jnp.where(contacts.active[con], contacts.depth[con], -jnp.inf), k)
        idx = jnp.asarray(con)[pick]
        overflow = overflow + (jnp.sum(contacts.active[con]) - jnp.sum(contacts.active[idx])).astype(jnp.int32)
    else:
        idx = _static_index(con)
    stats, dv_position = zero_stats(dtype), None
    if con.size or rows.dist.shape[0]:
        problem = _problem(model, kin, contacts, idx, kept, prev_impulse, rows, factor, state.v, v_free, nrow, eqs)
        sol = cmodel.solve(model, problem, jax.tree.map(lambda x: x[idx], carry))
        dv = dv + problem.space.Minv_JT @ sol.impulse
        m = problem.contacts.active.shape[0]
        impulse = impulse.at[idx].set(sol.impulse[:nrow * m].reshape(m, nrow))
        handled = handled.at[idx].set(problem.contacts.active)
        carry = jax.tree.map(lambda full, part: jnp.zeros_like(full).at[idx].set(part), carry, sol.carry)
        stats = sol.stats
        if sol.position_impulse is not None:
            dv_position = problem.space.Minv_JT @ sol.position_impulse
    return StageResult(dv, _contact_state(model, kin, contacts, handled, impulse), carry, stats,
                       overflow.astype(jnp.int32), dv_position)


def _contact_state(model: Model, kin: Kinematics, contacts: Contacts, active: Array,
                   impulse: Array) -> ContactState:
    """The per-slot record of what was applied (forces and torques for the query)."""
    info = slot_info(model.topo)
    on = active[:, None]
    world = lambda x: jnp.where(on, jnp.einsum("mij,mi->mj", contacts.frame_w, x), 0.0) / model.opt.timestep  # noqa: E731
    force = world(impulse[:, :3])
    couple = world(impulse[:, 3:]) if impulse.shape[1] == 6 else jnp.zeros_like(force)  # a wrench's own torque
    pos = jnp.where(on, contacts.pos_w, 0.0)
    arm = lambda body: pos - kin.body_com_w[np.asarray(body)]  # noqa: E731
    return ContactState(active=active, feature=contacts.feature, pos_w=pos,
                        normal_w=jnp.where(on, contacts.normal_w, 0.0),
                        depth=jnp.where(active, contacts.depth, 0.0), impulse=jnp.where(on, impulse, 0.0),
                        force_w=force, torque1_w=jnp.where(on, jnp.cross(arm(info.body1), -force) - couple, 0.0),
                        torque2_w=jnp.where(on, jnp.cross(arm(info.body2), force) + couple, 0.0),
                        cop_w=_centre_of_pressure(pos, contacts.normal_w, force, couple, on))


def _centre_of_pressure(pos: Array, normal: Array, force: Array, couple: Array, on: Array) -> Array:
    """Where force plus couple act as one force in the slot's plane: ``pos + n x tau /
    f_n`` (the couple's torsion about n is left out); ``pos`` without a normal force."""
    fn = jnp.sum(force * normal, -1, keepdims=True)
    ok = fn > 1e-12
    offset = jnp.cross(normal, couple) / jnp.where(ok, fn, 1.0)
    return jnp.where(on, pos + jnp.where(ok, offset, 0.0), 0.0)
