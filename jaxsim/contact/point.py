"""Point contacts with momentum-level penetration compensation (Wakisaka & Sugihara's
relaxed point-contact paper; reference implementation RoKi-FD ``rkfd_vert.c``): the
contact models ``"relaxed"`` and ``"rigid"`` (``K = lambda = 0``, the paper's
"macroscopic" variant). Parameters: ``RelaxedParams`` / ``RigidParams``.

Per active slot the contact point ``p`` is geom2's deepest point (``pos - depth/2 n``)
and ``p_ref`` its reference point on geom1's surface, stored in geom1's frame so that
it moves with geom1. The impulses ``df`` (3 per slot, contact frame, on geom2) solve
the paper's relaxed problem with the residual measured in the kinetic-energy metric:

    minimize  1/2 df^T (A + R) df + df^T (b + K d)   subject to  df_i in F_i

``A`` the contact-space inverse inertia, ``b`` the contact velocities after the step
without contact impulses, ``d = p - p_ref``, ``R = lambda s`` the relaxation and
``F_i`` slot i's friction cone. Its stationarity condition is ``v+ = A df + b =
-K d + (the cone's normal)``: where a slot pushes, its velocity meets the target
``-K d`` (``K dt = 1`` removes a displacement in one step; K is capped at 1/dt),
where it does not, it may move apart faster (complementarity), and the impulses are
unique for a body on 4+ points because of ``R``.

Why this metric. Written with the paper's Euclidean residual, ``1/2 ||A df + b + K
d||^2 + 1/2 lambda ||df||^2``, the objective weighs velocity errors in contact space,
not in energy: its solution can do positive work.
gymnasium's humanoid landing on locked knees got 372 J of kinetic energy from one
step's impulses (its fall had 44 J), and in random scenes bodies gained energy
thousands of percent. The quadratic above is the same least-squares problem with the
residual ``r = A df + c`` weighed by ``A^-1`` (``1/2 r^T A^-1 r``, up to a constant),
Gauss's principle of least constraint: at its optimum ``df^T (A df + c) = 0``, so the
kinetic energy changes by ``-1/2 df^T A df - df^T R df - df^T (K d)``: every impulse
dissipates except through the position correction, whose work is at most
``max_depenetration_speed`` times the impulse. It also leaves rows that need no impulse
free: in the Euclidean form a speculative slot asked for exactly its target velocity
and pulled its body towards the surface (a hull rested on five ring vertices with its
sixth 19 mm inside the floor).

Position correction ``K d``: along the normal ``-K depth`` (the collision's depth), at
most ``max_depenetration_speed`` (a body started 5 cm inside the floor at dt = 2 ms
otherwise left at 25 m/s); along the tangents ``K`` times the drift beyond
``DRIFT_TOLERANCE`` (10 micrometres), the same cap. The dead band removes the
pre-stress a sticking point's drift during settling leaves in a statically
indeterminate chain (without it the paper's pendulum, lying on the ground, kept 13 %
between its tip link's near and far forces; with it they are equal) and still stops
creep (a cube on a slope with tan 0.4 < mu_s comes to rest after 10 micrometres).

Relaxation: ``s`` (1/kg) is the inverse mass that the heaviest tree of a contact
island shows at its active normal and limit rows, see ``relaxation_scale``;
``lambda`` is dimensionless (default 0.01). The plain rigid ("macroscopic") variant
is ``K = lambda = 0``.

Speculative contacts: slots whose shapes are apart by less than ``opt.contact_margin``
plus one step's travel (``stage.speculative_margin``) are active too, with the target
``v_n+ >= -gap/dt`` (the gap may close within the step, no further). Without them a
body resting at zero depth flickers in and out of contact every step.

Reference points (per slot, matched to last step's slot of the same pair by feature id):
  1. new contact: where the segment from the point's previous position
     ``p_prev = p - dt v_rel`` to ``p`` crosses geom1's surface plane (the
     projection of ``p`` onto it if the point moves parallel to the plane or has not
     reached it);
  2. kept contact that was sticking and loaded: last step's reference;
  3. kept contact that slipped or carried no load: the projection of ``p`` onto the
     plane (no tangential spring).

Friction (``mu_s`` static, ``mu_k`` kinetic: the larger of the two geoms' values,
MuJoCo's rule), decided per slot from its tangential speed at the step's start
against ``opt.slip_speed`` (0.01 m/s, Springhead's V_f):
  * sticking: the static cone ``|f_t| <= mu_s f_n`` inside the QP (RoKi-FD's choice);
    the relaxed solve spreads a face's friction over its points as the cones allow.
  * sliding: the kinetic cone ``|f_t| <= mu_k f_n`` (the paper's factor
    ``w(|v_t|) = 1 - exp(-k_w |v_t|)`` of eq. 20 is left out: with the mode decided at
    the step's end there is no dither for it to remove, and it made the contact-volume
    paper's cube scenes depend on dt), and the normal row's target raised by ``mu |v_t|`` (De
    Saxce's modified velocity ``u + mu ||u_T|| e_n``): a cone's complementarity alone
    gives a sliding contact a separating velocity ``mu |v_t|`` (Anitescu's relaxation:
    a box sliding at 2 m/s would hop at 0.6 m/s), the shift cancels it. Friction from
    a cone is maximally dissipative, and a sliding point can stop within the step.
  The paper's force test (``|f_t|`` against ``mu f_n`` after a sticking solve)
  misfires on the transients of a relaxed solve: a cube released on a slope rocks on
  one edge for a step, that edge's sticking solve asks for ``|f_t| = 0.8 f_n`` and the
  cube slides away although tan(theta) < mu_s.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxsim import math
from jaxsim.contact import common
from jaxsim.contact.interface import ContactModel, Problem, Solution, param, register
from jaxsim.contact.rows import Rows, row_layout, servo_elimination
from jaxsim.contact.space import ContactSpace
from jaxsim.kinematics import plan
from jaxsim.solver import qp
from jaxsim.types import Contacts, Model, SolverStats, pytree_dataclass

Array = jax.Array

DRIFT_TOLERANCE = 1e-5  # m, tangential drift of a sticking point left uncorrected


def _newton_steps_param():
    """The ``newton_steps`` field the relaxed and rigid models share."""
    return param(qp.NEWTON_STEPS, "cap on the contact QP's Newton steps before its projected gradient (static)",
                 minimum=0, static=True)


@pytree_dataclass
class RelaxedParams:
    contact_rate: Array = param(1000.0, "1/s, K: penetration and drift correction rate (capped at 1/dt)")
    contact_relaxation: Array = param(0.01, "lambda, dimensionless QP relaxation (relaxation_scale)")
    max_depenetration_speed: Array = param(0.5, "m/s (rad/s for hinge limits), cap on the correcting velocity")
    newton_steps: int = _newton_steps_param()

    def gains(self, dt):
        """(K, lambda, cap): K capped at 1/dt."""
        # K dt > 1 would over-correct (a penetration reversed and doubled every step, and
        # gradients that grow by |1 - K dt| per step): K is capped at 1/dt
        return jnp.minimum(self.contact_rate, 1.0 / dt), self.contact_relaxation, self.max_depenetration_speed


@pytree_dataclass
class RigidParams:
    """The rigid variant is the relaxed one with K = lambda = 0 (no position
    correction, no relaxation; the scene's ``slip_speed`` still picks the friction
    coefficient); its QP takes the same ``newton_steps``."""

    newton_steps: int = _newton_steps_param()

    def gains(self, dt):
        """(K, lambda, cap) = (0, 0, inf)."""
        return 0.0, 0.0, jnp.inf


class PointCarry(NamedTuple):
    """Per slot, what the point model keeps between steps."""

    ref_g1: Array  # (n, 3) m, reference point p_ref in geom1's frame
    slipping: Array  # (n,) bool, slips in the next step (kinetic friction)


def init(model: Model, n: int) -> PointCarry:
    return PointCarry(jnp.zeros((n, 3), model.dtype), jnp.zeros((n,), bool))


class Previous(NamedTuple):
    """Last step's slot data, re-indexed to this step's slots."""

    kept: Array  # (m,) bool
    ref_g1: Array  # (m, 3)
    slipping: Array  # (m,) bool
    impulse: Array  # (m, 3)


def reference_points(model: Model, kin, contacts: Contacts, prev: Previous,
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


def row_trees(model: Model, geom1: Array, geom2: Array) -> tuple[Array, np.ndarray, int]:
    """The kinematic trees of every row and of every degree of freedom.

    Returns:
      (3m + nr, 2) int32 trees (the world is tree 0, then 1.. per tree) of a contact
      row's two bodies, a generic row's body twice; (nv,) static tree of every dof;
      the number of trees including the world.
    """
    p = plan(model.topo)
    root = p.body_root
    trees = np.unique(root[root > 0])
    tree_of = np.zeros(model.topo.nbody, int)  # 0 for the world, 1.. per tree
    tree_of[root > 0] = np.searchsorted(trees, root[root > 0]) + 1
    geom_tree = jnp.asarray(tree_of[np.asarray(model.topo.geom_body, int)], jnp.int32)
    pair = jnp.stack([geom_tree[geom1], geom_tree[geom2]], -1)
    rows = np.repeat(tree_of[row_layout(model.topo).body][:, None], 2, 1)  # (nr, 2)
    return (jnp.concatenate([jnp.repeat(pair, 3, 0), jnp.asarray(rows, jnp.int32)]), tree_of[p.dof_body],
            len(trees) + 1)


def tree_shares(J: Array, Minv_JT: Array, dof_tree: np.ndarray, ntree: int) -> Array:
    """(n, ntree) each tree's part of ``diag(A) = diag(J M^-1 J^T)``: the dot products
    of ``J``'s rows (n, nv) with ``M^-1 J^T``'s columns (nv, n) over each tree's dofs
    (``dof_tree`` (nv,) static). A tree's dofs are one slice where contiguous, and a
    short slice is summed term by term (``math.small_dot``): as a product with a
    one-hot (nv, ntree) matrix, under ``vmap`` on the CPU, it went to a library
    kernel that cost 4 % of a step of 8 boxes."""
    cols = []
    for t in range(ntree):
        dofs = np.flatnonzero(dof_tree == t)
        if dofs.size == 0:  # the world
            cols.append(jnp.zeros(J.shape[:1], J.dtype))
            continue
        contiguous = dofs[-1] - dofs[0] + 1 == dofs.size
        sel = slice(int(dofs[0]), int(dofs[-1]) + 1) if contiguous else dofs
        cols.append(math.small_dot(J[:, sel], Minv_JT[sel].T))
    return jnp.stack(cols, -1)


def relaxation_scale(space: ContactSpace, row_active: Array, row_tree: Array, dof_tree: np.ndarray,
                     ntree: int, row_normal) -> Array:
    """(n,) relaxation weight per unit lambda of every row (1/kg).

    Per tree, ``s_t`` is the mean over the active normal (and limit) rows it takes part
    in of its own share of ``diag(A)`` (``J_t M_t^-1 J_t^T``: the inverse mass the
    tree shows at its contacts); every row of a contact island (trees linked by
    active rows, the world not linking) gets the smallest ``s_t`` of its island.

    This makes lambda dimensionless, as Marquardt's scaling does for Levenberg's
    damping: an absolute lambda lets a 40 kg humanoid (A ~ 1/40 per row) sink into the
    floor. A relaxed contact rests about ``lambda s f / K`` deep under a load impulse
    ``f``, so ``s`` must follow the inverse mass of what the contact carries, which is
    the island's heaviest tree, not the rows' own ``A_nn``. Measured: one mean over all
    rows let an 18 kg sphere sharing a scene with light bodies sink 16 cm; one mean per
    tree let a 20 kg capsule sink 19 mm because a 30 g box touching it dominated its
    tree's mean; a mean of ``diag(A)`` per pair of trees let a 24 g box pressed on
    the floor by a 13.5 kg hull at dt = 5 ms sink 89 mm (both of its pairs' ``A_nn``
    are the light box's); tangential rows in the mean (a light foot slides far more
    easily than it sinks) relaxed the landing humanoid's normal rows hundreds of
    times more than their own scale. One weight per island also keeps a statically
    indeterminate load shared as the rigid solution shares it (per-row or per-pair
    weights made the pendulum of ``scenes.pendulum`` lying on the ground load its tip
    link's near and far points unequally).

    Args:
      space: the constraint space (``J``, ``M^-1 J^T``, ``A``).
      row_active: (n,) bool. row_tree: (n, 2) int32 (``row_trees``).
      dof_tree: (nv,) static tree of every dof; ntree: number of trees incl. the world.
      row_normal: (n,) bool (static), the rows that enter the mean.
    """
    dtype = space.A.dtype
    share = tree_shares(space.J, space.Minv_JT, dof_tree, ntree)
    w = (row_active & jnp.asarray(row_normal)).astype(dtype)
    touches = (row_tree[:, :1] == jnp.arange(ntree)) | (row_tree[:, 1:] == jnp.arange(ntree))  # (n, ntree)
    weight = w[:, None] * touches
    count = jnp.sum(weight, 0)
    s_tree = jnp.where(count > 0, jnp.sum(weight * share, 0) / jnp.maximum(count, 1.0), jnp.inf)
    # contact islands by label propagation over the active rows between two bodies
    linked = (w > 0) & (row_tree[:, 0] > 0) & (row_tree[:, 1] > 0)
    a, b = row_tree[:, 0], row_tree[:, 1]

    def spread(_, label):
        lo = jnp.where(linked, jnp.minimum(label[a], label[b]), ntree)
        label = jnp.minimum(label, jax.ops.segment_min(lo, a, num_segments=ntree))
        return jnp.minimum(label, jax.ops.segment_min(lo, b, num_segments=ntree))

    label = jax.lax.fori_loop(0, max(ntree - 2, 0), spread, jnp.arange(ntree))
    s_island = jax.ops.segment_min(s_tree, label, num_segments=ntree)
    s_row = s_island[label[jnp.maximum(a, b)]]
    return jnp.where(jnp.isfinite(s_row), s_row, 0.0) + jnp.finfo(dtype).tiny


def corrections(model: Model, contacts: Contacts, d: Array, rows: Rows, slipping: Array):
    """Velocity targets of the position errors (module docstring): ((m, 3) per slot,
    (nr,) per generic row), both m/s (rad/s for hinge limits), to be added to ``b``."""
    dt = model.opt.timestep
    stiffness, _, cap = model.contact_params.gains(dt)
    # a penetration is pushed out at K depth, at most cap; a gap may close in the step
    correct = common.pushed_out(stiffness, cap)
    push = common.contact_targets(contacts.depth, dt, correct)
    drift = math.safe_norm(d[:, 1:])
    # (drift - tol) / drift beyond the tolerance, 0 within it (no division by a zero
    # drift, which would make forward-mode derivatives NaN: math.capped_scale)
    beyond = drift > DRIFT_TOLERANCE
    excess = jnp.where(beyond, (drift - DRIFT_TOLERANCE) / jnp.where(beyond, drift, 1.0), 0.0)
    tangential = stiffness * excess[:, None] * d[:, 1:]
    tangential = tangential * math.capped_scale(math.safe_norm(tangential), cap)[:, None]
    tangential = jnp.where(slipping[:, None], 0.0, tangential)
    return jnp.concatenate([-push[:, None], tangential], -1), -common.limit_targets(rows, dt, correct)


def friction_mode(model: Model, problem: Problem, vt: Array):
    """Per slot from its tangential speed ``vt`` (m,): (slipping, mu, De Saxce's shift
    ``mu |v_t|`` on the normal target)."""
    slipping, mu = common.friction_mode(problem.slots.friction, vt, model.opt.slip_speed, problem.contacts.active)
    return slipping, mu, common.desaxce_shift(slipping, mu, vt)


def _relaxed_qp(model: Model, problem: Problem, c: Array, mu: Array) -> qp.QP:
    """The relaxed QP over the 3m slot rows and the nr generic rows (module docstring)."""
    space, m, nr = problem.space, problem.m, problem.nr
    row_normal = np.concatenate([np.arange(3 * m) % 3 == 0, np.ones(nr, bool)])
    _, relax, _ = model.contact_params.gains(model.opt.timestep)
    scale = relaxation_scale(space, common.row_mask(problem),
                             *row_trees(model, problem.slots.geom1, problem.slots.geom2), row_normal)
    lower, upper = common.cone_bounds(m, problem.rows)
    H = common.add_diagonal(space.A, (relax * scale)[:3 * m], problem.rows, (relax * scale)[3 * m:])
    return qp.QP(H, c, lower, upper, mu.astype(space.b.dtype), factors=common.low_rank_factors(space))


def solve(model: Model, problem: Problem, carry: PointCarry) -> Solution:
    """One step of the point-contact model on the problem's m slots and nr rows."""
    opt, space, contacts = model.opt, problem.space, problem.contacts
    m, active = problem.m, contacts.active
    prev = Previous(problem.kept, carry.ref_g1, carry.slipping, problem.prev_impulse)
    v_rel, _ = common.split(common.start_velocity(problem), problem)  # contact frame, start of step
    v_rel_w = jnp.einsum("mij,mi->mj", contacts.frame_w, v_rel)
    p, ref = reference_points(model, problem.kin, contacts, prev, v_rel_w, problem.slots.geom1)
    d = jnp.einsum("mij,mj->mi", contacts.frame_w, p - ref)

    # friction mode from the slip speed at the step's start (module docstring)
    slipping, mu, shift = friction_mode(model, problem, common.tangential_speed(v_rel))
    correction, row_correction = corrections(model, contacts, d, problem.rows, slipping)
    correction = correction.at[:, 0].add(shift)
    c = space.b + jnp.concatenate([jnp.where(active[:, None], correction, 0.0).reshape(-1),
                                   jnp.where(problem.rows.active, row_correction, 0.0)])
    problem_qp = _relaxed_qp(model, problem, c, mu)
    servos = servo_elimination(model.topo, problem.nr, 3 * m)
    solve_qp = lambda pr, x0, skip=None: qp.solve(pr, x0, opt.solver_tol, max_iter=opt.solver_iterations,  # noqa: E731
                                                  block=(3, m), adjoint=opt.adjoint, skip=skip,
                                                  smoothing=opt.gradient_smoothing,
                                                  newton_steps=model.contact_params.newton_steps, **servos)
    # second pass: the friction mode and De Saxce's shift from the slip speed at the
    # step's end, as the first pass left it (one step of the fixed point). Decided
    # from the start alone, the cone of an impact depended on whether the point
    # approached sliding at 9 or 11 mm/s, and a sliding point stopped by an impact
    # could approach the surface at mu |v_t|. It is skipped where no mode changed and
    # no shift moved by more than 0.1 slip_speed
    def second(x1):
        vt_end = common.tangential_speed(common.end_velocity(space.A, space.b, x1, m))
        slipping2, mu2, shift2 = friction_mode(model, problem, vt_end)
        redo = (jnp.any(slipping2 != slipping)
                | jnp.any(jnp.abs(shift2 - shift) > 0.1 * model.opt.slip_speed))
        return (common.add_to_normals(c, problem, shift2 - shift), mu2.astype(c.dtype)), redo, slipping2

    def solve_pass(g_mu, x0, skip):
        return solve_qp(problem_qp._replace(g=g_mu[0], mu=g_mu[1]), x0, skip)
    x, stats, slipping2 = common.two_passes(solve_pass, (c, problem_qp.mu), second, common.warm_start(problem))
    return _pack(problem, x, ref, slipping2, stats)


def _pack(problem: Problem, x: Array, ref: Array, slipping: Array, stats: SolverStats) -> Solution:
    """Impulses masked to the active rows, and the carry for the next step."""
    kin, geom1, active = problem.kin, problem.slots.geom1, problem.contacts.active
    g1_pos, g1_rot = kin.geom_pos_w[geom1], kin.geom_rot_w[geom1]
    ref_g1 = jnp.einsum("mji,mj->mi", g1_rot, ref - g1_pos)
    carry = PointCarry(jnp.where(active[:, None], ref_g1, 0.0), slipping)
    return Solution(common.mask(problem, x), carry, stats)


register(ContactModel("relaxed", RelaxedParams, init, solve,
                      "relaxed point contacts with momentum-level penetration compensation"))
register(ContactModel("rigid", RigidParams, init, solve,
                      "the same point contacts without relaxation or correction (K = lambda = 0)"))
