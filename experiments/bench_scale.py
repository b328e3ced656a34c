"""Scaling study: how jaxsim's step time (and memory) grows with batch, bodies and contacts,
next to MuJoCo MJX on the same scenes in the same run.

Every timing is one jitted call that advances a vmapped batch of environments by 10
steps (``--steps``) with ``jax.lax.scan`` (``bench_step.jaxsim_steps`` /
``bench_step.mjx_steps``), timed with ``benchutil.bench`` (compile excluded, best of
``--repeats`` loops of >= ``--min-time`` s; a call predicted to take over a second is
timed once after its warm-up). The figure of merit is seconds per env-step:
seconds per call / (batch * steps). jaxsim steps the batch ``parallel.default_chunk(model)``
envs at a time (``parallel.chunked_vmap``, as bench_step and ``jaxsim simulate --batch``
do on a CPU: none for the cube, 16 for the ant); the chunk is printed and stored. MJX
uses the Newton solver, and at batch > 1 its Cholesky is traced as ``jaxsim.linalg``'s
plain-JAX one (``bench_step.mjx_cholesky``: jaxlib's batched LAPACK kernel deadlocks on
2 cores). Everything is float32, ctrl = 0.

Studies (``--studies``, all four by default):

  batch     seconds per env-step and memory per env for batches ``--batches`` (1 ...
            4096) on two scenes: ``cube`` (``jaxsim.scenes.cube()``: a 0.1 m, 0.5 kg
            cube on a floor, dt 1 ms; MJX gets an MJCF twin of it, friction 0.5 where
            jaxsim has static 0.5 / kinetic 0.3) and ``ant`` (gymnasium's ant.xml,
            loaded by both, jaxsim with ``max_contacts=16`` as in bench_step). Both start
            from their own resting pose after 1 s of settling (bench_step's ``settle``)
            plus bench_step's noise (``random_states``). Memory per env is (argument + output + temp bytes) / batch of
            ``jax.jit(f).lower(...).compile().memory_analysis()``; compiling costs no
            run, so memory is also reported for batches whose timing was skipped. A
            least-squares line bytes = a + b * batch over all batches gives the largest
            batch that fits in 24 GB (24e9 bytes), per simulator and scene.
  bodies    seconds per env-step at batch ``--bodies-batch`` (16) against the number of
            bodies N (``--bodies-n``: 1 ... 64) on scenes built with
            ``jaxsim.ModelBuilder`` (MJX: MJCF twins written here; ``--bodies-scenes``,
            default chain and stack):
              chain      N 4 x 4 x 10 cm, 0.3 kg links hanging on hinges about y,
                         swinging from 0.5 rad at the root; no contact (geoms do not
                         collide), dt 1 ms
              ballchain  the same with ball joints (nv = 3N)
              stack      N free 0.1 m, 1 kg cubes stacked on a floor; only neighbours
                         may touch (every other pair excluded on both sides, so the
                         candidate pairs grow as N, not N^2: this measures the solve, not
                         an all-pairs broad phase); jaxsim ``max_contacts`` =
                         ``--stack-contacts-per-box`` (10) * N (jaxsim puts up to 8
                         points on a face-face pair, MuJoCo 4)
  contacts  seconds per env-step at batch ``--contacts-batch`` (16) against the number of
            active contacts, measured from the final state of the timed call
            (``state.contact.active``; MJX: contacts closer than their margin,
            ``dist < includemargin``), for
            ``--contacts-n`` (1 ... 64) contact points:
              nails      one free 1 kg plate (6 dofs) standing on N 1 cm sphere feet in
                         a 3 cm grid: only the contact count grows
              spheres    N free 1 kg, 5 cm spheres on the floor 0.2 m apart, that never
                         collide with each other: contacts and bodies grow together
  processes seconds per env-step of the same total batch (``--process-batches``: 1,024
            cubes, 256 ants) on one process with one CPU device, one process with two,
            and two processes of one device each started by ``python -m jaxsim.launch``
            (JAX's distributed runtime on localhost); each process makes its own rows of
            the batch, and the timed calls sit between two barriers, so they cover
            every process's share. Speed-up against one process on one device.

Start states of stack, nails and spheres: built touching (zero depth), then each side
runs ``--settle`` (0.2) s to its own rest (bench_step's reasoning: MuJoCo's soft
contacts rest deeper than jaxsim's), plus a tenth of bench_step's noise
(``quiet_states``: its full 0.5 mm pushes half the envs into the floor, and jaxsim
ejects them, so that half the contacts are gone within the 10 timed steps).

Where contact is involved, the jaxsim contact-QP iterations of the last step of the
warm-up call (``state.solver.iterations``, mean / max over envs), active contacts,
overflow (contacts dropped by ``max_contacts`` or by a pair's full candidate buffer,
summed over the call's steps) and non-finite envs are recorded. MJX
3.x never writes ``solver_niter`` in ``mjx.step`` (see bench_step), so no MJX count.

Limits, so that the default run stays under ~25 minutes on 2 CPU cores: a size whose
call or whose compile is predicted (power-law extrapolation of the curve's last two
points) to take longer than ``--max-call-s`` (12 s) or ``--max-compile-s`` (60 s) is not
timed, nor any larger size of that curve (the batch study still compiles them for
memory); a curve also stops after a compile longer than ``--max-compile-s``. MJX's
compile time grows steeply with the number of joints (a 64-hinge chain: 176 s, 64 ball
joints: 324 s on 2 cores), so its chains stop early. The stack stops at
``--stack-max-n`` (32): a 32-cube stack takes jaxsim ~6.5 s per call at batch 16. What
was skipped, and why, is printed and stored (``skipped``).

Exponents: for every curve, the least-squares slope of log(seconds per env-step) against
log(size) over the points with size >= ``--fit-min-batch`` (64) for the batch study
(slope 0: per-env cost independent of batch; -1: a call costs the same whatever the
batch) and >= ``--fit-min-n`` (4) for bodies and contacts (fixed overhead dominates
below; with fewer than two such points, all points are used). The range used is printed.

Run (from the repository root):

    python experiments/bench_scale.py                         # full run (~25 min, 2 cores)
    python experiments/bench_scale.py --quick                 # smoke test (< 2 min)
    python experiments/bench_scale.py --studies bodies --bodies-n 1 4 16 64 --max-call-s 30
    python experiments/bench_scale.py --batches 1 64 4096 16384 --max-call-s 60   # larger

Writes ``experiments/results/bench_scale.json`` (after every sub-study, so a run cut short
keeps what it measured) and ``bench_scale.png`` (one log-log panel per study).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import subprocess
import sys
import time
import traceback
from typing import Any

import jax
import jax.numpy as jnp
import matplotlib
import mujoco
import numpy as np
from mujoco import mjx

import jaxsim
from jaxsim import parallel, scenes
from jaxsim.io import load_mjcf
from bench_collision import load_mjx, mjx_contact, random_states
from bench_step import (jaxsim_init, jaxsim_steps, mjx_cholesky, mjx_init, mjx_plain, mjx_steps,
                        scene_xml, settle, settle_jaxsim)
from benchutil import bench, machine_info

matplotlib.use("Agg")  # file output only; no display on CI machines
import matplotlib.pyplot as plt  # noqa: E402

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
MEMORY_BUDGET = 24e9  # bytes: the "24 GB" of the batch estimate
SIMS = ("jaxsim", "mjx")
LINK = (0.04, 0.04, 0.10)  # m: chain link box (x, y, z), as jaxsim.scenes.pendulum's
LINK_MASS = 0.3  # kg
BOX, BOX_MASS = 0.1, 1.0  # m, kg: stack cube edge and mass
FRICTION = 0.5  # one coefficient (MuJoCo); jaxsim gets it as static and kinetic


# ---------------------------------------------------------------- scenes


@dataclasses.dataclass
class Scene:
    """One scene for both simulators.

    Attributes:
      name: scene name.
      model: jaxsim Model (float32).
      xml: its MJCF twin for MuJoCo/MJX (same joints in the same order, same masses,
        timestep and geometry).
      settle_s: simulated seconds each side runs from the initial pose before that
        pose is used (0: start from the built pose).
      q0: initial qpos (nq,) for both sides, or None for the model's qpos0 (only for
        scenes without settling: jaxsim settles from its qpos0).
      noise: scale of the start states' perturbations relative to bench_step's
        (``random_states``: 0.5 mm, ~0.01 rad); see ``quiet_states``.
    """
    name: str
    model: Any
    xml: str
    settle_s: float = 0.0
    q0: np.ndarray | None = None
    noise: float = 1.0


def _mjcf(body: str, *, timestep: float = 1e-3, floor: bool = False, contact: str = "") -> str:
    """A whole MJCF document around worldbody content ``body``."""
    plane = f'<geom name="floor" type="plane" size="20 20 0.1" friction="{FRICTION}"/>' if floor else ""
    extra = f"<contact>{contact}</contact>" if contact else ""
    return (f'<mujoco><option timestep="{timestep}"/><worldbody>{plane}{body}</worldbody>'
            f"{extra}</mujoco>")


def _inertial(mass: float, moments, pos=(0, 0, 0)) -> str:
    """MJCF ``<inertial>`` (kg, kg m^2 about the com at ``pos``, m)."""
    p = " ".join(f"{x:.9g}" for x in pos)
    d = " ".join(f"{x:.9g}" for x in moments)
    return f'<inertial pos="{p}" mass="{mass}" diaginertia="{d}"/>'


def _box_moments(mass: float, size) -> np.ndarray:
    """Principal moments (kg m^2) of a solid box of full edge lengths ``size`` (m)."""
    x, y, z = size
    return mass / 12.0 * np.array([y * y + z * z, x * x + z * z, x * x + y * y])


def cube_scene() -> Scene:
    """``jaxsim.scenes.cube()`` and its MJCF twin, settled 1 s as in bench_step."""
    m = scenes.CUBE_MASS
    moments = np.full(3, m * scenes.CUBE_SIZE ** 2 / 6.0)
    h = scenes.CUBE_SIZE / 2
    body = (f'<body name="cube" pos="0 0 {h}"><freejoint/>{_inertial(m, moments)}'
            f'<geom type="box" size="{h} {h} {h}" friction="{FRICTION}"/></body>')
    return Scene("cube", scenes.cube(), _mjcf(body, floor=True), settle_s=1.0)


def ant_scene(max_contacts: int) -> Scene:
    """Gymnasium's ant.xml for both sides (jaxsim solves its ``max_contacts`` deepest
    contacts, as bench_step), settled 1 s."""
    xml = scene_xml("ant")
    return Scene("ant", load_mjcf(xml, dtype=jnp.float32, max_contacts=max_contacts), xml, settle_s=1.0)


def chain_scene(n: int, joint: str = "hinge") -> Scene:
    """N hanging links on hinges about y (or ball joints), root swung 0.5 rad about y.

    Geoms have contype = conaffinity = 0 on both sides: no contact at all, so the
    curve measures kinematics and dynamics only.
    """
    length = LINK[2]
    moments = _box_moments(LINK_MASS, LINK)
    height = n * length + 0.1  # m: root pivot, so that the hanging chain clears z = 0
    b = jaxsim.ModelBuilder(timestep=1e-3)
    mjcf, parent = "", "world"
    for i in range(n):
        name = f"link{i}"
        pos = (0, 0, height) if i == 0 else (0, 0, -length)
        b.add_body(name, parent, pos=pos, mass=LINK_MASS, com=(0, 0, -length / 2), inertia=moments)
        b.add_joint(name, joint, name=f"j{i}", axis=(0, 1, 0))
        b.add_geom(name, "box", np.array(LINK) / 2, pos=(0, 0, -length / 2), contype=0, conaffinity=0)
        axis = ' axis="0 1 0"' if joint == "hinge" else ""
        mjcf += (f'<body name="{name}" pos="{pos[0]} {pos[1]} {pos[2]}"><joint type="{joint}"{axis}/>'
                 f'{_inertial(LINK_MASS, moments, (0, 0, -length / 2))}'
                 f'<geom type="box" size="{LINK[0] / 2} {LINK[1] / 2} {LINK[2] / 2}" '
                 f'pos="0 0 {-length / 2}" contype="0" conaffinity="0"/>')
        parent = name
    mjcf += "</body>" * n
    model = b.build(jnp.float32)
    q0 = np.asarray(model.qpos0, np.float64).copy()
    if joint == "hinge":
        q0[0] = 0.5
    else:  # the root ball's quaternion (w, x, y, z): 0.5 rad about y
        q0[:4] = (math.cos(0.25), 0.0, math.sin(0.25), 0.0)
    return Scene("chain" if joint == "hinge" else "ballchain", model, _mjcf(mjcf), q0=q0)


def stack_scene(n: int, contacts_per_box: int, settle_s: float, pen: float = 0.0) -> Scene:
    """N free cubes stacked on a floor, each ``pen`` m into the one below (and the
    lowest into the floor), settled ``settle_s`` s, with a tenth of bench_step's noise;
    non-neighbouring cubes never collide (excluded)."""
    b = jaxsim.ModelBuilder(timestep=1e-3, max_contacts=contacts_per_box * n)
    b.add_geom("world", "plane", (0, 0, 0), name="floor", friction=(FRICTION, FRICTION))
    moments = _box_moments(BOX_MASS, (BOX,) * 3)
    body, exclude = "", ""
    for i in range(n):
        z = BOX / 2 - pen + i * (BOX - pen)
        b.add_body(f"box{i}", pos=(0, 0, z), mass=BOX_MASS, inertia=moments)
        b.add_joint(f"box{i}", "free", name=f"box{i}")
        b.add_geom(f"box{i}", "box", (BOX / 2,) * 3, friction=(FRICTION, FRICTION))
        body += (f'<body name="box{i}" pos="0 0 {z:.9g}"><freejoint/>{_inertial(BOX_MASS, moments)}'
                 f'<geom type="box" size="{BOX / 2} {BOX / 2} {BOX / 2}" friction="{FRICTION}"/></body>')
        for j in range(i - 1):  # every lower cube but the one just below
            b.add_exclude(f"box{j}", f"box{i}")
            exclude += f'<exclude body1="box{j}" body2="box{i}"/>'
    return Scene("stack", b.build(jnp.float32), _mjcf(body, floor=True, contact=exclude), settle_s, noise=0.1)


def _grid(n: int, spacing: float) -> np.ndarray:
    """(n, 2) points of the smallest square grid holding n, centred on the origin, m."""
    k = math.ceil(math.sqrt(n))
    ij = np.array([(i % k, i // k) for i in range(n)], float)
    return (ij - (k - 1) / 2) * spacing


def nails_scene(n: int, settle_s: float, radius: float = 0.01, pen: float = 0.0) -> Scene:
    """One free 1 kg plate on N sphere feet (grid 3 cm apart), each ``pen`` m into the
    floor, settled ``settle_s`` s, with a tenth of bench_step's noise; the plate's own
    box never collides, so contacts = N while dofs stay 6."""
    feet = _grid(n, 0.03)
    half = np.array([max(0.05, np.abs(feet).max() + radius), 0, 0.01])
    half[1] = half[0]
    moments = _box_moments(1.0, 2 * half)
    drop = half[2] + radius  # feet centres below the plate's centre
    z = drop + radius - pen
    b = jaxsim.ModelBuilder(timestep=1e-3)
    b.add_geom("world", "plane", (0, 0, 0), name="floor", friction=(FRICTION, FRICTION))
    b.add_body("plate", pos=(0, 0, z), mass=1.0, inertia=moments)
    b.add_joint("plate", "free", name="plate")
    b.add_geom("plate", "box", half, contype=0, conaffinity=0)
    geoms = f'<geom type="box" size="{half[0]} {half[1]} {half[2]}" contype="0" conaffinity="0"/>'
    for x, y in feet:
        b.add_geom("plate", "sphere", (radius,), pos=(x, y, -drop), friction=(FRICTION, FRICTION))
        geoms += (f'<geom type="sphere" size="{radius}" pos="{x:.9g} {y:.9g} {-drop:.9g}" '
                  f'friction="{FRICTION}"/>')
    body = f'<body name="plate" pos="0 0 {z:.9g}"><freejoint/>{_inertial(1.0, moments)}{geoms}</body>'
    return Scene("nails", b.build(jnp.float32), _mjcf(body, floor=True), settle_s, noise=0.1)


def spheres_scene(n: int, settle_s: float, radius: float = 0.05, pen: float = 0.0) -> Scene:
    """N free 1 kg spheres 0.2 m apart on the floor, ``pen`` m deep, settled ``settle_s``
    s, with a tenth of bench_step's noise; contype 0 (and conaffinity 1, the floor's
    contype) lets each touch the floor but no other sphere."""
    moments = np.full(3, 0.4 * radius ** 2)
    b = jaxsim.ModelBuilder(timestep=1e-3)
    b.add_geom("world", "plane", (0, 0, 0), name="floor", friction=(FRICTION, FRICTION))
    body = ""
    for i, (x, y) in enumerate(_grid(n, 0.2)):
        pos = (x, y, radius - pen)
        b.add_body(f"ball{i}", pos=pos, mass=1.0, inertia=moments)
        b.add_joint(f"ball{i}", "free", name=f"ball{i}")
        b.add_geom(f"ball{i}", "sphere", (radius,), friction=(FRICTION, FRICTION), contype=0, conaffinity=1)
        body += (f'<body name="ball{i}" pos="{x:.9g} {y:.9g} {pos[2]:.9g}"><freejoint/>'
                 f'{_inertial(1.0, moments)}<geom type="sphere" size="{radius}" friction="{FRICTION}" '
                 f'contype="0" conaffinity="1"/></body>')
    return Scene("spheres", b.build(jnp.float32), _mjcf(body, floor=True), settle_s, noise=0.1)


def make_scene(name: str, n: int, a: argparse.Namespace) -> Scene:
    """The scene ``name`` with N = ``n`` (ignored by cube and ant)."""
    makers = {"cube": cube_scene, "ant": lambda: ant_scene(a.max_contacts),
              "chain": lambda: chain_scene(n, "hinge"), "ballchain": lambda: chain_scene(n, "ball"),
              "stack": lambda: stack_scene(n, a.stack_contacts_per_box, a.settle),
              "nails": lambda: nails_scene(n, a.settle), "spheres": lambda: spheres_scene(n, a.settle)}
    return makers[name]()


# ---------------------------------------------------------------- start states


@dataclasses.dataclass
class Prepared:
    """A scene ready to time: the MjModels whose qpos0 is each side's start pose, MJX's
    model and template Data (None where MJX rejected the scene, with the reason)."""
    scene: Scene
    mm_js: Any
    mm: Any
    mx: Any = None
    dx: Any = None
    mjx_reason: str | None = None


def quiet_states(mm, batch: int, scale: float) -> jnp.ndarray:
    """(batch, nq) float32: ``random_states``' perturbations of ``mm.qpos0`` times
    ``scale`` (quaternions renormalized). bench_step's 0.5 mm pushes half the envs of a
    resting scene 0.5 mm into the floor, and jaxsim ejects them from there (active
    contacts drop to about half within 10 steps); a tenth of it keeps them resting."""
    q0 = np.asarray(mm.qpos0)
    q = q0 + scale * (np.asarray(random_states(mm, batch), np.float64) - q0)
    for j in range(mm.njnt):
        adr, jt = mm.jnt_qposadr[j], mm.jnt_type[j]
        adr += 3 if jt == mujoco.mjtJoint.mjJNT_FREE else 0
        if jt in (mujoco.mjtJoint.mjJNT_FREE, mujoco.mjtJoint.mjJNT_BALL):
            q[:, adr:adr + 4] /= np.linalg.norm(q[:, adr:adr + 4], axis=1, keepdims=True)
    return jnp.asarray(q, jnp.float32)


def start_q(mm, batch: int, noise: float) -> jnp.ndarray:
    """(batch, nq) start configurations around ``mm.qpos0``: bench_step's
    ``random_states`` (``noise`` 1) or ``quiet_states``."""
    return random_states(mm, batch) if noise == 1.0 else quiet_states(mm, batch, noise)


def prepare(scene: Scene, want_mjx: bool) -> Prepared:
    """Start poses (settled where ``scene.settle_s`` > 0) and MJX's model.

    Raises:
      ValueError: the MJCF twin has another qpos size than the jaxsim model (a
        generator bug: the start states would not match).
    """
    mm = mujoco.MjModel.from_xml_string(scene.xml)
    if mm.nq != scene.model.nq or mm.nv != scene.model.nv:
        raise ValueError(f"{scene.name}: MJCF twin has nq/nv {mm.nq}/{mm.nv}, jaxsim "
                         f"{scene.model.nq}/{scene.model.nv}")
    if scene.q0 is not None:
        mm.qpos0[:] = scene.q0
    if scene.settle_s > 0:
        mm_js = settle_jaxsim(scene.model, scene.xml, scene.settle_s)
        settle(mm, scene.settle_s)
    else:
        mm_js = mujoco.MjModel.from_xml_string(scene.xml)
        mm_js.qpos0[:] = scene.q0 if scene.q0 is not None else np.asarray(scene.model.qpos0, np.float64)
    out = Prepared(scene, mm_js, mm)
    if not want_mjx:
        out.mjx_reason = "--no-mjx"
        return out
    try:
        _, out.mx, out.dx = load_mjx(scene.xml)
        jax.eval_shape(lambda d: mjx.step(out.mx, d), out.dx)  # MJX rejects features here
    except Exception as e:  # noqa: BLE001 -- record and time jaxsim alone
        out.mx = out.dx = None
        out.mjx_reason = f"MJX rejected the scene: {type(e).__name__}: {e}"
    return out


# ---------------------------------------------------------------- one measurement


def _memory(compiled, batch: int) -> dict:
    """Bytes of a compiled call (argument, output, temp; total and per env)."""
    ma = compiled.memory_analysis()
    parts = {k: int(getattr(ma, f"{k}_size_in_bytes")) for k in ("argument", "output", "temp")}
    total = sum(parts.values())
    return {**parts, "total": total, "per_env": total / batch}


def _time_or_compile(f, args, batch: int, a, predicted_s: float | None, timed: bool) -> dict:
    """``bench(f, args)`` (with memory) when ``timed``, else only compile for memory.

    Args:
      predicted_s: predicted seconds per call (None: unknown); above 1 s a single
        timed loop follows the warm-up, to keep large sizes affordable.
    """
    if not timed:
        t0 = time.perf_counter()
        compiled = jax.jit(f).lower(*args).compile()
        return {"compile_s": time.perf_counter() - t0, "memory": _memory(compiled, batch)}
    repeats = 1 if predicted_s is not None and predicted_s > 1.0 else a.repeats
    r = bench(f, args, a.min_time, repeats=repeats, keep_output=True)
    # the same f and argument shapes: JAX's compilation cache answers at once
    r["memory"] = _memory(jax.jit(f).lower(*args).compile(), batch)
    r["repeats"] = repeats
    r["sec_per_env_step"] = r["sec_per_call"] / (batch * a.steps)
    return r


def _stats(x) -> dict:
    """Mean and max over the envs of a per-env quantity."""
    x = np.asarray(x)
    return {"mean": float(x.mean()), "max": float(x.max())}


def run_jaxsim(p: Prepared, batch: int, a, predicted_s, timed: bool) -> dict:
    """One jaxsim measurement at ``batch``: time (if ``timed``), memory, and the final
    state's contacts and solver iterations."""
    model = p.scene.model
    chunk = parallel.default_chunk(model)
    f = jaxsim_steps(model, a.steps, chunk)
    states = jaxsim_init(model, start_q(p.mm_js, batch, p.scene.noise))
    r = _time_or_compile(f, (states,), batch, a, predicted_s, timed)
    r["chunk"] = chunk
    end = r.pop("output", None)
    if end is not None:
        r["active"] = _stats(jnp.sum(end.contact.active, axis=-1))
        r["iterations"] = _stats(end.solver.iterations)
        r["overflow"] = _stats(end.overflow)
        r["nonfinite_envs"] = int(np.sum(end.nonfinite))
        r["slots"] = int(end.contact.active.shape[-1])
    return r


