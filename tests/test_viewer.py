"""The 3-D viewer: shapes against analytic volumes, drawn geometry against MuJoCo's
kinematics, and the saved file rendered in headless Chromium (console errors, a
screenshot with the scene in it)."""

import importlib.util
import io
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsim
from conftest import rollout_in_chunks
from jaxsim.viz import shapes

go = pytest.importorskip("plotly.graph_objects")


def mesh_volume(verts, faces):
    """Signed volume by the divergence theorem (> 0: faces wound outwards)."""
    a, b, c = (verts[faces[:, k]] for k in range(3))
    return float(np.sum(np.einsum("ij,ij->i", a, np.cross(b, c))) / 6.0)


def closed(faces):
    """Every edge is used by exactly two faces, once in each direction."""
    edges = np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]])
    fwd = {tuple(e) for e in edges}
    return len(fwd) == len(edges) and all((b, a) in fwd for a, b in fwd)


@pytest.mark.parametrize("radius,half", [(0.1, 0.0), (0.05, 0.2)])
def test_rounded_shapes_close_and_bound_their_volume(radius, half):
    v, f = shapes._rounded(radius, half)
    assert closed(f)
    exact = np.pi * radius ** 2 * (2 * half + 4 * radius / 3)
    vol = mesh_volume(v, f)
    # an inscribed polyhedron: a little smaller than the true shape, never larger
    assert 0.85 * exact < vol < exact
    np.testing.assert_allclose(np.linalg.norm(v - np.clip(v * [0, 0, 1], -half, half), axis=1), radius, rtol=1e-12)


def test_box_mesh():
    v, f = shapes._box((0.1, 0.2, 0.3))
    assert closed(f)
    np.testing.assert_allclose(mesh_volume(v, f), 0.2 * 0.4 * 0.6, rtol=1e-12)


@pytest.fixture(scope="module")
def humanoid_run():
    """gymnasium's humanoid falling for 1.2 s (float32, 16 deepest contacts)."""
    from conftest import gymnasium_dir
    from jaxsim.io import load_mjcf

    path = f"{gymnasium_dir()}/humanoid.xml"
    model = load_mjcf(path, max_contacts=16)
    steps = 400  # 1.2 s at its 3 ms: on the floor from about 0.6 s
    s0 = jaxsim.make_state(model, v=jnp.zeros(model.nv, model.dtype).at[4].set(2.0))  # tips forwards
    _, traj = rollout_in_chunks(model, s0, jnp.zeros((steps, model.nu), model.dtype))
    return path, model, traj


def test_drawn_geoms_sit_where_mujoco_puts_them(humanoid_run):
    """Frame k of the figure: each geom's vertex centroid (its centre: the meshes are
    symmetric) equals MuJoCo's geom_xpos at the same qpos."""
    mujoco = pytest.importorskip("mujoco")
    from jaxsim.viz.viewer import _Geoms, _frames

    path, model, traj = humanoid_run
    fig = jaxsim.viz.animate(model, traj, fps=10)
    times = np.array([float(st.label) for st in fig.layout.sliders[0].steps])
    assert len(fig.frames) == len(times) >= 13  # 1.2 s at 10 frames/s and the last state
    assert np.all(np.abs(np.diff(times)[:-1] - 0.1) < float(model.opt.timestep))
    np.testing.assert_allclose(times[-1], float(traj.time[-1]), atol=1e-3)  # labels: 1 ms
    geoms = _Geoms(jax.tree.map(np.asarray, model))
    m = mujoco.MjModel.from_xml_path(path)
    d = mujoco.MjData(m)
    for k in (0, len(times) - 1):
        frame = fig.frames[k].data[0]
        verts = np.stack([frame.x, frame.y, frame.z], -1)
        t = _frames(traj, None, 10, 600)[0][k]
        d.qpos[:] = np.asarray(traj.q[t], np.float64)
        mujoco.mj_kinematics(m, d)
        for g in geoms.moving:
            centre = verts[geoms.owner == g].mean(0)
            np.testing.assert_allclose(centre, d.geom_xpos[g], atol=2e-5)
    assert {"Play", "Pause"} <= {b.label for b in fig.layout.updatemenus[0].buttons}


