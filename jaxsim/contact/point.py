"""Point contacts with momentum-level penetration compensation (SPEC section 2; seed
003, Wakisaka & Sugihara; reference implementation RoKi-FD ``rkfd_vert.c``).

Per active slot the contact point ``p`` is geom2's deepest point (``pos - depth/2 n``)
and ``p_ref`` its reference point on geom1's surface, stored in geom1's frame so that
it moves with geom1. The impulses ``df`` (3 per slot, contact frame, on geom2) solve

    minimize  1/2 || A df + b + K d ||^2 + 1/2 lambda || df ||^2,   df_normal >= 0

with ``d = p - p_ref`` (contact frame), i.e. the QP ``H = A^T A + lambda I``,
``g = A^T (b + K d)``. ``K`` (1/s) turns the displacement into a velocity correction
(``K dt = 1`` removes it in one step; K is capped at 1/dt, beyond which it would
over-correct) and ``lambda`` (dimensionless: it is scaled by ``relaxation_scale``)
relaxes the over-determined rigid problem, which makes the forces of a body resting on 4+ points unique and
chatter-free. The plain rigid ("macroscopic") variant is K = lambda = 0. The normal
component of ``d`` is the collision's penetration depth.

Speculative contacts: slots whose shapes are apart by less than ``opt.contact_margin``
plus one step's travel (``step.speculative_margin``) are active too, with the target ``v_n+ >= -gap/dt`` (the gap may close within the step,
no further). Without them a body resting at zero depth flickers in and out of contact
every step (the relaxed solve leaves it a micrometre above or below the surface), and a
chain lying on the ground chatters at 0.3 rad/s.

Reference points (per slot, matched to last step's slot of the same pair by feature id):
  1. new contact: where the segment from the point's previous position
     ``p_prev = p - dt v_rel`` to ``p`` crosses geom1's surface plane (the
     projection of ``p`` onto it if the point moves parallel to the plane or has not
     reached it);
  2. kept contact that was sticking and loaded: last step's reference;
  3. kept contact that slipped or carried no load: the projection of ``p`` onto the
     plane (no tangential spring).

Friction (``mu_s`` static, ``mu_k`` kinetic: the larger of the two geoms' values,
MuJoCo's rule). Each slot is either sticking or slipping in a step, decided from its
tangential speed at the step's start, and the QP is solved once (twice if a static
cone binds):
  * sticking slot: its impulse lies in the static cone ``|f_t| <= mu_s f_n`` inside the
    QP (RoKi-FD's choice; it puts a pyramid there). The relaxed solve spreads a rigid
    face's friction over its points as the cones allow, so a box on a slope steeper
    than its least-loaded point can hold still sticks when tan(theta) < mu_s.
  * slipping slot: kinetic friction against the slip velocity ``v_t`` at the step's
    start, ``f_t = -mu_k w(|v_t|) f_n v_t/|v_t|`` with ``w(x) = 1 - exp(-k_w x)``
    (Yamane & Nakamura's factor: no dither near zero slip), the paper's eq. 20. It
    enters the QP as a friction-skewed normal, the impulse ``f_n (n + mu_k w u)``
    linear in ``f_n``, with the slot's tangential rows dropped from the objective (its
    tangential velocity is not held). Correcting ``f_t`` after a sticking solve, as the
    paper does, keeps ``f_n`` balanced against the unbounded sticking ``f_t``: the
    torque of that impulse is propped up by the front contacts, which inflates ``f_n``
    ~80x for a box sliding at 2 m/s. A kinetic cone in the least-squares QP inflates
    it too (more ``f_n`` buys more friction); the skewed normal does not.
  * a sticking slot whose static cone binds gets ``mu_s f_n`` along its friction as a
    skewed normal in a second solve (undoing the normal impulse the cone inflated).
  * an impacting slot (approaching faster than ``slip_speed``) whose skewed normal
    would drive it further in rather than apart (friction's torque on a light hinged
    link: Painleve's paradox; ``skew_pushes_apart``) keeps the static cone for the
    step: the impact sticks, as a rigid impact in that configuration does.
  * transitions compare the slot's tangential speed at the step's start with
    ``opt.slip_speed`` (default 0.01 m/s, Springhead's V_f): above it the slot slips,
    below it it sticks. A sticking slot whose static cone cannot hold it speeds up
    until it crosses; a slipping one sticks again once friction has nearly stopped
    it. The paper's force test (``|f_t|`` against ``mu f_n`` after a
    sticking solve) misfires on the transients of a relaxed solve: a cube released on
    a slope rocks on one edge for a step, that edge's sticking solve asks for
    ``|f_t| = 0.8 f_n`` and the cube slides away although tan(theta) < mu_s.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxsim import math
from jaxsim.contact.limits import LimitRows, limited_joints
from jaxsim.contact.space import ContactSpace, slot_info
from jaxsim.kinematics import Kinematics, plan
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
    entry = jnp.where((ok & (contacts.depth >= 0))[:, None], p_prev + s * (p - p_prev), on_plane)
    g1_pos, g1_rot = kin.geom_pos_w[geom1], kin.geom_rot_w[geom1]
    kept_ref = g1_pos + jnp.einsum("mij,mj->mi", g1_rot, prev.ref_g1)
    # a point that slipped, or carried no load (speculative, or just separating), has
    # nothing to hold it where it was: it restarts from its projection
    held = ~prev.slipping & (prev.impulse[:, 0] > 0)
    ref = jnp.where(prev.kept[:, None], jnp.where(held[:, None], kept_ref, on_plane), entry)
    return p, ref


def row_groups(model: Model, geom1: Array, geom2: Array, limits: LimitRows) -> Array:
    """(3m + nl, k) bool one-hot: the pair of kinematic trees (the world is tree 0)
    that each contact row's two bodies and each limit row's joint (its own tree,
    twice) belong to, ``k = (ntree + 1)^2``."""
    root = plan(model.topo).body_root
    trees = np.unique(root[root > 0])
    tree_of = np.zeros(model.topo.nbody, int)  # 0 for the world, 1.. per tree
    tree_of[root > 0] = np.searchsorted(trees, root[root > 0]) + 1
    nt = len(trees) + 1
    geom_tree = jnp.asarray(tree_of[np.asarray(model.topo.geom_body, int)])
    t1, t2 = geom_tree[geom1], geom_tree[geom2]
    slot = jnp.minimum(t1, t2) * nt + jnp.maximum(t1, t2)
    ids = limited_joints(model.topo)[0]
    lim = jnp.asarray(tree_of[np.asarray(model.topo.jnt_body, int)[ids]] * (nt + 1), jnp.int32)
    group = jnp.concatenate([jnp.repeat(slot, 3), lim])
    return group[:, None] == jnp.arange(nt * nt)[None, :]


def kinetic_skew(model: Model, v_t: Array, mu_k: Array) -> Array:
    """(m, 2) kinetic friction impulse per unit normal impulse, ``-mu_k w(|v_t|) v_t/|v_t|``,
    from the (m, 2) tangential slip velocity ``v_t`` (m/s)."""
    vt_norm = math.safe_norm(v_t)
    w = 1.0 - jnp.exp(-model.opt.slip_gain * vt_norm)
    return -(mu_k * w / jnp.maximum(vt_norm, 1e-30))[:, None] * v_t


def skew_pushes_apart(A: Array, skew: Array) -> Array:
    """(m,) bool: an impulse along the friction-skewed normal ``(1, skew)`` separates
    its slot (the normal row of ``A (1, skew)`` is positive). Where it does not (a
    light link on a hinge sliding into the ground: the friction's torque drives the
    point down, Painleve's paradox), an impacting slot keeps the static cone."""
    i = 3 * jnp.arange(skew.shape[0])
    return A[i, i] + A[i, i + 1] * skew[:, 0] + A[i, i + 2] * skew[:, 1] > 0


def relaxation_scale(A: Array, row_active: Array, row_group: Array) -> Array:
    """(n,) weight of ``||df||^2`` per unit lambda for each row (1/kg^2): the mean of
    ``diag(A^T A)`` over the active rows of its group, the rows between the same two
    kinematic trees (the world counting as one).

    This makes lambda dimensionless, as Marquardt's scaling does for Levenberg's
    damping: with the paper's absolute lambda = 1 a 40 kg humanoid (A ~ 1/40 per row)
    gets almost no contact impulse and sinks 15 cm into the floor. A relaxed contact
    rests about ``lambda dt g s / (K A_ii^2)`` deep, so ``s`` must follow the row's
    own ``A_ii^2``: one mean over all rows (the first design) let a 18 kg sphere
    sharing a scene with light bodies sink 16 cm (``s / A_ii^2 ~ 1e6``), and one mean
    per tree let a 20 kg capsule sink 19 mm because a 30 g box touching it dominated
    its tree's mean. Within a group the mean is shared: per-row or per-pair weights
    change how a statically indeterminate load is shared (the tip link of the lying
    pendulum, whose links are one tree on the world, then carries 0.60 / 0.73 N on
    its near / far points instead of four equal forces).

    Args:
      A: (n, n) constraint-space operator; row_active: (n,) bool.
      row_group: (n, k) bool one-hot group of every row (``row_groups``).
    """
    w = (row_active[:, None] & row_group).astype(A.dtype)
    diag = jnp.sum(A * A, 0)
    group_mean = (diag @ w) / jnp.maximum(jnp.sum(w, 0), 1.0)  # (k,)
    return row_group.astype(A.dtype) @ group_mean + jnp.finfo(A.dtype).tiny


def _block_diag(blocks: Array) -> Array:
    """(m*k, m*k) block-diagonal matrix of (m, k, k) blocks."""
    m, k = blocks.shape[0], blocks.shape[1]
    eye = jnp.eye(m, dtype=blocks.dtype)
    return jnp.einsum("ij,iab->iajb", eye, blocks).reshape(m * k, m * k)


def _solve_with_modes(opt, A: Array, c: Array, relax, mu_s: Array, skewed: Array, skew: Array,
                      warm: Array) -> tuple[Array, qp.Stats]:
    """The relaxed QP with friction modes (module docstring).

    Args:
      A: (n, n) constraint-space inverse inertia of the m contact slots' 3m rows and
        then ``n - 3m`` scalar rows with impulse >= 0 (joint limits); c: (n,)
        ``b`` plus the position corrections.
      relax: (n,) relaxation weight per row (lambda times ``relaxation_scale``),
        equal over the three rows of a slot.
      mu_s: (m,) static coefficients; the cone of each slot that is not skewed.
      skewed: (m,) bool, slots whose impulse is ``f_n (1, skew)`` (friction given).
      skew: (m, 2) their friction per unit normal impulse.
      warm: (n,) initial impulses.

    Returns:
      (impulses (n,): per slot normal, tangent 1, tangent 2 in its contact frame, then
      the scalar rows; qp.Stats).
    """
    m, n, dtype = mu_s.shape[0], A.shape[0], A.dtype
    zero = jnp.zeros((m, 3), dtype)
    # df = T x, T_j per slot: identity, or (f_n, 0, 0) -> f_n (1, skew); a skewed
    # slot's tangential rows leave the objective (its tangential velocity is not held)
    T_slot = jnp.where(skewed[:, None, None],
                       jnp.stack([jnp.concatenate([jnp.ones((m, 1), dtype), skew], -1), zero, zero], -1),
                       jnp.eye(3, dtype=dtype))
    T = jnp.eye(n, dtype=dtype).at[:3 * m, :3 * m].set(_block_diag(T_slot))
    AT = A @ T
    rows = jnp.concatenate([jnp.where(skewed[:, None], jnp.asarray([1.0, 0.0, 0.0], dtype), 1.0).reshape(-1),
                            jnp.ones((n - 3 * m,), dtype)])
    # one slack s >= 0 per normal and limit row makes their residual one-sided: a row
    # may move apart faster than its target at no cost (the residual r - s, s = max(r,
    # 0)). Without it a speculative slot asks for exactly its target velocity -gap/dt
    # and, in the least-squares objective, pulls its body towards the surface: a hull
    # resting on five ring vertices held its sixth 19 mm inside the floor
    normal = np.concatenate([3 * np.arange(m), np.arange(3 * m, n)])
    AT_n = AT[normal]
    H = jnp.block([[AT.T @ (rows[:, None] * AT) + T.T @ (relax[:, None] * T), -AT_n.T],
                   [-AT_n, jnp.eye(len(normal), dtype=dtype)]])
    g = jnp.concatenate([AT.T @ (rows * c), -c[normal]])
    # every slot is a cone block (mu = 0 pins a skewed slot's tangents at zero; its
    # bounds are unused); the scalar rows and the slacks are half-lines
    mu = jnp.where(skewed, 0.0, mu_s).astype(dtype)
    k = n + len(normal)
    lower = jnp.zeros((k,), dtype)
    upper = jnp.concatenate([jnp.zeros((3 * m,), dtype), jnp.full((k - 3 * m,), jnp.inf, dtype)])
    keep = jnp.concatenate([jnp.where(skewed[:, None], jnp.asarray([1.0, 0.0, 0.0], dtype), 1.0).reshape(-1),
                            jnp.ones((n - 3 * m,), dtype)])
    x0 = warm * keep
    x0 = jnp.concatenate([x0, jnp.maximum((AT_n @ x0) + c[normal], 0.0)])
    x, stats = qp.solve(qp.QP(H, g, lower, upper, mu), x0, opt.solver_tol,
                        max_iter=opt.solver_iterations, block=(3, m), adjoint=opt.adjoint)
    return T @ x[:n], stats


def solve(model: Model, kin: Kinematics, contacts: Contacts, prev: Previous,
          space: ContactSpace, v: Array, geom1: Array, geom2: Array, limits: LimitRows):
    """One step of the point-contact model on m slots (all of them, or a selection).

    Args:
      contacts: the m slots' contacts.
      prev: last step's data matched to them (:func:`match_previous`).
      space: the operators of their 3m rows followed by the limit rows.
      v: (nv,) generalized velocity at the start of the step.
      geom1, geom2: (m,) their geom ids.
      limits: the joint-limit rows (``contact/limits.py``).

    Returns:
      (impulses (3m + nl,): per slot on geom2 in its contact frame, then per limit
      row; new ContactState; SolverStats).
    """
    opt = model.opt
    m = contacts.active.shape[0]
    dtype = space.b.dtype
    active = contacts.active
    v_rel = (space.J[:3 * m] @ v).reshape(m, 3)  # contact frame, start of step
    v_rel_w = jnp.einsum("mij,mi->mj", contacts.frame_w, v_rel)
    p, ref = reference_points(model, kin, contacts, prev, v_rel_w, geom1)
    d = jnp.einsum("mij,mj->mi", contacts.frame_w, p - ref)
    rigid = opt.contact == "rigid"
    relax = 0.0 if rigid else opt.contact_relaxation
    # K dt > 1 would over-correct (a penetration reversed and doubled every step, and
    # gradients that grow by |1 - K dt| per step): K is capped at 1/dt
    stiffness = 0.0 if rigid else jnp.minimum(opt.contact_stiffness, 1.0 / opt.timestep)
    # velocity corrections: K d along the tangents and against a penetration, at most
    # max_depenetration_speed (a penetration of depth d would otherwise leave at up
    # to d/dt: a body started 5 cm inside the floor at dt = 2 ms flew off at 25 m/s);
    # a gap (speculative contact, depth < 0) may close within the step and no further
    depth, cap = contacts.depth, opt.max_depenetration_speed
    push = jnp.where(depth >= 0, jnp.minimum(stiffness * depth, cap), depth / opt.timestep)
    tangential = stiffness * d[:, 1:]
    tangential = tangential * jnp.minimum(1.0, cap / jnp.maximum(math.safe_norm(tangential), 1e-30))[:, None]
    correction = jnp.concatenate([-push[:, None], tangential], -1)
    limit_correction = jnp.where(limits.dist >= 0, limits.dist / opt.timestep,
                                 jnp.maximum(stiffness * limits.dist, -cap))
    c = space.b + jnp.concatenate([jnp.where(active[:, None], correction, 0.0).reshape(-1),
                                   jnp.where(limits.active, limit_correction, 0.0)])
    row_active = jnp.concatenate([jnp.repeat(active, 3), limits.active])
    mu_s, mu_k = _friction(model, geom1, geom2)
    scale = relaxation_scale(space.A, row_active, row_groups(model, geom1, geom2, limits))
    solve_qp = functools.partial(_solve_with_modes, opt, space.A, c, relax * scale, mu_s)
    nl = limits.dist.shape[0]
    contact_part = lambda x: x[:3 * m].reshape(m, 3)  # noqa: E731

    # pass 1: slots sliding faster than slip_speed take kinetic friction, the rest the
    # static cone
    slipping = active & (math.safe_norm(v_rel[:, 1:]) > opt.slip_speed)
    kinetic = kinetic_skew(model, v_rel[:, 1:], mu_k)
    warm = jnp.concatenate([jnp.where((prev.kept & active)[:, None], prev.impulse, 0.0).reshape(-1),
                            jnp.zeros((nl,), dtype)])
    # an impacting slot (approaching faster than slip_speed) whose skewed normal would
    # not push it apart keeps the static cone: a gymnasium humanoid's feet landing
    # with mu = 1 took no normal impulse, sank 55 mm, and their later overlap with the
    # body launched it at 14 m/s
    impact = v_rel[:, 0] < -opt.slip_speed
    x1, stats1 = solve_qp(slipping & (skew_pushes_apart(space.A, kinetic) | ~impact), kinetic, warm)
    df1 = jnp.where(active[:, None], contact_part(x1), 0.0)

    # pass 2, if a static cone binds: that slot gets mu_s f_n along its pass-1 friction
    # as a skewed normal too, which undoes the normal impulse the cone inflated
    ft_norm = math.safe_norm(df1[:, 1:])
    binding = active & ~slipping & (df1[:, 0] > 0) & (ft_norm >= (1 - 1e-4) * mu_s * df1[:, 0])
    skew = jnp.where(binding[:, None], (mu_s / jnp.maximum(ft_norm, 1e-30))[:, None] * df1[:, 1:], kinetic)
    skewed = (slipping | binding) & (skew_pushes_apart(space.A, skew) | ~impact)
    binding = binding & skewed
    x, stats = jax.lax.cond(jnp.any(binding), lambda: solve_qp(skewed, skew, x1),
                            lambda: (x1, qp.Stats(jnp.zeros((), jnp.int32), jnp.zeros((), dtype))))
    df = jnp.where(active[:, None], contact_part(x), 0.0)
    df_limit = jnp.where(limits.active, x[3 * m:], 0.0)
    stats = qp.Stats(stats1.iterations + stats.iterations, jnp.maximum(stats1.residual, stats.residual))

    g1_pos, g1_rot = kin.geom_pos_w[geom1], kin.geom_rot_w[geom1]
    ref_g1 = jnp.einsum("mji,mj->mi", g1_rot, ref - g1_pos)
    force_w = jnp.einsum("mij,mi->mj", contacts.frame_w, df) / opt.timestep
    state = ContactState(active=active, feature=contacts.feature,
                         ref_g1=jnp.where(active[:, None], ref_g1, 0.0), slipping=slipping,
                         impulse=df, force_w=force_w,
                         pos_w=jnp.where(active[:, None], contacts.pos_w, 0.0), depth=jnp.where(active, contacts.depth, 0.0))
    return jnp.concatenate([df.reshape(-1), df_limit]), state, SolverStats(stats.iterations, stats.residual)