def run_mjx(p: Prepared, batch: int, a, predicted_s, timed: bool) -> dict:
    """One MJX measurement at ``batch`` (stock Cholesky at batch 1, jaxsim.linalg's
    plain-JAX one above: bench_step's ``--mjx-cholesky auto``)."""
    q = start_q(p.mm, batch, p.scene.noise)
    plain = mjx_plain("auto", batch)
    with mjx_cholesky(plain):
        r = _time_or_compile(mjx_steps(p.mx, a.steps), (mjx_init(p.dx, q),), batch, a, predicted_s, timed)
    r["cholesky"] = "jaxsim.linalg" if plain else "lapack"
    end = r.pop("output", None)
    if end is not None:
        con = mjx_contact(end)  # a contact makes constraint rows within its margin (ant: 1 cm)
        on = con.dist < con.includemargin
        r["active"] = _stats(jnp.sum(on, axis=-1)) if con.dist.shape[-1] else _stats(np.zeros(batch))
        r["slots"] = int(con.dist.shape[-1])
        r["nonfinite_envs"] = int(np.sum(~np.all(np.isfinite(np.asarray(end.qpos)), axis=-1)))
    return r


# ---------------------------------------------------------------- curves


@dataclasses.dataclass
class Curve:
    """Seconds per env-step of one simulator on one scene against a size.

    Attributes:
      study, scene, sim: what is measured ("jaxsim" or "mjx").
      size_name: "batch" or "N" (nominal bodies / contact points).
      points: one dict per size (``size``, ``batch`` and the measurement).
      stopped: why the larger sizes were not timed (None: all were).
    """
    study: str
    scene: str
    sim: str
    size_name: str
    points: list = dataclasses.field(default_factory=list)
    stopped: str | None = None

    def timed(self) -> list:
        """The points with a time, in size order."""
        return [pt for pt in self.points if "sec_per_env_step" in pt]

    def predict(self, key: str, size: int) -> float | None:
        """``key`` ("sec_per_env_step" or "compile_s") at ``size``: a power law through
        the curve's last two points that have it (one point: constant); None before
        any point. Never lower than the last point: a larger size costs no less."""
        pts = [pt for pt in self.points if key in pt]
        if not pts:
            return None
        x1, y1 = pts[-1]["size"], pts[-1][key]
        slope = 0.0
        if len(pts) > 1 and pts[-2]["size"] != x1 and pts[-2][key] > 0 and y1 > 0:
            x0, y0 = pts[-2]["size"], pts[-2][key]
            slope = max(0.0, math.log(y1 / y0) / math.log(x1 / x0))
        return y1 * (size / x1) ** slope

    def predict_call_s(self, size: int, batch: int, steps: int) -> float | None:
        """Seconds per call at ``size`` (``predict``); None before any timed point."""
        t = self.predict("sec_per_env_step", size)
        return None if t is None else t * batch * steps


