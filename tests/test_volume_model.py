"""Wakisaka & Sugihara's contact-volume model (``contact="volume"``) in scenes: a
resting cube (weight, centre of pressure under the centre of mass, height, drift), a
cube half over an edge (balanced inside the overlap, or tipping), SPEC section 3's two
scenes, a mixed scene where a ball keeps its point contact in the same solve, and
gradients."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsim
from jaxsim import ModelBuilder

from conftest import check_grads_rev, rollout_in_chunks

G = 9.81
A = 0.05  # cube half size, m
MASS = 0.5  # kg


def _quat(axis, deg):
    half = np.deg2rad(deg) / 2
    return np.r_[np.cos(half), np.sin(half) * np.asarray(axis, float)]


def _qmul(a, b):
    w1, x1, y1, z1 = a
    w2, x2, y2, z2 = b
    return np.array([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2])


def spec_quat(deg_x, deg_y):
    """SPEC 3's orientations: turned ``deg_x`` about x, then ``deg_y`` about y."""
    return _qmul(_quat((0, 1, 0), deg_y), _quat((1, 0, 0), deg_x))


def cube_scene(contact="volume", pos=(0, 0, A), quat=(1, 0, 0, 0), dt=2e-3, mass=MASS, ledge=None, ball=False,
               slab=False, **options):
    b = ModelBuilder(timestep=dt, contact=contact, **options)
    if slab:  # the floor as a slab: a box whose top is at z = 0, its edge along x at y = 0 (y < 0 is floor)
        b.add_geom("world", "box", SLAB_HALF, pos=SLAB_CENTRE, friction=(0.5, 0.3), name="floor")
    else:
        b.add_geom("world", "plane", (5, 5, 0.1), friction=(0.5, 0.3), name="floor")
    if ledge is not None:  # a fixed block whose top face is at z = 0.2, its edge at x = ledge
        b.add_geom("world", "box", (0.2, 0.2, 0.1), pos=(ledge - 0.2, 0, 0.1), friction=(0.5, 0.3), name="ledge")
    b.add_body("cube", pos=pos, quat=tuple(quat), mass=mass, inertia=(mass * (2 * A) ** 2 / 6,) * 3)
    b.add_joint("cube", "free")
    b.add_geom("cube", "box", (A, A, A), friction=(0.5, 0.3), name="box")
    if ball:
        b.add_body("ball", pos=(0.3, 0, 0.04), mass=0.2, inertia=(0.4 * 0.2 * 0.04 ** 2,) * 3)
        b.add_joint("ball", "free")
        b.add_geom("ball", "sphere", (0.04,), friction=(0.5, 0.3), name="ball")
    return b.build(jnp.float64)


_ROLLOUT = rollout_in_chunks  # one compile per model structure (conftest)


def _run(model, steps):
    return _ROLLOUT(model, jaxsim.make_state(model), jnp.zeros((steps, model.nu)))


# the contact-volume model's two cube scenes (SPEC 3; also
# experiments/volume_cube_scenes.py): (degrees about x, y), drop height
SCENES = {"edge": ((-15, -15), 0.4), "face": ((15, 0), 0.2)}
METHODS = {"volume": dict(contact="volume"), "vertices": dict(contact="relaxed", edge_contacts=False)}
DT, SETTLED = 1e-3, 1.0  # s
SLAB_HALF, SLAB_CENTRE = (0.2, 0.2, 0.1), (0.0, -0.2, -0.1)
SLAB_STEPS = 400  # the edge lands at 0.27 s


def rotation(quat: np.ndarray) -> np.ndarray:
    """(..., 3, 3) rotation matrices of (..., 4) unit quaternions (w, x, y, z)."""
    w, x, y, z = np.moveaxis(np.asarray(quat, float), -1, 0)
    return np.stack([np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
                     np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
                     np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1)], -2)


