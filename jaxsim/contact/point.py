"""Point contacts with momentum-level penetration compensation (SPEC section 2; seed
003, Wakisaka & Sugihara; reference implementation RoKi-FD ``rkfd_vert.c``).

Per active slot the contact point ``p`` is geom2's deepest point (``pos - depth/2 n``)
and ``p_ref`` its reference point on geom1's surface, stored in geom1's frame so that
it moves with geom1. The impulses ``df`` (3 per slot, contact frame, on geom2) solve

    minimize  1/2 || A df + b + K d ||^2 + 1/2 lambda || df ||^2,   df_normal >= 0

with ``d = p - p_ref`` (contact frame), i.e. the QP ``H = A^T A + lambda I``,
``g = A^T (b + K d)``. ``K`` (1/s) turns the displacement into a velocity correction
(``K dt = 1`` removes it in one step) and ``lambda`` (units of A^2, kg^-2) relaxes the
over-determined rigid problem, which makes the forces of a body resting on 4+ points
unique and chatter-free. The plain rigid ("macroscopic") variant is K = lambda = 0.

Reference points (per slot, matched to last step's slot of the same pair by feature id):
  1. new contact: where the segment from the point's previous position
     ``p_prev = p - dt v_rel`` to ``p`` crosses geom1's surface plane (the
     projection of ``p`` onto it if the point moves parallel to the plane);
  2. kept contact: last step's reference;
  3. slipping last step: the projection of ``p`` onto the plane (no tangential spring).

Friction follows the paper's continuous static/kinetic model, with static ``mu_s`` and
kinetic ``mu_k`` (the larger of the two geoms' values, MuJoCo's rule). Pass 1 is the
paper's solve (tangential impulses free, i.e. every point held in place); then per slot:
  * sticking last step (or new): it keeps sticking if ``|f_t| <= mu_s f_n``, otherwise
    it slips with friction along ``f_t`` (the paper's eq. 17);
  * slipping last step: it sticks again if ``|f_t| <= mu_k f_n``, otherwise it keeps
    slipping against its slip velocity ``v_t`` with ``w(|v_t|)``,
    ``w(x) = 1 - exp(-k_w x)`` (Yamane & Nakamura's factor, removes dither near zero
    slip; eq. 20).
The paper then overwrites ``f_t`` with the kinetic value and keeps ``f_n``. But pass 1
balanced ``f_n`` against the unbounded sticking ``f_t``: the torque of a large
tangential impulse is propped up by the front contacts, which inflates ``f_n`` up to
~80x for a box sliding at 2 m/s (it then stops early or tips over). So pass 2 solves
again with each slipping slot's impulse constrained to ``f_n (n + mu_k w u)`` (``u``
the friction direction above: a friction-skewed normal, linear in ``f_n``) and its
tangential rows dropped from the objective (its velocity is not held). Sticking slots
are unchanged; their impulse is finally kept inside ``mu_s f_n``.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxsim import math
from jaxsim.contact.space import ContactSpace, slot_info
from jaxsim.kinematics import Kinematics
from jaxsim.solver import qp
from jaxsim.types import Contacts, ContactState, Model, SolverStats

Array = jax.Array


class Previous(NamedTuple):
    """Last step's slot data, re-indexed to this step's slots (matched by feature)."""

    kept: Array  # (m,) bool
    ref_g1: Array  # (m, 3)
    slipping: Array  # (m,) bool
    impulse: Array  # (m, 3)


def match_previous(model: Model, contacts: Contacts, prev: ContactState) -> Previous:
    """For each active slot, the slot of the same pair that held the same feature last
    step (slot order within a pair may change with the depth ranking)."""
    m = contacts.active.shape[0]
    kept, ref, slip, imp = [], [], [], []
    for first, npair, nslot in slot_info(model.topo).groups:
        sl = slice(first, first + npair * nslot)
        new_f = contacts.feature[sl].reshape(npair, nslot)
        old_f = prev.feature[sl].reshape(npair, nslot)
        same = ((new_f[:, :, None] == old_f[:, None, :]) & prev.active[sl].reshape(npair, 1, nslot)
                & contacts.active[sl].reshape(npair, nslot, 1))
        same = same & (jnp.cumsum(same, -1) == 1)  # at most one match (feature ids are unique)
        w = same.astype(prev.ref_g1.dtype)
        pick = lambda x: jnp.einsum("pij,pj...->pi...", w, x.reshape((npair, nslot) + x.shape[1:]))  # noqa: E731
        kept.append(jnp.any(same, -1).reshape(-1))
        ref.append(pick(prev.ref_g1[sl]).reshape(-1, 3))
        slip.append(pick(prev.slipping[sl].astype(w.dtype)).reshape(-1) > 0.5)
        imp.append(pick(prev.impulse[sl]).reshape(-1, 3))
    if not kept:
        z = prev.ref_g1[:0]
        return Previous(jnp.zeros((m,), bool), z, jnp.zeros((m,), bool), z)
    return Previous(jnp.concatenate(kept), jnp.concatenate(ref), jnp.concatenate(slip), jnp.concatenate(imp))


def _friction(model: Model, geom1, geom2) -> tuple[Array, Array]:
    """(m,) static and kinetic coefficients per slot: the larger of the two geoms'."""
    f = model.geom_friction
    mu = jnp.maximum(f[geom1], f[geom2])
    return mu[:, 0], mu[:, 1]


