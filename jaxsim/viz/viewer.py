"""Interactive 3-D trajectory viewer on plotly.

``animate`` turns a Model and a rollout into a plotly ``Figure``: one ``Mesh3d`` per
environment holding every moving geom (so a frame updates one vertex array per env,
not one trace per geom), the static geoms drawn once, optional contact points and
contact-force arrows, and play/pause buttons with a time slider. Shown inline in
Jupyter (plotly's own renderer), or written by ``save_html`` as one self-contained
HTML file (plotly.js embedded) that a browser opens with no network.

Why plotly: it is maintained, installs from PyPI with nothing compiled, has animation
frames with a slider and buttons built in, renders inline in Jupyter, and embeds its
JavaScript in the file, which is what working offline needs (see the docs' Viewer page).
"""

from __future__ import annotations

import functools
import math
import os

import jax
import numpy as np

from jaxsim.kinematics import forward_kinematics
from jaxsim.types import GeomType, Model, State
from jaxsim.viz.shapes import geom_mesh

FLOOR_RGB = ((0.80, 0.82, 0.85), (0.66, 0.69, 0.73))  # checker tiles
CONTACT_RGB = "rgb(220,30,30)"
FORCE_RGB = "rgb(230,120,20)"


def _go():
    try:
        import plotly.graph_objects as go
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("the viewer needs plotly: pip install -e '.[viz]' in the jaxsim checkout") from e
    return go


def _rgb(c) -> str:
    r, g, b = (int(round(255 * float(x))) for x in c[:3])
    return f"rgb({r},{g},{b})"


@functools.lru_cache(maxsize=1)
def _field_ranks() -> dict:
    """The rank of each Model array field of one (unbatched) model, by field path."""
    from jaxsim.builder import ModelBuilder

    reference = ModelBuilder().build()
    return {jax.tree_util.keystr(path): np.ndim(x) for path, x in
            jax.tree_util.tree_flatten_with_path(reference.replace(contact_params=None))[0]}


def _model_of(model: Model, e: int | None) -> Model:
    """Env ``e``'s model when ``model`` is a batch of models: the leaves with a leading
    batch axis are indexed, the others (shared by the batch, as ``jaxsim.randomize``
    leaves them) are kept."""
    if e is None:
        return model
    ranks = _field_ranks()

    def pick(path, x):
        rank = ranks.get(jax.tree_util.keystr(path), 0)  # contact parameters are scalars
        return x[e] if np.ndim(x) > rank else x

    return jax.tree_util.tree_map_with_path(pick, model)


def _frames(traj: State, e: int | None, fps: float, max_frames: int):
    """Indices of the time steps shown and their times (s)."""
    time = np.asarray(traj.time if e is None else traj.time[e]).reshape(-1)
    n = time.shape[0]
    dt = float(time[1] - time[0]) if n > 1 else 1.0
    stride = max(1, int(round(1.0 / (fps * dt))) if dt > 0 else 1, math.ceil(n / max_frames))
    idx = np.arange(0, n, stride)
    if idx[-1] != n - 1:
        idx = np.append(idx, n - 1)
    return idx, time[idx]


def _pick(x, e: int | None, idx):
    x = np.asarray(x)
    return x[idx] if e is None else x[e, idx]


class _Geoms:
    """The drawable geoms of one model: local triangles of the moving ones merged."""

    def __init__(self, model: Model):
        topo = model.topo
        rgba = np.asarray(model.geom_rgba)
        visible = [g for g in range(topo.ngeom) if rgba[g, 3] > 0]
        self.static = [g for g in visible if topo.geom_body[g] == 0]
        self.moving = [g for g in visible if topo.geom_body[g] != 0]
        verts, faces, owner, colors, base = [], [], [], [], 0
        for g in self.moving:
            v, f = geom_mesh(model, g)
            verts.append(v)
            faces.append(f + base)
            owner.append(np.full(len(v), g))
            colors += [_rgb(rgba[g])] * len(f)
            base += len(v)
        self.local = np.concatenate(verts) if verts else np.zeros((0, 3))
        self.faces = np.concatenate(faces) if faces else np.zeros((0, 3), int)
        self.owner = np.concatenate(owner) if owner else np.zeros((0,), int)
        self.colors = colors

    def world(self, geom_pos_w, geom_rot_w):
        """(F, nvert, 3) world vertices of the moving geoms over F frames."""
        rot, pos = geom_rot_w[:, self.owner], geom_pos_w[:, self.owner]
        return np.einsum("fnij,nj->fni", rot, self.local) + pos