def slab_start(angles=SCENES["edge"][0], height=SCENES["edge"][1], beyond=0.01):
    """SPEC 3's first scene over the slab's edge: the cube's lowest corner ``beyond``
    (m) past the edge, its centre of mass over the slab. Its first contact is then one
    of its edges across the slab's edge (the contact-volume model's edge-to-edge contact): no vertex
    of either box is inside the other."""
    quat = spec_quat(*angles)
    corners = np.array([[x, y, z] for x in (-A, A) for y in (-A, A) for z in (-A, A)]) @ rotation(quat).T
    low = corners[np.argmin(corners[:, 2])]
    return (-low[0], beyond - low[1], height), quat


def slab_depth(traj) -> np.ndarray:
    """(T,) m, penetration depth of the cube into the slab per step: the smallest
    overlap over the 15 separating axes of two boxes (numpy, independent of jaxsim's
    collision code); negative while apart."""
    pos, R = np.asarray(traj.q[:, :3]), rotation(np.asarray(traj.q[:, 3:7]))
    d = pos - np.asarray(SLAB_CENTRE)
    axes = [np.broadcast_to(np.eye(3)[i], pos.shape) for i in range(3)] + [R[:, :, j] for j in range(3)]
    axes += [np.cross(np.eye(3)[i], R[:, :, j]) for i in range(3) for j in range(3)]
    depth = np.full(len(pos), np.inf)
    for axis in axes:
        norm = np.linalg.norm(axis, axis=-1)
        u = axis / np.maximum(norm, 1e-12)[:, None]
        reach = np.abs(u) @ np.asarray(SLAB_HALF) + A * np.abs(np.einsum("tij,ti->tj", R, u)).sum(-1)
        depth = np.where(norm > 1e-9, np.minimum(depth, reach - np.abs(np.einsum("ti,ti->t", d, u))), depth)
    return depth


def _axes_z(quat: np.ndarray) -> np.ndarray:
    """(T, 3) the world z component of the body's x, y, z axes."""
    w, x, y, z = quat.T
    return np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], 1)


def spec_trace(model, traj) -> dict:
    """Per step of a cube trajectory: penetration (m) of its lowest corner below the
    floor (from ``q``, independent of the collision code), total normal force (N),
    centre of pressure y (m, from the cube's centre; for point slots the normal-force-
    weighted mean of the points) and the tilt (deg) of its most upright axis."""
    corners = np.array([[x, y, z] for x in (-A, A) for y in (-A, A) for z in (-A, A)])
    quat, pos = np.asarray(traj.q[:, 3:7]), np.asarray(traj.q[:, :3])
    w, v = quat[:, :1], quat[:, 1:]
    cx = np.cross(v[:, None], corners[None])  # R x = x + 2 w (v x x) + 2 v x (v x x)
    world = corners[None] + 2 * w[:, None] * cx + 2 * np.cross(v[:, None], cx) + pos[:, None]
    cf = jax.vmap(lambda s: jaxsim.contact_forces(model, s))(traj)
    on = np.asarray(cf.active)
    fn = np.where(on, np.einsum("tki,tki->tk", np.asarray(cf.force2_w), np.asarray(cf.normal_w)), 0.0)
    total = fn.sum(1)
    cop_y = (fn * np.asarray(cf.cop_w)[..., 1]).sum(1) / np.where(total > 1e-9, total, np.nan) - pos[:, 1]
    tilt = np.degrees(np.arccos(np.clip(np.max(np.abs(_axes_z(quat)), 1), 0.0, 1.0)))
    return dict(penetration=np.maximum(-world[..., 2].min(1), 0.0), normal_force=total, cop_y=cop_y, tilt=tilt,
                speed=np.linalg.norm(np.asarray(traj.v[:, :2]), axis=1))