def reference_points(model: Model, kin: Kinematics, contacts: Contacts, prev: Previous,
                     v_rel_w: Array, geom1) -> tuple[Array, Array]:
    """(m, 3) contact points ``p`` (geom2's deepest) and references ``p_ref``, world."""
    dt = model.opt.timestep
    n, depth = contacts.normal_w, contacts.depth[:, None]
    p = contacts.pos_w - 0.5 * depth * n
    on_plane = p + depth * n  # projection of p onto geom1's surface plane
    p_prev = p - dt * v_rel_w
    num = jnp.sum(n * (on_plane - p_prev), -1)
    den = jnp.sum(n * (p - p_prev), -1)
    ok = den < -1e-9 * jnp.maximum(1.0, jnp.abs(num))  # moving into geom1
    s = jnp.clip(num / jnp.where(ok, den, 1.0), 0.0, 1.0)[:, None]
    entry = jnp.where(ok[:, None], p_prev + s * (p - p_prev), on_plane)
    g1_pos, g1_rot = kin.geom_pos_w[geom1], kin.geom_rot_w[geom1]
    kept_ref = g1_pos + jnp.einsum("mij,mj->mi", g1_rot, prev.ref_g1)
    ref = jnp.where(prev.kept[:, None], jnp.where(prev.slipping[:, None], on_plane, kept_ref), entry)
    return p, ref


def slip_decision(model: Model, df: Array, v_t: Array, sticking_before: Array, geom1, geom2):
    """Which slots slip, and the kinetic impulse per unit normal impulse of each.

    Args:
      df: (m, 3) impulses of the first solve (normal, tangent 1, tangent 2).
      v_t: (m, 2) tangential slip velocity at the start of the step, m/s.
      sticking_before: (m,) bool.

    Returns:
      (slipping (m,) bool, skew (m, 2): f_t = skew f_n for slipping slots).
    """
    mu_s, mu_k = _friction(model, geom1, geom2)
    fn, ft = df[:, 0], df[:, 1:]
    ft_norm = math.safe_norm(ft)
    slipping = ft_norm > jnp.where(sticking_before, mu_s, mu_k) * fn
    unit_ft = ft / jnp.maximum(ft_norm, 1e-30)[:, None]
    vt_norm = math.safe_norm(v_t)
    w = 1.0 - jnp.exp(-model.opt.slip_gain * vt_norm)
    along_slip = -(w / jnp.maximum(vt_norm, 1e-30))[:, None] * v_t
    return slipping, mu_k[:, None] * jnp.where(sticking_before[:, None], unit_ft, along_slip)


def _block_diag(blocks: Array) -> Array:
    """(m*k, m*k) block-diagonal matrix of (m, k, k) blocks."""
    m, k = blocks.shape[0], blocks.shape[1]
    eye = jnp.eye(m, dtype=blocks.dtype)
    return jnp.einsum("ij,iab->iajb", eye, blocks).reshape(m * k, m * k)