def _static_traces(go, model: Model, geoms: _Geoms, kin0, offsets, half_extent: float, center):
    """Static geoms, drawn once: planes as one checkered square under every env,
    other world geoms (terrain, fixed boxes) once per env offset."""
    traces = []
    for g in geoms.static:
        kind = GeomType(model.topo.geom_type[g])
        v, f = geom_mesh(model, g, plane_half_extent=half_extent)
        rot, pos = np.asarray(kin0.geom_rot_w[g]), np.asarray(kin0.geom_pos_w[g])
        copies = [np.zeros(3)] if kind == GeomType.PLANE else offsets
        for off in copies:
            w = v @ rot.T + pos + off
            if kind == GeomType.PLANE:  # centre the square under the scene
                w = w + np.array([center[0], center[1], 0.0]) - np.array([pos[0], pos[1], 0.0])
                cell = np.floor((v[f].mean(1)[:, :2] - v.min(0)[:2]) / (np.ptp(v[:, :2], 0) / 8))
                colors = [_rgb(FLOOR_RGB[int(p)]) for p in cell.sum(1) % 2]
            else:
                colors = [_rgb(np.asarray(model.geom_rgba[g]))] * len(f)
            traces.append(go.Mesh3d(x=w[:, 0], y=w[:, 1], z=w[:, 2], i=f[:, 0], j=f[:, 1], k=f[:, 2],
                                    facecolor=colors, flatshading=True, hoverinfo="skip",
                                    name=model.topo.geom_name[g] or f"geom{g}", showlegend=False))
    return traces


def _arrows(pos, force, scale, max_length):
    """Line segments p -> p + scale f, at most ``max_length`` long (impacts would
    otherwise draw metres-long arrows), separated by NaN (one Scatter3d trace)."""
    if len(pos) == 0:
        return np.zeros((0, 3))
    arrow = scale * force
    length = np.linalg.norm(arrow, axis=-1, keepdims=True)
    arrow = arrow * np.minimum(1.0, max_length / np.maximum(length, 1e-12))
    seg = np.stack([pos, pos + arrow, np.full_like(pos, np.nan)], 1)
    return seg.reshape(-1, 3)