def spec_summary(tr: dict) -> dict:
    """Deepest penetration, mean normal force for t >= SETTLED (and over m g), when the
    face is down for good (tilt < 0.5 deg from then on), the largest step-to-step
    CoP-y jump after that and how many exceed 2 mm, and two phases of that: the
    slide (from 20 ms after the face is down, past its touchdown, to 5 ms before the
    stop), its mean CoP y while faster than 2 cm/s (Coulomb's answer: mu_k times the
    half size ahead) and largest jump, the largest jump at the stop (from 5 ms
    before until 20 ms after the cube first moves slower than 1 mm/s), and the
    CoP's largest distance from the centre in the 20 ms from the second step after
    that one (kinetic friction stops 1 mm/s within the next 1 ms step; at rest
    Coulomb's answer is 0, so what is left is the ringing before rest)."""
    t = np.arange(1, len(tr["normal_force"]) + 1) * DT
    settled = t >= SETTLED
    tilted = np.flatnonzero(tr["tilt"] >= 0.5)
    first = int(tilted.max()) + 1 if tilted.size else 0
    jumps = np.abs(np.diff(tr["cop_y"][first:]))
    slow = np.flatnonzero(tr["speed"][first:] < 1e-3)
    stop = first + int(slow[0]) if slow.size else len(t)
    index = np.arange(len(t))
    sliding = (index >= first + 20) & (index < stop - 5) & (tr["speed"] > 0.02) & (tr["normal_force"] > 0)

    def largest_jump(lo, hi):
        step = np.abs(np.diff(tr["cop_y"][max(lo, first):hi]))
        return float(np.nanmax(step) * 1e3) if step.size and np.isfinite(step).any() else None

    return dict(max_penetration_mm=float(tr["penetration"].max() * 1e3),
                settled_normal_force=float(tr["normal_force"][settled].mean()),
                settled_over_mg=float(tr["normal_force"][settled].mean() / (MASS * G)),
                face_down_s=float(t[first]) if first < len(t) else None,
                max_cop_jump_mm=float(np.nanmax(jumps) * 1e3) if jumps.size else None,
                cop_jumps_over_2mm=int(np.sum(jumps > 2e-3)),
                sliding_cop_y_mm=float(np.mean(tr["cop_y"][sliding]) * 1e3) if sliding.any() else None,
                stop_s=float(t[stop]) if stop < len(t) else None,
                slide_cop_jump_mm=largest_jump(first + 20, stop - 5),
                stop_cop_jump_mm=largest_jump(stop - 5, stop + 20),
                after_stop_cop_mm=(float(np.nanmax(np.abs(tr["cop_y"][stop + 2:stop + 22])) * 1e3)
                                   if stop + 2 < len(t) else None))


def test_cube_rests_with_its_centre_of_pressure_under_the_com():
    """5 s at rest: the wrench is m g up, the centre of pressure under the com within
    0.1 mm, the height within 1 mm of 0.05 m, no drift."""
    model = cube_scene()
    final, traj = _run(model, 2500)
    force, torque = jaxsim.body_contact_wrench(model, final, "cube")
    np.testing.assert_allclose(np.asarray(force), [0, 0, 0.5 * G], atol=5e-3 * 0.5 * G)
    assert np.abs(np.asarray(torque)).max() < 1e-6
    cf = jaxsim.contact_forces(model, final)
    (slot,) = np.flatnonzero(np.asarray(cf.active))
    cop = np.asarray(cf.cop_w[slot])
    q = np.asarray(final.q)
    assert np.abs(cop[:2] - q[:2]).max() < 1e-4
    assert abs(q[2] - A) < 1e-3 and not bool(final.nonfinite)
    late = np.asarray(traj.q[1250:])
    assert np.ptp(late[:, :3], 0).max() < 1e-6


def test_spinning_cube_brakes_at_the_torsional_friction_rate():
    """A cube resting on the floor, spun at 3 rad/s about the vertical: it slows at
    ``mu_k m g rho / I_z``, ``rho`` the mean distance of a uniformly pressed square
    face from its centre, ``(sqrt 2 + ln(1 + sqrt 2)) / 6`` of the side (the model's
    ``0.94 sqrt(J / S)`` is 0.28 % above it), within 1 %, stops within 2 steps of
    that time, and does not move sideways. Without torsion it spun on forever."""
    model = cube_scene()
    rest, _ = _run(model, 1000)
    _, traj = _ROLLOUT(model, rest.replace(v=rest.v.at[5].set(3.0)), jnp.zeros((1000, 0)))
    w = np.asarray(traj.v[:, 5])
    dt = float(model.opt.timestep)
    rho = 2 * A * (np.sqrt(2) + np.log(1 + np.sqrt(2))) / 6
    rate = 0.3 * G * rho / ((2 * A) ** 2 / 6)  # rad/s^2: mu_k m g rho / (m (2A)^2 / 6)
    np.testing.assert_allclose((w[2] - w[12]) / (10 * dt), rate, rtol=0.01)
    stop = int(np.flatnonzero(np.abs(w) < 1e-3)[0]) + 1
    assert abs(stop * dt - 3.0 / rate) <= 2 * dt
    assert np.abs(np.asarray(traj.q[:, :2] - rest.q[:2])).max() < 1e-6 and not bool(traj.nonfinite[-1])