def solve(model: Model, kin: Kinematics, contacts: Contacts, prev: Previous,
          space: ContactSpace, v: Array, geom1: Array, geom2: Array):
    """One step of the point-contact model on m slots (all of them, or a selection).

    Args:
      contacts: the m slots' contacts.
      prev: last step's data matched to them (:func:`match_previous`).
      space: their contact-space operators.
      v: (nv,) generalized velocity at the start of the step.
      geom1, geom2: (m,) their geom ids.

    Returns:
      (impulses (m, 3) on geom2 in the contact frames, new ContactState, SolverStats).
    """
    opt = model.opt
    m = contacts.active.shape[0]
    dtype = space.b.dtype
    active = contacts.active
    v_rel = (space.J @ v).reshape(m, 3)  # contact frame, start of step
    v_rel_w = jnp.einsum("mij,mi->mj", contacts.frame_w, v_rel)
    p, ref = reference_points(model, kin, contacts, prev, v_rel_w, geom1)
    d = jnp.einsum("mij,mj->mi", contacts.frame_w, p - ref)
    d = jnp.where(active[:, None], d, 0.0).reshape(-1)

    rigid = opt.contact == "rigid"
    stiffness = 0.0 if rigid else opt.contact_stiffness
    relax = 0.0 if rigid else opt.contact_relaxation
    c = space.b + stiffness * d
    normal_row = jnp.tile(jnp.asarray([True, False, False]), m)
    lower = jnp.where(normal_row, 0.0, -jnp.inf).astype(dtype)
    upper = jnp.full((3 * m,), jnp.inf, dtype)
    no_cone = jnp.zeros((0,), dtype)

    def solve_qp(H, g, lo, x0):
        return qp.solve(qp.QP(H, g, lo, jnp.where(jnp.isfinite(lo) & ~normal_row, lo, upper), no_cone),
                        x0, opt.solver_tol, max_iter=opt.solver_iterations, block=3, adjoint=opt.adjoint)

    # pass 1 (the paper's solve): every row, tangential impulses free
    A = space.A
    warm = jnp.where((prev.kept & active)[:, None], prev.impulse, 0.0).reshape(-1)
    df1, stats1 = solve_qp(A @ A + relax * jnp.eye(3 * m, dtype=dtype), A @ c, lower, warm)
    df1 = jnp.where(active[:, None], df1.reshape(m, 3), 0.0)

    # friction decision (module docstring) and each slipping slot's friction direction
    sticking_before = ~(prev.kept & prev.slipping)
    slipping, skew = slip_decision(model, df1, v_rel[:, 1:], sticking_before, geom1, geom2)
    slipping = slipping & active

    # pass 2: slipping impulses are f_n (n + skew) with skew = mu_k w u; their
    # tangential rows leave the objective (their velocity is not held)
    T = jnp.where(slipping[:, None, None],
                  jnp.stack([jnp.concatenate([jnp.ones((m, 1), dtype), skew], -1),
                             jnp.zeros((m, 3), dtype), jnp.zeros((m, 3), dtype)], -1),
                  jnp.eye(3, dtype=dtype))  # (m, 3, 3): df_j = T_j x_j
    AT = jnp.einsum("iajc,jcb->iajb", A.reshape(m, 3, m, 3), T).reshape(3 * m, 3 * m)
    rows = jnp.where(slipping[:, None], jnp.asarray([1.0, 0.0, 0.0], dtype), 1.0).reshape(-1)
    TtT = jnp.einsum("jca,jcb->jab", T, T)
    H2 = AT.T @ (rows[:, None] * AT) + relax * _block_diag(TtT)
    g2 = AT.T @ (rows * c)
    pinned = jnp.where(slipping[:, None], jnp.asarray([-jnp.inf, 0.0, 0.0], dtype), -jnp.inf).reshape(-1)
    lower2 = jnp.where(normal_row, 0.0, pinned)
    x0 = jnp.where(slipping[:, None], df1 * jnp.asarray([1.0, 0.0, 0.0], dtype), df1).reshape(-1)
    x2, stats2 = solve_qp(H2, g2, lower2, x0)
    df = jnp.einsum("jab,jb->ja", T, x2.reshape(m, 3))
    df = jnp.where(active[:, None], df, 0.0)
    # sticking impulses stay inside the static cone
    mu_s, _ = _friction(model, geom1, geom2)
    ft_norm, cap = math.safe_norm(df[:, 1:]), mu_s * df[:, 0]
    shrink = jnp.where(ft_norm > cap, cap / jnp.maximum(ft_norm, 1e-30), 1.0)
    df = jnp.concatenate([df[:, :1], df[:, 1:] * shrink[:, None]], -1)
    stats = qp.Stats(stats1.iterations + stats2.iterations, jnp.maximum(stats1.residual, stats2.residual))

    g1_pos, g1_rot = kin.geom_pos_w[geom1], kin.geom_rot_w[geom1]
    ref_g1 = jnp.einsum("mji,mj->mi", g1_rot, ref - g1_pos)
    force_w = jnp.einsum("mij,mi->mj", contacts.frame_w, df) / opt.timestep
    state = ContactState(active=active, feature=contacts.feature,
                         ref_g1=jnp.where(active[:, None], ref_g1, 0.0), slipping=slipping,
                         impulse=df, force_w=force_w)
    return df, state, SolverStats(stats.iterations, stats.residual)