def fit_exponent(xs, ts, min_x: float) -> dict | None:
    """Least-squares slope of log t against log x over the points with x >= ``min_x``
    (all points when fewer than two qualify); None with fewer than two points."""
    pts = [(x, t) for x, t in zip(xs, ts) if x > 0 and t > 0]
    use = [pt for pt in pts if pt[0] >= min_x]
    if len(use) < 2:
        use = pts
    if len(use) < 2 or len({x for x, _ in use}) < 2:
        return None
    lx, lt = np.log([x for x, _ in use]), np.log([t for _, t in use])
    slope = float(np.polyfit(lx, lt, 1)[0])
    return {"exponent": slope, "from": min(x for x, _ in use), "to": max(x for x, _ in use),
            "points": len(use)}


def curve_x(curve: Curve, pt: dict) -> float:
    """The x of a point: batch or N, or for the contacts study the measured mean active
    contacts per env (that simulator's own count)."""
    if curve.study == "contacts":
        return pt.get("active", {}).get("mean", 0.0)
    return pt["size"]


def curve_fit(curve: Curve, a) -> dict | None:
    """The curve's exponent (module docstring: which points)."""
    pts = curve.timed()
    min_x = {"batch": a.fit_min_batch}.get(curve.study, a.fit_min_n)
    return fit_exponent([curve_x(curve, p) for p in pts], [p["sec_per_env_step"] for p in pts], min_x)


