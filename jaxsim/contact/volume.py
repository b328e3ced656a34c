"""The contact-volume model (after Wakisaka and Sugihara's contact-volume paper): one
wrench per intersection volume, applied at a centre of pressure inside the volume's
cross-section.

Slots: ``collision="volume"`` (one slot per polyhedral pair at the volume's centroid,
``Contacts.volume`` its polyhedron) with 6 rows each (force, then torque about the
slot point, in the contact frame). Sphere and capsule pairs keep point slots and are
solved in the same QP as point contacts (force only, at the point).

Per volume:

1. Target twist. ``collision/moments.py`` gives the paper's least-squares moments
   ``Q`` and ``c`` of the volume (every point of the contact plane inside the volume
   asked to separate at ``k h``, ``h`` its depth); the twist that fits them best is
   ``v* = -k Q^-1 c`` (``moments.fit_twist``, closed form; relative twist of geom2 to
   geom1, as the slot's rows). Its normal part is capped at
   ``max_depenetration_speed`` (the whole twist scaled); a pair overlapping by less
   than the collision's sliver, or apart, targets ``v_n = depth / dt`` (close at most
   the gap: a speculative contact), and the sliver's own thickness is taken out of
   the target.
2. Wrench. The resultant ``f`` (normal >= 0, inside a friction cone) has its
   normal part at ``r = slot point + theta`` (theta in the contact plane), and a
   torsion ``tau`` about the normal, ``|tau| <= mu f_n rho`` (``rho``:
   ``torsion_radius`` of the cross-section; the bound from the previous round's
   ``f_n``): the slot's 6 rows carry ``[f; r x f_n + tau n]``. The paper's wrench is
   ``[f; r x f]`` with no torsion: a pure spin then has nothing to stop it (a cube
   spun at 3 rad/s on the floor kept 0.154 rad/s for ever), and letting the
   friction's lever ``r x f_t`` brake it instead drove the centre to the face's
   corners and tipped the cube over. Here the spin brakes at ``mu_k m g rho / I``
   (measured 67.76 rad/s^2 for the 0.1 m cube, 0.28 % above the uniformly pressed
   face's) and the slip that picks the friction mode counts ``rho |omega_n|``. Friction:
   the static cone ``mu_s`` while the slot point slips slower than ``opt.slip_speed``,
   the kinetic ``mu_k`` above it, with De Saxce's shift, as in the point model;
   and, as in the relaxed point-contact paper, a slot that ended the last step
   sliding on its kinetic cone stays kinetic until a solve stops it inside that cone
   (``VolumeCarry.slipping``). Without that, a face slowing through ``slip_speed``
   got the static cone for its last steps: friction rose from ``mu_k`` to ``mu_s``
   and the centre of pressure of the paper's second cube scene (turned 15 degrees
   about x, landing on its face and sliding) went from 15 to 38 mm before rest (23 mm
   in one step), where Coulomb's answer falls from 15 mm to 0. With ``mu_s``
   throughout, the same cube, sliding at 0.5 m/s as its face slapped down, was
   tripped onto its leading edge and rocked up 11 degrees.
3. Solve (the paper's alternation), ``alternations`` rounds. The shared QP is
   ``min 1/2 x^T (A + R) x + x^T (b - v*)`` over the rows ``x = G(theta) y`` (``y``
   the forces, torsions and generic rows' impulses; ``R`` the relaxation, ``lambda``
   times the diagonal of ``A``). The first round solves it with each normal force's
   moment ``u = theta f_n`` free within the cross-section's bounding box (times the
   last step's ``f_n``) and takes ``theta = u / f_n``; where the best centre lies
   inside the section that is the joint answer already. The later rounds (under
   ``lax.scan``) put every theta at the exact minimum of its 2-D QP for the current
   forces (the unconstrained minimum if it lies in the cross-section, else the best
   point of the section's boundary, ``polyhedra.fan_section``; a slot without a normal
   force keeps its theta), then solve the forces at them: they change something
   only where a centre left the section (with ``alternations=1`` such a centre
   stays in the box). Each round also updates the
   friction mode and De Saxce's shift ``mu |v_t|`` on the normal target from the
   slip it left (the cone QP alone would lift a sliding body at that speed), as the
   point model does. Two rounds by default. The paper's plain alternation (thetas
   for the last step's forces, then forces at them) converges slowly where the
   forces change within a step: in the step that stops that cube's slide two rounds
   left the centre 12.9 mm ahead where twenty converge to 9.3 mm (Coulomb's
   answer for that step's friction); the difference tipped the cube by 0.001 deg,
   which rang out over 5 steps up to 4 mm behind the centre. The free first round
   gives Coulomb's sequence there, and the centre stays within 0.1 mm of the centre
   of mass once the cube rests.

The QP is the Gauss form that jaxsim's point model and generic rows use (the kinetic
metric ``A``), not the paper's ``A^T Q A``: the paper's ``Q`` weighting enters through
the target twist it fits, joint limits and point slots share the same solve without
mixing units, and ``A + R`` is as well conditioned as the point model's problem.

Gradients: the forces' QP by implicit differentiation (``solver/qp.py``), the theta
steps and the alternation by differentiating the fixed number of rounds.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxsim import math
from jaxsim.collision import moments
from jaxsim.collision import polyhedra as geometry
from jaxsim.collision.regions import SLIVER
from jaxsim.contact import common
from jaxsim.contact.interface import ContactModel, Problem, Solution, param, register, zero_stats
from jaxsim.contact.space import block_diagonal
from jaxsim.solver import qp
from jaxsim.types import Model, pytree_dataclass

Array = jax.Array


@pytree_dataclass
class VolumeParams:
    contact_rate: Array = param(100.0, "1/s, k: a contact region separates at k times its depth")
    contact_relaxation: Array = param(0.01, "lambda: relaxation of the wrench QP, relative to the diagonal of A")
    max_depenetration_speed: Array = param(0.5, "m/s, cap on the separation speed the depth asks for")
    alternations: int = param(2, "rounds of force then centre-of-pressure solves (static)", minimum=1, static=True)


class VolumeCarry(NamedTuple):
    theta: Array  # (n, 2) m, centre of pressure in the contact plane (tangents 1, 2) from the slot point
    slipping: Array  # (n,) bool, ended the step sliding on its kinetic cone: kinetic in the next step too


def init(model: Model, n: int) -> VolumeCarry:
    return VolumeCarry(jnp.zeros((n, 2), model.dtype), jnp.zeros((n,), bool))


def _from_world(frame: Array, delta: Array, twist_w: Array) -> Array:
    """A world twist (linear, angular) at the point ``slot + delta`` as the slot's 6 rows
    (contact frame at the slot point)."""
    omega = twist_w[3:]
    return jnp.concatenate([frame @ (twist_w[:3] - jnp.cross(omega, delta)), frame @ omega])


def _section(poly: geometry.Polyhedron, point: Array, normal: Array, frame: Array, pos: Array):
    """The volume's cross-section through ``point`` as 2-D boundary segments (start,
    stop (N, 2), counter-clockwise, in the slot's tangent coordinates about ``pos``)
    and their mask (N,)."""
    start, stop, mask = geometry.fan_section(poly, point, normal)
    return (start - pos) @ frame[1:].T, (stop - pos) @ frame[1:].T, mask


def torsion_radius(start: Array, stop: Array, mask: Array) -> Array:
    """m, the lever of a cross-section's torsional friction: ``mu f_n`` times this is
    the moment that a uniformly pressed region sliding in a spin about its centroid
    transmits, ``mu f_n`` times the mean distance of its points from the centroid.
    Taken as 0.94 ``sqrt(J / S)`` (``J`` the polar moment about the centroid, ``S``
    the area, both exact from the boundary segments (N, 2)): the mean distance is
    0.9428 of that for a disc and 0.9373 for a square."""
    cross = jnp.where(mask, start[:, 0] * stop[:, 1] - start[:, 1] * stop[:, 0], 0.0)
    area = 0.5 * jnp.sum(cross)
    safe = jnp.where(area > 0, area, 1.0)
    centroid = jnp.sum(cross[:, None] * (start + stop), 0) / (6.0 * safe)
    polar = jnp.sum(cross * (jnp.sum(start * start + start * stop + stop * stop, -1))) / 12.0
    ratio = polar / safe - jnp.sum(centroid * centroid)
    ok = (area > 0) & (ratio > 0)
    return jnp.where(ok, 0.94 * jnp.sqrt(jnp.where(ok, ratio, 1.0)), 0.0)


def _targets(model: Model, problem: Problem):
    """Per slot: whether it is a volume (m,), its target twist (m, 6) in the contact
    frame at the slot point, the cross-section's boundary segments ((m, N, 2) twice,
    (m, N)) and its torsion radius (m,) m."""
    p, dt = model.contact_params, model.opt.timestep
    c_ = problem.contacts
    vol = c_.volume
    is_volume = vol.valid & c_.active

    def one(poly, frame, pos, depth, valid):
        normal = frame[0]
        Q, c = moments.volume_moments(poly, normal, poly.centroid)
        # the fit at the centroid in the world, then as the slot's rows (Q_slot = T^T Q T)
        twist_w = moments.fit_twist(Q, c, 1e-12 * jnp.trace(Q) + 1e-30)
        twist = -p.contact_rate * _from_world(frame, poly.centroid - pos, twist_w)
        shift = jnp.maximum(SLIVER - depth, 0.0)
        twist = twist.at[0].add(-0.5 * p.contact_rate * shift)
        cap = p.max_depenetration_speed
        twist = twist * math.capped_scale(jnp.maximum(twist[0], 0.0), cap)
        speculative = jnp.zeros(6, twist.dtype).at[0].set(depth / dt)
        twist = jnp.where((depth < 0) | ~valid, speculative, twist)
        return (twist,) + _section(poly, poly.centroid, normal, frame, pos)

    twist, start, stop, mask = jax.vmap(one)(vol, c_.frame_w, c_.pos_w, c_.depth, is_volume)
    # point slots (no volume): push out at k depth (capped), or close at most the gap
    push = common.contact_targets(c_.depth, dt, common.pushed_out(p.contact_rate, p.max_depenetration_speed))
    point = jnp.zeros_like(twist).at[:, 0].set(push)
    mask = mask & is_volume[:, None]
    return (is_volume, jnp.where(is_volume[:, None], twist, point), (start, stop, mask),
            jax.vmap(torsion_radius)(start, stop, mask))


def _lever(theta: Array) -> Array:
    """(m, 6, 3): a force whose normal part acts at the contact-plane offset ``theta``
    (m, 2) as the slot's 6 rows, ``[f; r x f_n]`` with ``r = (0, theta_1, theta_2)``:
    the friction's moment about the normal is the torsion's (module docstring)."""
    r = jnp.concatenate([jnp.zeros_like(theta[:, :1]), theta], -1)
    eye = jnp.broadcast_to(jnp.eye(3, dtype=theta.dtype), r.shape[:1] + (3, 3))
    return jnp.concatenate([eye, math.skew(r) * jnp.array([1.0, 0.0, 0.0], theta.dtype)], 1)


def _polygon_qp(P: Array, q: Array, start: Array, stop: Array, mask: Array, keep: Array) -> Array:
    """argmin 1/2 t^T P t + q^T t over a convex polygon given by its boundary segments
    (start, stop (N, 2), counter-clockwise, mask (N,)): the unconstrained minimum if
    inside (left of every segment), else the best point of the segments. An empty
    polygon keeps ``keep``."""
    if start.shape[0] == 0:  # a scene without polyhedral pairs: point slots only
        return keep
    reg = 1e-9 * jnp.trace(P) + 1e-30
    Pr = P + reg * jnp.eye(2, dtype=P.dtype)
    lin = q - reg * keep
    det = Pr[0, 0] * Pr[1, 1] - Pr[0, 1] * Pr[1, 0]  # 2x2 in closed form (no LAPACK call)
    ok = det > 0  # no normal force (P = 0, the regularization underflows in float32): stay
    free = -jnp.stack([Pr[1, 1] * lin[0] - Pr[0, 1] * lin[1], Pr[0, 0] * lin[1] - Pr[1, 0] * lin[0]])
    free = jnp.where(ok, free / jnp.where(ok, det, 1.0), keep)
    edge = stop - start
    cross = edge[:, 0] * (free[1] - start[:, 1]) - edge[:, 1] * (free[0] - start[:, 0])
    inside = jnp.all(jnp.where(mask, cross >= 0, True))
    curv = jnp.einsum("ki,ij,kj->k", edge, Pr, edge)
    slope = jnp.einsum("ki,ki->k", edge, start @ Pr.T + lin)
    t = jnp.clip(-slope / jnp.maximum(curv, 1e-30), 0.0, 1.0)
    cand = start + t[:, None] * edge
    value = 0.5 * jnp.einsum("ki,ij,kj->k", cand, Pr, cand) + cand @ lin
    best = cand[jnp.argmin(jnp.where(mask, value, jnp.inf))]
    out = jnp.where(inside, free, best)
    return jnp.where(jnp.any(mask), out, keep)


def solve(model: Model, problem: Problem, carry: VolumeCarry) -> Solution:
    """One step of the volume model on the problem's m slots and nr rows."""
    p, opt, space = model.contact_params, model.opt, problem.space
    c_, rows, m, nr = problem.contacts, problem.rows, problem.m, problem.nr
    dtype = space.b.dtype
    limit = common.limit_targets(rows, opt.timestep, common.pushed_out(p.contact_rate, p.max_depenetration_speed))
    relax = p.contact_relaxation * jnp.diagonal(space.A)
    H = common.add_diagonal(space.A, relax[:6 * m], rows, relax[6 * m:])
    lower, upper = common.cone_bounds(m, rows)
    if m == 0:  # generic rows only (a robot without geoms)
        g = jnp.where(rows.active, space.b - limit, 0.0)
        x, st = qp.solve(qp.QP(H, g, lower, upper, jnp.zeros((0,), dtype)), jnp.zeros((nr,), dtype),
                         opt.solver_tol, max_iter=opt.solver_iterations, adjoint=opt.adjoint,
                         smoothing=opt.gradient_smoothing)
        return Solution(jnp.where(rows.active, x, 0.0), carry, common.as_stats(st))
    is_volume, twist, section, radius = _targets(model, problem)
    active6 = common.row_mask(problem)
    target = jnp.concatenate([twist.reshape(-1), limit])
    g = jnp.where(active6, space.b - target, 0.0)
    # the carry re-indexed to this step's slots: the centres of kept volume slots
    theta0 = jnp.where(is_volume[:, None] & problem.kept[:, None], carry.theta, 0.0)
    prev = problem.prev_impulse
    f0 = prev[:, :3]
    # the torsions as forces at the radius (``tau = rho s``): a pure moment about each
    # slot's normal (row 3 of its 6), scaled like the forces for the solver's step
    torsion_cols = np.zeros((6 * m + nr, m))
    torsion_cols[6 * np.arange(m) + 3, np.arange(m)] = 1.0
    torsion_cols = jnp.asarray(torsion_cols, dtype) * radius
    torsion0 = jnp.where(is_volume & (radius > 0), prev[:, 3] / jnp.where(radius > 0, radius, 1.0), 0.0)
    y0 = jnp.concatenate([f0.reshape(-1), torsion0, jnp.zeros((nr,), dtype)])

    def levers(theta):
        """x = G(theta) y: the forces at their centres, the torsions, the generic rows."""
        G = block_diagonal(_lever(theta), nr)
        return jnp.concatenate([G[:, :3 * m], torsion_cols, G[:, 3 * m:]], 1)

    def torsion_bounds(y, mu):
        """(3m + m + nr,) twice: the torsions' forces within ``mu f_n`` (the forces' own
        cone is the QP's)."""
        reach = jnp.where(is_volume & (radius > 0), mu * jnp.maximum(y[:3 * m:3], 0.0), 0.0)
        return (jnp.concatenate([lower[:3 * m], -reach, lower[3 * m:]]),
                jnp.concatenate([upper[:3 * m], reach, upper[3 * m:]]))

    H_ii = jnp.einsum("iaib->iab", H[:6 * m, :6 * m].reshape(m, 6, m, 6))  # each slot's own block

    def inside(y, lo, hi):
        """The warm start with its interval entries (after the 3m cone entries) in bounds."""
        return y.at[3 * m:].set(jnp.clip(y[3 * m:], lo[3 * m:], hi[3 * m:]))

    def forces(G, y, gs, mu):
        Hy = G.T @ H @ G
        lo, hi = torsion_bounds(y, mu)
        y, st = qp.solve(qp.QP(0.5 * (Hy + Hy.T), G.T @ gs, lo, hi, mu), inside(y, lo, hi), opt.solver_tol,
                         max_iter=opt.solver_iterations, block=(3, m), adjoint=opt.adjoint,
                         smoothing=opt.gradient_smoothing)
        return y, st, G @ y

    def pressure_centres(theta, y, x, gs):
        """Each theta's exact 2-D QP with the forces ``y`` (rows ``x = G(theta) y``) and
        the other slots fixed."""
        grad = H @ x + gs
        f = y[:3 * m].reshape(m, 3)
        x0 = jnp.concatenate([f, (radius * y[3 * m:4 * m])[:, None], jnp.zeros_like(f[:, 1:])], -1)
        other = grad[:6 * m].reshape(m, 6) - jnp.einsum("mij,mj->mi", H_ii, x[:6 * m].reshape(m, 6))
        z = jnp.zeros_like(f[:, 0])
        E = jnp.stack([jnp.stack([z, z], -1)] * 4 + [jnp.stack([z, f[:, 0]], -1), jnp.stack([-f[:, 0], z], -1)], 1)
        P = jnp.einsum("mai,mab,mbj->mij", E, H_ii, E)
        q = jnp.einsum("mai,ma->mi", E, jnp.einsum("mab,mb->ma", H_ii, x0) + other)
        new = jax.vmap(_polygon_qp)(P, q, *section, theta)
        return jnp.where(is_volume[:, None], new, 0.0)

    held = problem.kept & carry.slipping

    def friction(v6):
        """The friction mode from the slip of the slots with row velocities ``v6`` (m, 6)
        (static cone ``mu_s`` when it sticks, kinetic ``mu_k`` when it slips, or when it
        slid on its kinetic cone at the last step's end) and De Saxce's shift ``mu
        |v_t|`` on the normal target (the cone QP alone would lift a sliding body at
        ``mu |v_t|``)."""
        vt = common.tangential_speed(v6)
        spin = radius * v6[:, 3]  # the region's slip from its spin about the normal
        slipping, mu = common.friction_mode(problem.slots.friction, math.safe_norm(jnp.stack([vt, spin], -1)),
                                            opt.slip_speed, c_.active, held)
        return mu.astype(dtype), common.desaxce_shift(slipping, mu, vt), slipping

    # the first round's moments of the normal forces, u = theta f_n = rho w, free within
    # the section's bounding box times the last step's f_n: rows 4 and 5 are
    # (u_2, -u_1), scaled like the forces (the torsions' reason)
    start, _, mask = section
    has_box = jnp.any(mask, 1) & (radius > 0)
    # (m, 2) m, the section's bounding box; a slot without a section gets [0, 0]
    box_lo = jnp.where(has_box[:, None], jnp.where(mask[..., None], start, jnp.inf).min(1, initial=jnp.inf), 0.0)
    box_hi = jnp.where(has_box[:, None], jnp.where(mask[..., None], start, -jnp.inf).max(1, initial=-jnp.inf), 0.0)
    safe_radius = jnp.where(radius > 0, radius, 1.0)
    moment_cols = np.zeros((6 * m + nr, 2 * m))
    moment_cols[6 * np.arange(m) + 5, 2 * np.arange(m)] = -1.0
    moment_cols[6 * np.arange(m) + 4, 2 * np.arange(m) + 1] = 1.0
    moment_cols = jnp.asarray(moment_cols, dtype) * jnp.repeat(radius, 2)

    def free_forces(theta, y, gs, mu):
        """The forces with each normal force's moment free in the box (the exact joint
        answer where the best centre lies inside the section) and their centres
        ``theta = u / f_n`` (the last ones without a normal force)."""
        G0 = levers(jnp.zeros_like(theta))
        G = jnp.concatenate([G0[:, :4 * m], moment_cols, G0[:, 4 * m:]], 1)
        reach = jnp.where(has_box, jnp.maximum(y[:3 * m:3], 0.0) / safe_radius, 0.0)[:, None]
        w_lo, w_hi = (box_lo * reach).reshape(-1), (box_hi * reach).reshape(-1)
        lo, hi = torsion_bounds(y, mu)
        lo = jnp.concatenate([lo[:4 * m], w_lo, lo[4 * m:]])
        hi = jnp.concatenate([hi[:4 * m], w_hi, hi[4 * m:]])
        w0 = (theta * reach).reshape(-1)
        yw = inside(jnp.concatenate([y[:4 * m], w0, y[4 * m:]]), lo, hi)
        Hy = G.T @ H @ G
        yw, st = qp.solve(qp.QP(0.5 * (Hy + Hy.T), G.T @ gs, lo, hi, mu), yw, opt.solver_tol,
                          max_iter=opt.solver_iterations, block=(3, m), adjoint=opt.adjoint,
                         smoothing=opt.gradient_smoothing)
        fn = yw[:3 * m:3]
        moment = yw[4 * m:6 * m].reshape(m, 2) * radius[:, None]
        ok = (fn > 0)[:, None]
        theta = jnp.where(ok, jnp.where(ok, moment, 0.0) / jnp.where(ok, fn[:, None], 1.0), theta)
        # no derivative: the rows x carry the forces' own; the next round takes these
        # centres only as its start for slots without a normal force (the polygon
        # QP's near-singular step there turned their cotangents into NaN)
        theta = jax.lax.stop_gradient(jnp.clip(theta, box_lo, box_hi))
        return theta, jnp.concatenate([yw[:4 * m], yw[6 * m:]]), st, G @ yw

    def round_(state, first):
        """The forces and the centres of pressure: at the first round the forces with
        free moments and their centres; at the others the centres for the current
        forces (``pressure_centres``: inside the section), then the forces at them."""
        theta, y, x, (mu, shift, slipping), _, stats = state
        gs = common.add_to_normals(g, problem, shift)
        if first:
            theta, y, st, x = free_forces(theta, y, gs, mu)
        else:
            theta = pressure_centres(theta, y, x, gs)
            y, st, x = forces(levers(theta), y, gs, mu)
        f, torsion = y[:3 * m].reshape(m, 3), y[3 * m:4 * m]
        saturated = ((math.safe_norm(f[:, 1:]) >= (1.0 - 1e-3) * mu * f[:, 0])
                     | ((radius > 0) & (jnp.abs(torsion) >= (1.0 - 1e-3) * mu * f[:, 0])))
        on_cone = slipping & saturated & (f[:, 0] > 0)
        v6, _ = common.split(space.A @ x + space.b, problem)
        return (theta, y, x, friction(v6), on_cone, common.merge_stats(stats, st)), None

    init_state = (theta0, y0, None, friction(common.split(common.start_velocity(problem), problem)[0]), held,
                  zero_stats(dtype))  # the first round reads no rows
    state, _ = round_(init_state, True)
    (theta, _, x, _, on_cone, stats), _ = jax.lax.scan(lambda st_, _: round_(st_, False), state, None,
                                                       length=p.alternations - 1)
    return Solution(common.mask(problem, x), VolumeCarry(jnp.where(is_volume[:, None], theta, 0.0), on_cone),
                    stats)


register(ContactModel("volume", VolumeParams, init, solve,
                      "one wrench per intersection volume, centre of pressure in its cross-section",
                      collision="volume", slot_rows=6))