def test_cube_half_over_an_edge_balances_or_tips():
    """On a ledge (edge at x = 0): with the com 2 cm inside, the centre of pressure lies
    in the overlap (x < 0) and the wrench carries the weight; with the com 2 cm beyond
    the edge, the cube tips off."""
    held = cube_scene(pos=(-0.02, 0, 0.2 + A), ledge=0.0)
    tips = cube_scene(pos=(0.02, 0, 0.2 + A), ledge=0.0)
    final, _ = _run(held, 1000)
    cf = jaxsim.contact_forces(held, final)
    on = np.asarray(cf.active)
    force = np.asarray(cf.force2_w)[on].sum(0)
    cop = np.asarray(cf.cop_w)[on]
    np.testing.assert_allclose(force, [0, 0, 0.5 * G], atol=5e-3 * 0.5 * G)
    assert on.sum() == 1 and -2 * A < cop[0, 0] < 0.0
    np.testing.assert_allclose(cop[0, 0], float(final.q[0]), atol=1e-4)  # under the com
    assert abs(float(final.q[2]) - 0.2 - A) < 1e-3
    final, _ = _run(tips, 1000)
    assert float(final.q[2]) < 0.2  # fell off the ledge


def test_spec_scenes_edge_and_face_landing():
    """SPEC 3's two scenes (dt 1 ms, 1.5 s), volume against point contacts at the
    vertices: the edge landing stays within 5 mm of the floor under ``volume``; in the
    face landing the mean normal force once settled (t >= 1 s) agrees with the point
    model's within 5 %. Deepest penetrations and the CoP's largest step-to-step jump
    once the face is down are printed for both (experiments/volume_cube_scenes.py plots them).
    That jump is not below 2 mm for either: a rigid cube's centre of pressure jumps
    when its last edge slaps down and when the slide stops (Coulomb's friction torque
    vanishes). Within those phases, the volume's centre of pressure moves by less
    than 2 mm a step while the face slides, and jumps less than the vertex contacts'
    around the stop (Wakisaka & Sugihara's "gentler oscillation before rest"), by less than
    Coulomb's own drop there (mu_k times the half size), and once stopped its centre
    of pressure stays within 1 mm of the centre of mass.
    On a plane the vertex contacts stop the edge too (its ends are vertices); the
    first scene over the edge of a floor slab, where the cube's edge meets the slab's,
    is where they let it through: there ``volume`` stays within 5 mm and the vertex
    contacts sink deeper than 5 mm."""
    out = {}
    for method, options in METHODS.items():
        pos, quat = slab_start()
        model = cube_scene(pos=pos, quat=quat, dt=DT, slab=True, **options)
        final, traj = _run(model, SLAB_STEPS)
        assert not bool(final.nonfinite)
        out["slab", method] = deepest = float(slab_depth(traj).max() * 1e3)
        print(f"edge over a slab's edge, {method}: deepest {deepest:.3f} mm")
    assert out["slab", "volume"] < 5.0 < out["slab", "vertices"]
    for scene, (angles, height) in SCENES.items():
        for method, options in METHODS.items():
            model = cube_scene(pos=(0, 0, height), quat=spec_quat(*angles), dt=DT, **options)
            final, traj = _run(model, 1500)
            assert not bool(final.nonfinite)
            assert abs(float(final.q[2]) - A) < 2e-3  # settled on a face
            out[scene, method] = r = spec_summary(spec_trace(model, traj))
            print(f"{scene} {method}: deepest {r['max_penetration_mm']:.3f} mm, settled F_n / m g "
                  f"{r['settled_over_mg']:.4f}, largest CoP-y jump after the face is down "
                  f"{r['max_cop_jump_mm']:.2f} mm (while sliding {r['slide_cop_jump_mm'] or float('nan'):.3f}, at the stop "
                  f"{r['stop_cop_jump_mm']:.2f}, off the centre after it {r['after_stop_cop_mm']:.2f})")
    assert out["edge", "volume"]["max_penetration_mm"] < 5.0
    np.testing.assert_allclose(out["face", "volume"]["settled_normal_force"],
                               out["face", "vertices"]["settled_normal_force"], rtol=0.05)
    np.testing.assert_allclose(out["face", "volume"]["settled_over_mg"], 1.0, rtol=0.05)
    for scene in SCENES:
        volume, vertices = out[scene, "volume"], out[scene, "vertices"]
        assert volume["slide_cop_jump_mm"] < 2.0
        assert volume["stop_cop_jump_mm"] < min(vertices["stop_cop_jump_mm"], 0.3 * A * 1e3)
        assert volume["after_stop_cop_mm"] < 1.0
    np.testing.assert_allclose(out["face", "volume"]["sliding_cop_y_mm"], 0.3 * A * 1e3, atol=0.5)