# ---------------------------------------------------------------- measuring a size


def _skip_reason(curve: Curve, size: int, predicted: float | None, a) -> str | None:
    """Why ``curve`` is not timed at ``size`` (None: time it): it stopped, or the call
    or the compile is predicted to take too long (MJX's compile grows steeply with the
    number of joints: 176 s for a 64-hinge chain on 2 cores)."""
    if curve.stopped:
        return curve.stopped
    if predicted is not None and predicted > a.max_call_s:
        return f"predicted {predicted:.3g} s per call > --max-call-s {a.max_call_s:g}"
    compile_s = curve.predict("compile_s", size)
    if compile_s is not None and compile_s > a.max_compile_s:
        return f"predicted compile {compile_s:.0f} s > --max-compile-s {a.max_compile_s:g}"
    return None


def measure(curve: Curve, p: Prepared, size: int, batch: int, a, memory_only_ok: bool) -> None:
    """Time ``curve``'s simulator at one size (or only compile it for memory when its
    timing is skipped and ``memory_only_ok``), append the point and print it."""
    predicted = curve.predict_call_s(size, batch, a.steps)
    why = _skip_reason(curve, size, predicted, a)
    if why and not memory_only_ok:
        curve.points.append({"size": size, "batch": batch, "skipped": why})
        print(f"  {curve.scene:9s} {curve.sim:6s} {curve.size_name} {size:5d}: skipped ({why})", flush=True)
        return
    run = run_jaxsim if curve.sim == "jaxsim" else run_mjx
    t0 = time.perf_counter()
    try:
        r = run(p, batch, a, predicted, timed=why is None)
    except Exception as e:  # noqa: BLE001 -- record, stop this curve, go on
        curve.stopped = f"failed at {curve.size_name} {size}: {type(e).__name__}: {e}"
        curve.points.append({"size": size, "batch": batch, "error": curve.stopped})
        print(f"  !!! {curve.scene} {curve.sim} {curve.stopped}", flush=True)
        traceback.print_exc()
        return
    pt = {"size": size, "batch": batch, **r, "wall_s": time.perf_counter() - t0}
    if why:
        pt["skipped"] = why
        curve.stopped = curve.stopped or why  # larger sizes would take longer still
    if r["compile_s"] > a.max_compile_s and not curve.stopped:
        curve.stopped = f"compile took {r['compile_s']:.0f} s > --max-compile-s {a.max_compile_s:g}"
    curve.points.append(pt)
    print_point(curve, pt)