def animate(model: Model, traj: State, *, env: int | None = None, envs=None,
            spacing: float | None = None, contacts: bool = False, forces: bool = False,
            force_scale: float | None = None, max_arrow: float = 1.0, fps: float = 30.0, max_frames: int = 600,
            title: str | None = None, height: int = 600):
    """An interactive 3-D animation of a rollout.

    Args:
      model: the Model simulated; a batch of models (from ``batch_models``) is indexed
        like the envs.
      traj: a trajectory State with a leading time axis (T, ...), as ``rollout``
        returns, or with leading (B, T, ...) env and time axes, as
        ``jax.vmap(rollout)`` returns.
      env: for a batched ``traj``, the one env to show (default 0).
      envs: for a batched ``traj``, several envs to show side by side on a grid.
      spacing: m between the envs on that grid (default: the largest xy span of one
        env's geoms over the rollout, plus 0.5 m).
      contacts: mark the active contact points (red).
      forces: draw contact forces as arrows (orange), the force on ``geom2`` (for a
        floor contact: on the robot) at its contact point.
      force_scale: m per N of the arrows (default: the total weight -> 0.5 m).
      max_arrow: m, longer arrows (impacts) are drawn this long.
      fps: frames per simulated second (the slider's resolution); at most
        ``max_frames`` frames in all.
      title: the figure's title.
      height: px.

    Returns:
      a ``plotly.graph_objects.Figure``; ``save_html`` writes it to a file.
    """
    go = _go()
    if not isinstance(traj, State):
        raise TypeError(f"animate: traj must be a jaxsim State with a time axis, got {type(traj).__name__}")
    qdim = np.ndim(traj.q)
    if qdim == 2:
        if env is not None or envs is not None:
            raise ValueError("animate: env/envs given but traj has no env axis (expected q of shape (B, T, nq))")
        chosen = [None]
    elif qdim == 3:
        nb = np.shape(traj.q)[0]
        chosen = [int(env)] if env is not None else ([int(e) for e in envs] if envs is not None else [0])
        bad = [e for e in chosen if not 0 <= e < nb]
        if bad:
            raise ValueError(f"animate: env(s) {bad} out of range for a batch of {nb}")
    else:
        raise ValueError(f"animate: traj.q must be (T, nq) or (B, T, nq), got shape {np.shape(traj.q)}")

    fk = jax.jit(jax.vmap(forward_kinematics, (None, 0)))
    model = jax.tree.map(np.asarray, model)  # host copies: geometry is read element-wise
    per_env = []
    for e in chosen:
        m = _model_of(model, e)
        idx, times = _frames(traj, e, fps, max_frames)
        kin = jax.tree.map(np.asarray, fk(m, _pick(traj.q, e, idx)))
        geoms = _Geoms(m)
        world = geoms.world(np.asarray(kin.geom_pos_w, np.float64), np.asarray(kin.geom_rot_w, np.float64))
        per_env.append(dict(model=m, idx=idx, times=times, kin=kin, geoms=geoms, world=world))
    nframes = min(len(p["idx"]) for p in per_env)
    times = per_env[0]["times"][:nframes]

    # layout: envs on a near-square grid, each centred on its own start position
    spans = [p["world"][..., :2].max((0, 1)) - p["world"][..., :2].min((0, 1)) if p["world"].size else np.ones(2)
             for p in per_env]
    if spacing is None:
        spacing = float(max(np.max(s) for s in spans)) + 0.5
    ncol = math.ceil(math.sqrt(len(chosen)))
    offsets = [np.array([(k % ncol) * spacing, (k // ncol) * spacing, 0.0]) for k in range(len(chosen))]
    for p, off in zip(per_env, offsets):
        p["world"] = p["world"] + off
    pts = np.concatenate([p["world"][:nframes].reshape(-1, 3) for p in per_env])
    lo, hi = (pts.min(0), pts.max(0)) if len(pts) else (-np.ones(3), np.ones(3))
    center = 0.5 * (lo + hi)
    half_extent = float(max(hi[0] - lo[0], hi[1] - lo[1]) / 2 + 0.5)

    m0 = per_env[0]["model"]
    weight = float(np.sum(np.asarray(m0.body_mass)) * np.linalg.norm(np.asarray(m0.opt.gravity)))
    if force_scale is None:
        force_scale = 0.5 / max(weight, 1e-9)

    data, moving_ids = _static_traces(go, m0, per_env[0]["geoms"], jax.tree.map(lambda x: x[0], per_env[0]["kin"]),
                                      offsets, half_extent, center), []

    def contact_points(p, e, off, f):
        t = p["idx"][f]
        active = _pick(traj.contact.active, e, t).astype(bool)
        pos = _pick(traj.contact.pos_w, e, t)[active] + off
        return pos, _pick(traj.contact.force_w, e, t)[active]

    def frame_traces(f):
        """The moving traces' coordinates at frame f, as plain dicts: frames are many,
        and plotly's per-object validation would dominate the run time."""
        out = []
        xyz = lambda kind, a: dict(type=kind, x=a[:, 0], y=a[:, 1], z=a[:, 2])  # noqa: E731
        for p, e, off in zip(per_env, chosen, offsets):
            out.append(xyz("mesh3d", p["world"][f].astype(np.float32)))
            if contacts or forces:
                pos, force = contact_points(p, e, off, f)
                if contacts:
                    out.append(xyz("scatter3d", pos.astype(np.float32)))
                if forces:
                    arrows = _arrows(pos, force, force_scale, max_arrow)
                    out.append(xyz("scatter3d", arrows.astype(np.float32)))
        return out

    first = [(go.Mesh3d if t["type"] == "mesh3d" else go.Scatter3d)(**{k: v for k, v in t.items() if k != "type"})
             for t in frame_traces(0)]
    k = 0
    for p, e in zip(per_env, chosen):
        g = p["geoms"]
        mesh = first[k]
        mesh.update(i=g.faces[:, 0], j=g.faces[:, 1], k=g.faces[:, 2], facecolor=g.colors, flatshading=True,
                    lighting=dict(ambient=0.55, diffuse=0.8, specular=0.15, roughness=0.7),
                    hoverinfo="skip", showlegend=False, name="robot" if e is None else f"env {e}")
        k += 1
        if contacts:
            first[k].update(mode="markers", marker=dict(size=4, color=CONTACT_RGB), name="contacts",
                            showlegend=False, hoverinfo="skip")
            k += 1
        if forces:
            first[k].update(mode="lines", line=dict(width=6, color=FORCE_RGB), name="contact forces",
                            showlegend=False, hoverinfo="skip")
            k += 1
    moving_ids = list(range(len(data), len(data) + len(first)))
    data = data + first

    frames = [dict(name=str(f), data=frame_traces(f), traces=moving_ids) for f in range(nframes)]
    z_lo = min(lo[2], 0.0) if any(GeomType(m0.topo.geom_type[g]) == GeomType.PLANE
                                   for g in per_env[0]["geoms"].static) else lo[2]
    x_rng = (center[0] - half_extent, center[0] + half_extent)
    y_rng = (center[1] - half_extent, center[1] + half_extent)
    z_rng = (z_lo - 0.05, max(hi[2], z_lo + 0.1) + 0.1)
    span = np.array([x_rng[1] - x_rng[0], y_rng[1] - y_rng[0], z_rng[1] - z_rng[0]])
    aspect = span / span.max()
    step_ms = 1000.0 / fps
    play = dict(label="Play", method="animate",
                args=[None, dict(frame=dict(duration=step_ms, redraw=True), fromcurrent=True,
                                 transition=dict(duration=0))])
    pause = dict(label="Pause", method="animate",
                 args=[[None], dict(frame=dict(duration=0, redraw=False), mode="immediate",
                                    transition=dict(duration=0))])
    # one slider step per frame; tick labels hidden (too many), the current time shown
    slider = dict(active=0, x=0.16, len=0.82, y=0.02, ticklen=0, font=dict(color="rgba(0,0,0,0)"),
                  currentvalue=dict(prefix="t = ", suffix=" s", font=dict(color="black", size=13)),
                  steps=[dict(method="animate", label=f"{t:.3f}",
                              args=[[str(f)], dict(mode="immediate", frame=dict(duration=0, redraw=True),
                                                   transition=dict(duration=0))])
                         for f, t in enumerate(times)])
    axis = lambda r, name: dict(range=list(r), title=name, showbackground=False,  # noqa: E731
                                gridcolor="rgb(225,225,225)", zerolinecolor="rgb(200,200,200)")
    layout = go.Layout(
        title=title, height=height, margin=dict(l=0, r=0, t=40 if title else 10, b=0),
        scene=dict(xaxis=axis(x_rng, "x (m)"), yaxis=axis(y_rng, "y (m)"), zaxis=axis(z_rng, "z (m)"),
                   aspectmode="manual", aspectratio=dict(x=aspect[0], y=aspect[1], z=aspect[2]),
                   camera=dict(eye=dict(x=1.1, y=-1.5, z=0.7)), uirevision="keep"),
        updatemenus=[dict(type="buttons", direction="left", x=0.0, y=0.02, xanchor="left", yanchor="top",
                          pad=dict(r=10, t=30), showactive=False, buttons=[play, pause])],
        sliders=[slider], paper_bgcolor="white")
    fig = go.Figure(data=data, layout=layout)
    # frames are added unvalidated (plotly's private but long-standing switch): they
    # only repeat the validated first frame's coordinates
    return go.Figure(data=fig.data, layout=fig.layout, frames=frames, _validate=False)


def to_html(fig) -> str:
    """The figure as one self-contained HTML page (plotly.js embedded: no network)."""
    return fig.to_html(include_plotlyjs=True, full_html=True, auto_play=False,
                       config=dict(displaylogo=False, responsive=True))


def save_html(fig, path) -> str:
    """Write ``fig`` as one self-contained HTML file (opens offline); returns the path."""
    path = os.fspath(path)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(to_html(fig))
    return path