def test_mixed_scene_ball_keeps_its_point_contact():
    model = cube_scene(ball=True)
    final, _ = _run(model, 500)
    q = np.asarray(final.q)
    assert abs(q[2] - A) < 1e-3 and abs(q[9] - 0.04) < 1e-3 and not bool(final.nonfinite)
    np.testing.assert_allclose(np.asarray(jaxsim.body_contact_wrench(model, final, "ball")[0]),
                               [0, 0, 0.2 * G], atol=5e-3 * 0.2 * G)


@pytest.mark.benchmark  # the default suite: test_parameter_gradients.py (volume), every parameter
def test_gradient_of_a_volume_step():
    """``check_grads`` (reverse mode, float64; one compile: ``conftest.check_grads_rev``)
    on one step of a cube settling on the floor (a generic pose: tilted about x and y,
    the centre of pressure off the slot point; an exactly flat cube sits on a kink,
    where central differences average two one-sided slopes). The QP is solved to 1e-10
    so that the differences are accurate. (A rollout's gradient through landing and
    tipping under this model, with respect to every physical parameter, is checked in
    ``test_parameter_gradients.py``.)"""
    model = cube_scene(quat=spec_quat(2, 1), pos=(0.01, 0, A + 0.002), solver_tol=1e-10)
    rest, _ = _run(model, 25)  # in contact, force and centre of pressure under way

    def one_step(q, v):
        s = jaxsim.step(model, rest.replace(q=q, v=v))
        return jnp.concatenate([s.q, s.v])

    check_grads_rev(one_step, (rest.q, rest.v), eps=1e-6, atol=1e-3, rtol=1e-3)


def test_ball_alone_rolls_at_five_sevenths():
    """A scene with no polyhedral pair (no volume slot at all) runs under ``volume``: a
    ball launched at 1 m/s slides, then rolls without slip at 5/7 of that speed."""
    b = ModelBuilder(timestep=2e-3, contact="volume")
    b.add_geom("world", "plane", (5, 5, 0.1), friction=(0.5, 0.5))
    b.add_body("ball", pos=(0, 0, 0.04), mass=0.2, inertia=(0.4 * 0.2 * 0.04 ** 2,) * 3)
    b.add_joint("ball", "free")
    b.add_geom("ball", "sphere", (0.04,), friction=(0.5, 0.5))
    model = b.build(jnp.float64)
    final, _ = _ROLLOUT(model, jaxsim.make_state(model, v=jnp.zeros(6).at[0].set(1.0)), jnp.zeros((250, 0)))
    v = np.asarray(final.v)
    np.testing.assert_allclose(v[0], 5 / 7, rtol=1e-3)
    np.testing.assert_allclose(v[4] * 0.04, v[0], rtol=1e-3)  # rolling: omega_y r = v_x