def print_point(curve: Curve, pt: dict) -> None:
    """One line per measurement, as it is made."""
    head = f"  {curve.scene:9s} {curve.sim:6s} {curve.size_name} {pt['size']:5d}"
    mem = f"mem/env {pt['memory']['per_env'] / 1e3:9.1f} kB, compile {pt['compile_s']:5.1f} s"
    if "sec_per_env_step" not in pt:
        print(f"{head}: not timed ({pt['skipped']}); {mem}", flush=True)
        return
    extra = ""
    if "active" in pt:
        extra = f"; active/env {pt['active']['mean']:.2f} (max {pt['active']['max']:.0f} of {pt['slots']})"
    if "iterations" in pt and pt["slots"]:
        extra += f", QP iterations {pt['iterations']['mean']:.1f}/{pt['iterations']['max']:.0f}"
    if pt.get("overflow", {}).get("max") or pt.get("nonfinite_envs"):
        extra += f", overflow {pt.get('overflow', {}).get('mean', 0):.1f}, non-finite envs {pt['nonfinite_envs']}"
    chunk = f", chunk {pt['chunk'] or 'none'}" if "chunk" in pt else f", {pt['cholesky']} Cholesky"
    print(f"{head}: {pt['sec_per_env_step'] * 1e6:10.3f} us/env-step ({pt['sec_per_call'] * 1e3:9.2f} "
          f"ms/call x {pt['calls']}){chunk}; {mem}{extra}", flush=True)