def test_bad_trajectories_are_rejected(humanoid_run):
    _, model, traj = humanoid_run
    with pytest.raises(ValueError, match="no env axis"):
        jaxsim.viz.animate(model, traj, env=0)
    batched = jax.tree.map(lambda x: jnp.stack([x, x]), traj)
    with pytest.raises(ValueError, match="out of range"):
        jaxsim.viz.animate(model, batched, envs=[0, 2])
    with pytest.raises(TypeError, match="State"):
        jaxsim.viz.animate(model, traj.q)


def test_side_by_side_envs(humanoid_run):
    """Two envs of a batch on a grid: the second is the first moved by ``spacing``."""
    _, model, traj = humanoid_run
    batched = jax.tree.map(lambda x: jnp.stack([x, x]), traj)
    fig = jaxsim.viz.animate(model, batched, envs=[0, 1], spacing=3.0, fps=5)
    a, b = (np.stack([t.x, t.y, t.z], -1) for t in fig.frames[-1].data[:2])
    np.testing.assert_allclose(b - a, np.broadcast_to([3.0, 0.0, 0.0], a.shape), atol=1e-5)
    # a partly batched Model (jaxsim.randomize batches only the fields it draws)
    partial = model.replace(geom_size=jnp.stack([model.geom_size, model.geom_size]))
    fig2 = jaxsim.viz.animate(partial, batched, envs=[0, 1], spacing=3.0, fps=5)
    np.testing.assert_allclose(fig2.frames[-1].data[1].x, fig.frames[-1].data[1].x)


def _pixels(png):
    import matplotlib.image

    return (matplotlib.image.imread(io.BytesIO(png), format="png")[..., :3] * 255).astype(int)


def _script_sources(path):
    """``src`` of every <script> tag (script bodies are not parsed as HTML)."""
    from html.parser import HTMLParser

    found = []

    class Scripts(HTMLParser):
        def handle_starttag(self, tag, attrs):
            if tag == "script" and dict(attrs).get("src"):
                found.append(dict(attrs)["src"])

    Scripts().feed(open(path, encoding="utf-8").read())
    return found


def _browser_or_skip():
    from jaxsim.viz import browser

    required = os.environ.get("JAXSIM_REQUIRE_BROWSER") == "1"  # set by .ci/run
    missing = None if importlib.util.find_spec("playwright") else "python package playwright"
    if browser.find_chromium() is None:
        missing = "chromium (apt-get install chromium)"
    if missing:
        if required:
            pytest.fail(f"browser test needs {missing}")
        pytest.skip(f"browser test needs {missing}")
    return browser


@pytest.mark.parametrize("arrows", [False, True], ids=["plain", "contacts"])
def test_viewer_file_renders_in_chromium(humanoid_run, tmp_path, arrows):
    """The saved file opens offline in headless Chromium without console errors and
    the scene area shows the floor and the robot (its tan geoms); with arrows, at the
    landing the orange force arrows are drawn too (the red contact points are mostly
    hidden under the feet, so they are not counted). Pressing Play advances the slider."""
    from jaxsim.viz.viewer import _frames

    browser = _browser_or_skip()
    _, model, traj = humanoid_run
    fig = jaxsim.viz.animate(model, traj, contacts=arrows, forces=arrows, title="humanoid")
    path = jaxsim.viz.save_html(fig, tmp_path / "humanoid.html")
    assert _script_sources(path) == []  # self-contained: every script inline
    # the frame with the largest total contact force (a landing: arrows outside the body)
    idx = _frames(traj, None, 30, 600)[0]
    busiest = int(np.argmax(np.abs(np.asarray(traj.contact.force_w)[idx, :, 2]).sum(1)))
    out = browser.render(path, tmp_path / "shot.png", frame=busiest if arrows else None, play_s=0 if arrows else 1.0)
    assert out["errors"] == []
    x, y, w, h = out["scene_box"]
    scene = _pixels(out["png"])[y:y + h, x:x + w]
    assert scene.size > 0

    r, g, b = (scene[..., k] for k in range(3))
    orange = (r > 200) & (g > 90) & (g < 160) & (b < 80)  # the force arrows
    warm = (r - b > 40) & ~orange  # the robot's tan geoms, lit or shaded (the floor is grey-blue)
    assert float(np.mean(np.any(scene < 235, axis=-1))) > 0.05, "scene area blank"
    assert float(np.mean(warm)) > 0.002, "robot not drawn"
    if arrows:
        assert float(np.mean(orange)) > 1e-4, "no force arrows"
    else:
        assert out["slider"] > 0, "Play did not advance the animation"