# ---------------------------------------------------------------- studies


def batch_study(a) -> dict:
    """Per-env time and memory against batch for each of ``--batch-scenes``."""
    curves, notes = [], {}
    for name in a.batch_scenes:
        scene = make_scene(name, 0, a)
        p = prepare(scene, not a.no_mjx)
        notes[name] = _scene_note(p)
        print(f"batch study, {name}: {notes[name]['summary']}", flush=True)
        pair = [Curve("batch", name, sim, "batch") for sim in SIMS if sim == "jaxsim" or p.mx is not None]
        for batch in a.batches:
            for c in pair:
                measure(c, p, batch, batch, a, memory_only_ok=True)
        curves += pair
    return {"curves": curves, "notes": notes, "memory_fit": memory_fits(curves)}


def size_study(study: str, scene_names, sizes, batch: int, a, cap: dict | None = None) -> dict:
    """Per-env time against N at a fixed ``batch`` for each scene; ``cap``: scene ->
    largest N to run (larger ones recorded as skipped)."""
    curves, notes = [], {}
    for name in scene_names:
        pair = [Curve(study, name, sim, "N") for sim in SIMS if sim == "jaxsim" or not a.no_mjx]
        notes[name] = {}
        for n in sizes:
            if cap and name in cap and n > cap[name]:
                for c in pair:
                    c.stopped = c.stopped or f"N > --{name}-max-n {cap[name]}"
            if all(c.stopped for c in pair):
                for c in pair:
                    c.points.append({"size": n, "batch": batch, "skipped": c.stopped})
                continue
            p = prepare(make_scene(name, n, a), not a.no_mjx)
            notes[name][n] = _scene_note(p)
            print(f"{study} study, {name} N={n}: {notes[name][n]['summary']}", flush=True)
            for c in pair:
                if c.sim == "mjx" and p.mx is None:
                    c.stopped = c.stopped or p.mjx_reason
                measure(c, p, n, batch, a, memory_only_ok=False)
        curves += pair
    return {"curves": curves, "notes": notes}


def _scene_note(p: Prepared) -> dict:
    """Sizes and options of a prepared scene, for the JSON and the log."""
    m = p.scene.model
    slots = int(jaxsim.make_state(m).contact.active.shape[0])
    note = {"nq": int(m.nq), "nv": int(m.nv), "dt": float(m.opt.timestep), "contact_slots": slots,
            "max_contacts": int(m.opt.max_contacts), "chunk": parallel.default_chunk(m),
            "settle_s": p.scene.settle_s, "mjx_reason": p.mjx_reason}
    note["summary"] = (f"nq={note['nq']} nv={note['nv']} dt={note['dt']:g}; jaxsim {slots} contact slots, "
                       f"max_contacts={note['max_contacts']} (0 = all), chunk {note['chunk'] or 'none'}"
                       + (f"; MJX not run: {p.mjx_reason}" if p.mjx_reason else ""))
    return note


def memory_fits(curves) -> dict:
    """Per scene and simulator: bytes = a + b * batch (least squares over every batch
    compiled) and the largest batch within ``MEMORY_BUDGET``."""
    out = {}
    for c in curves:
        pts = [p for p in c.points if "memory" in p]
        if len(pts) < 2:
            continue
        b, a0 = np.polyfit([p["size"] for p in pts], [p["memory"]["total"] for p in pts], 1)
        fit = {"intercept_bytes": float(a0), "bytes_per_env": float(b)}
        fit["max_batch_24GB"] = int((MEMORY_BUDGET - a0) // b) if b > 0 else None
        out[f"{c.scene}/{c.sim}"] = fit
    return out


# ---------------------------------------------------------------- processes

PROCESS_CONFIGS = ((1, 1), (1, 2), (2, 1))  # (processes, CPU devices per process)
RESULT_TAG = "PROCESS_RESULT "


def process_worker(a) -> None:
    """One process of a processes-study run (``--process-worker SCENE BATCH``): joins
    the run (``parallel.initialize``), makes its own rows of the batch, times
    ``--process-calls`` calls of the chunked step on the mesh over every process's
    devices (a barrier before and after, so the time covers every process's share)
    and, on process 0, prints the result as one JSON line."""
    from jax.experimental import multihost_utils

    parallel.initialize()
    name, batch = a.process_worker[0], int(a.process_worker[1])
    scene = make_scene(name, 0, a)
    model = scene.model
    mm = mujoco.MjModel.from_xml_string(scene.xml)
    mesh = parallel.global_mesh(batch)
    rows = parallel.process_rows(batch, mesh)
    q = np.asarray(start_q(mm, batch, scene.noise))[rows]  # the same draw on every process
    states = parallel.from_process_rows(jaxsim_init(model, jnp.asarray(q)), mesh)
    chunk = parallel.default_chunk(model)
    t0 = time.perf_counter()
    f = jax.jit(jaxsim_steps(model, a.steps, chunk, mesh)).lower(states).compile()
    compile_s = time.perf_counter() - t0
    states = jax.block_until_ready(f(states))
    best = math.inf
    for _ in range(a.repeats):
        multihost_utils.sync_global_devices("start")
        t0 = time.perf_counter()
        for _ in range(a.process_calls):
            states = f(states)
        jax.block_until_ready(states)
        multihost_utils.sync_global_devices("end")
        best = min(best, (time.perf_counter() - t0) / a.process_calls)
    if jax.process_index() == 0:
        print(RESULT_TAG + json.dumps({
            "scene": name, "batch": batch, "processes": jax.process_count(), "devices": jax.device_count(),
            "chunk": chunk, "compile_s": compile_s, "sec_per_call": best,
            "sec_per_env_step": best / (batch * a.steps)}), flush=True)


def process_study(a) -> dict:
    """Seconds per env-step of the same total batch on one process (one device, then
    two) and on two processes of one device each (``python -m jaxsim.launch``)."""
    rows = []
    for name, batch in zip(a.process_scenes, a.process_batches):
        for processes, devices in PROCESS_CONFIGS:
            worker = [sys.executable, os.path.abspath(__file__), "--process-worker", name, str(batch),
                      "--steps", str(a.steps), "--repeats", str(a.repeats), "--process-calls", str(a.process_calls)]
            env = {**os.environ, "JAX_NUM_CPU_DEVICES": str(devices), "JAX_PLATFORMS": "cpu"}
            cmd = worker if processes == 1 else [sys.executable, "-m", "jaxsim.launch", "-n", str(processes),
                                                  "--cpu-devices", str(devices), "--", *worker]
            t0 = time.perf_counter()
            r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
            found = [ln.split(RESULT_TAG, 1)[1] for ln in r.stdout.splitlines() if RESULT_TAG in ln]
            row = json.loads(found[0]) if r.returncode == 0 and found else {
                "scene": name, "batch": batch, "processes": processes, "devices": processes * devices,
                "error": (r.stdout + r.stderr)[-2000:]}
            row["wall_s"] = time.perf_counter() - t0
            rows.append(row)
            print(f"processes study, {name} batch {batch}: {processes} process(es) x {devices} device(s): "
                  + (f"{row['sec_per_env_step'] * 1e6:.4g} us per env-step (compile {row['compile_s']:.1f} s)"
                     if "error" not in row else f"FAILED: {row['error'][-300:]}"), flush=True)
    for row in rows:  # against one process on one device, same scene and batch
        base = next((b for b in rows if (b["scene"], b["batch"], b["processes"], b["devices"])
                     == (row["scene"], row["batch"], 1, 1) and "error" not in b), None)
        if base and "error" not in row:
            row["speedup_vs_one_device"] = base["sec_per_env_step"] / row["sec_per_env_step"]
    return {"rows": rows}


# ---------------------------------------------------------------- output


def summary_rows(results: dict, a) -> list[dict]:
    """One row per curve: sizes, times, exponent, and MJX time / jaxsim time per size."""
    rows = []
    for study, res in results.items():
        by_key = {(c.scene, c.sim): c for c in res["curves"]}
        for c in res["curves"]:
            pts = c.timed()
            row = {"study": study, "scene": c.scene, "sim": c.sim, "sizes": [p["size"] for p in pts],
                   "sec_per_env_step": [p["sec_per_env_step"] for p in pts], "fit": curve_fit(c, a),
                   "stopped": c.stopped if any("skipped" in p or "error" in p for p in c.points) else None}
            if study == "contacts":
                row["active"] = [round(p.get("active", {}).get("mean", 0.0), 2) for p in pts]
            if c.sim == "jaxsim" and any(p.get("slots") for p in pts):  # contact: QP iterations
                row["qp_iterations"] = [(round(p["iterations"]["mean"], 1), int(p["iterations"]["max"]))
                                        for p in pts]
            other = by_key.get((c.scene, "mjx")) if c.sim == "jaxsim" else None
            if other:
                mt = {p["size"]: p["sec_per_env_step"] for p in other.timed()}
                row["mjx_over_jaxsim"] = [mt[p["size"]] / p["sec_per_env_step"] if p["size"] in mt else None
                                          for p in pts]
            rows.append(row)
    return rows


def _fmt_list(xs, spec: str) -> str:
    return " ".join("-" if x is None else format(x, spec) for x in xs)


def print_table(rows: list[dict], memory: dict) -> None:
    """The summary table, then the 24 GB batch estimates."""
    print(f"\n{'study':8s} {'scene':9s} {'sim':6s} {'exponent':>8s} {'fit range':>12s}  "
          "sizes | us per env-step | MJX/jaxsim time (>1: jaxsim faster)")
    print("-" * 110)
    for r in rows:
        fit = r["fit"]
        exp = f"{fit['exponent']:8.3f}" if fit else f"{'n/a':>8s}"
        rng = f"{fit['from']:.4g}-{fit['to']:.4g}" if fit else ""
        print(f"{r['study']:8s} {r['scene']:9s} {r['sim']:6s} {exp} {rng:>12s}  "
              f"{_fmt_list(r['sizes'], 'd')} | {_fmt_list([t * 1e6 for t in r['sec_per_env_step']], '.4g')}"
              + (f" | {_fmt_list(r['mjx_over_jaxsim'], '.3g')}" if r.get("mjx_over_jaxsim") else ""))
        if r.get("active"):
            print(f"{'':26s} measured active contacts/env: {_fmt_list(r['active'], 'g')}")
        if r.get("qp_iterations"):
            print(f"{'':26s} QP iterations, last step (mean/max): "
                  + " ".join(f"{m:g}/{x}" for m, x in r["qp_iterations"]))
        if r["stopped"]:
            print(f"{'':26s} larger sizes not timed: {r['stopped']}")
    if memory:
        print(f"\n{'scene/sim':14s} {'bytes/env (fit)':>16s} {'intercept':>12s} {'max batch in 24 GB':>19s}")
        for k, f in memory.items():
            print(f"{k:14s} {f['bytes_per_env']:16.4g} {f['intercept_bytes']:12.4g} "
                  f"{f['max_batch_24GB'] if f['max_batch_24GB'] is not None else 'n/a':>19}")


def plot(results: dict, path: str) -> None:
    """One log-log panel per study: seconds per env-step against size."""
    fig, axes = plt.subplots(1, len(results), figsize=(5.5 * len(results), 4.5), squeeze=False)
    xlabel = {"batch": "batch (envs)", "bodies": "bodies N", "contacts": "measured active contacts per env"}
    for ax, (study, res) in zip(axes[0], results.items()):
        for c in res["curves"]:
            pts = [p for p in c.timed() if curve_x(c, p) > 0]
            if pts:
                ax.loglog([curve_x(c, p) for p in pts], [p["sec_per_env_step"] for p in pts],
                          "o-" if c.sim == "jaxsim" else "s--", label=f"{c.scene} {c.sim}")
        ax.set(title=study, xlabel=xlabel[study], ylabel="seconds per env-step")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def to_json(results: dict) -> dict:
    """The results with Curves as plain dicts."""
    return {study: {**res, "curves": [dataclasses.asdict(c) for c in res["curves"]]}
            for study, res in results.items()}


# ---------------------------------------------------------------- main


def parse_args() -> argparse.Namespace:
    """Command line (module docstring); ``--quick``: a smoke run of every study."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--studies", nargs="+", choices=("batch", "bodies", "contacts", "processes"),
                   default=["batch", "bodies", "contacts", "processes"])
    p.add_argument("--batches", nargs="+", type=int, default=[1, 4, 16, 64, 256, 1024, 4096])
    p.add_argument("--batch-scenes", nargs="+", choices=("cube", "ant"), default=["cube", "ant"])
    p.add_argument("--bodies-n", nargs="+", type=int, default=[1, 2, 4, 8, 16, 32, 64])
    p.add_argument("--bodies-scenes", nargs="+", choices=("chain", "ballchain", "stack"),
                   default=["chain", "stack"], help="ballchain: not in the default run (time)")
    p.add_argument("--bodies-batch", type=int, default=16, help="envs per call in the bodies study")
    p.add_argument("--stack-max-n", type=int, default=32, help="largest stack run (beyond: too slow)")
    p.add_argument("--stack-contacts-per-box", type=int, default=10, help="jaxsim max_contacts per cube")
    p.add_argument("--contacts-n", nargs="+", type=int, default=[1, 2, 4, 8, 16, 32, 64])
    p.add_argument("--contacts-scenes", nargs="+", choices=("nails", "spheres"), default=["nails", "spheres"])
    p.add_argument("--contacts-batch", type=int, default=16, help="envs per call in the contacts study")
    p.add_argument("--settle", type=float, default=0.2,
                   help="simulated seconds stack, nails and spheres settle on each side before timing")
    p.add_argument("--max-contacts", type=int, default=16, help="jaxsim max_contacts of the ant")
    p.add_argument("--steps", type=int, default=10, help="steps per timed call (lax.scan length)")
    p.add_argument("--min-time", type=float, default=0.3, help="seconds per timing loop")
    p.add_argument("--repeats", type=int, default=3, help="timing loops (best kept)")
    p.add_argument("--max-call-s", type=float, default=12.0,
                   help="skip timings whose call is predicted to take longer (s)")
    p.add_argument("--max-compile-s", type=float, default=60.0,
                   help="stop a curve after a compile longer than this (s)")
    p.add_argument("--fit-min-batch", type=int, default=64, help="smallest batch in the exponent fit")
    p.add_argument("--fit-min-n", type=float, default=4, help="smallest N (contacts) in the exponent fit")
    p.add_argument("--no-mjx", action="store_true", help="time jaxsim only")
    p.add_argument("--out", default=None,
                   help="JSON output path (default results/bench_scale.json; --quick: bench_scale_quick.json)")
    p.add_argument("--plot", default=None, help="PNG path (default: the JSON path with .png)")
    p.add_argument("--process-scenes", nargs="+", choices=("cube", "ant"), default=["cube", "ant"])
    p.add_argument("--process-batches", nargs="+", type=int, default=[1024, 256],
                   help="total batch of the processes study, one per --process-scenes")
    p.add_argument("--process-calls", type=int, default=20, help="timed calls per loop in the processes study")
    p.add_argument("--process-worker", nargs=2, metavar=("SCENE", "BATCH"), default=None,
                   help=argparse.SUPPRESS)  # one process of a processes-study run
    p.add_argument("--quick", action="store_true",
                   help="smoke test (< 2 min): batches and N 1 4, batch 4, cube, chain and stack, "
                        "nails, no settling, one 0.05 s loop; writes bench_scale_quick.json")
    a = p.parse_args()
    if a.quick:
        a.batches, a.bodies_n, a.contacts_n = [1, 4], [1, 4], [1, 4]
        a.batch_scenes, a.bodies_scenes, a.contacts_scenes = ["cube"], ["chain", "stack"], ["nails"]
        a.min_time, a.repeats, a.bodies_batch, a.contacts_batch = 0.05, 1, 4, 4
        a.settle = 0.0  # each settle is one more compile; a smoke test need not rest
        a.process_scenes, a.process_batches, a.process_calls = ["cube"], [4], 2
    a.out = a.out or os.path.join(RESULTS, "bench_scale_quick.json" if a.quick else "bench_scale.json")
    a.plot = a.plot or os.path.splitext(a.out)[0] + ".png"
    return a


def run_study(study: str, a) -> dict:
    """One sub-study's results (curves and notes)."""
    if study == "batch":
        return batch_study(a)
    if study == "bodies":
        return size_study("bodies", a.bodies_scenes, a.bodies_n, a.bodies_batch, a, {"stack": a.stack_max_n})
    return size_study("contacts", a.contacts_scenes, a.contacts_n, a.contacts_batch, a)


def main() -> None:
    a = parse_args()
    if a.process_worker:
        process_worker(a)
        return
    info = machine_info()
    print(f"jax {info['jax']} on {info['jax_devices']}, mujoco {info['mujoco']}, mjx {info['mujoco_mjx']}, "
          f"{info['cpu_count']} CPUs, load {info['loadavg_at_start'][0]:.2f}; {a.steps} steps per call, "
          f"float32", flush=True)
    t_start, results, failed, processes = time.perf_counter(), {}, {}, {}

    def write() -> None:  # after every study: a run cut short keeps what it measured
        os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
        rows = summary_rows(results, a)
        with open(a.out, "w") as fh:
            json.dump({"machine": info, "args": vars(a), "wall_s": time.perf_counter() - t_start,
                       "failed": failed, "summary": rows, "studies": to_json(results),
                       "processes": processes}, fh, indent=1,
                      default=str)
        if results:
            plot(results, a.plot)

    for study in a.studies:
        t0 = time.perf_counter()
        try:
            if study == "processes":
                processes.update(process_study(a))
            else:
                results[study] = run_study(study, a)
        except Exception as e:  # noqa: BLE001 -- report, keep the other studies
            failed[study] = f"{type(e).__name__}: {e}"
            print(f"!!!!! {study} study failed: {failed[study]}", flush=True)
            traceback.print_exc()
        print(f"{study} study: {time.perf_counter() - t0:.0f} s", flush=True)
        write()

    print_table(summary_rows(results, a), results.get("batch", {}).get("memory_fit", {}))
    if processes:
        print(f"\n{'scene':6s} {'batch':>6s} {'processes x devices':>20s} {'us per env-step':>16s} "
              f"{'vs 1 x 1':>9s}")
        for r in processes["rows"]:
            print(f"{r['scene']:6s} {r['batch']:6d} {r['processes']:>10d} x {r['devices'] // r['processes']:<7d} "
                  + (f"{r['sec_per_env_step'] * 1e6:16.4g} {r.get('speedup_vs_one_device', math.nan):9.2f}"
                     if "error" not in r else "FAILED"))
    print(f"\n(us per env-step = seconds per {a.steps}-step call / (batch * {a.steps}) * 1e6; exponent: "
          f"least-squares slope of log time vs log size over the fit range; contacts study x = measured "
          f"active contacts; batch memory fit over every compiled batch, 24 GB = 24e9 bytes)")
    for study, why in failed.items():
        print(f"  {study}: FAILED: {why}")
    print(f"total {time.perf_counter() - t_start:.0f} s; wrote {a.out} and {a.plot}")


if __name__ == "__main__":
    main()
