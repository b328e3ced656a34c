"""MJCF and URDF loading through MuJoCo's compiler.

MuJoCo's compiler resolves defaults and includes, computes inertias from geoms, fuses
meshes into convex hulls and orders bodies; we convert its compiled ``MjModel`` into a
jaxsim ``Model`` through ``ModelBuilder`` (so the same validation applies). Body, joint,
dof, geom and actuator indices are MuJoCo's.

Supported: hinge, slide, ball and free joints; plane, sphere, capsule, box and mesh
geoms (mesh -> its convex hull), height fields (stored terrain), cylinders and ellipsoids (-> convex polyhedra with
``CYLINDER_SIDES`` sides / ``ELLIPSOID_RINGS`` rings); fixed tendons (springs, dampers,
actuation, limits); joint and tendon equality couplings (stored for the constraint
solver); actuators with fixed gain, affine bias and none / integrator / filter /
filterexact activation on hinge/slide joints or fixed tendons; inertia-box fluid forces.
Anything else raises ``ModelError`` naming the element and what is supported.

Option flags that disable gravity, springs, dampers or control clamping are applied
to the Model. MuJoCo's ``implicit`` and ``implicitfast`` integrators (and any other
jaxsim lacks) map to jaxsim's semi-implicit Euler with implicit joint damping, with a
``UserWarning`` saying so. Geom friction ``friction[0]`` becomes both the static and kinetic coefficient;
geom and pair ``condim`` 1 give frictionless contacts, and 4 or 6 act as 3 (sliding
friction only: jaxsim models no torsional or rolling friction).
Geom restitution (used by ``springhead``): a custom numeric ``jaxsim:restitution:GEOM``,
else the restitution of an underdamped ``solref`` (:func:`solref_restitution`), else a
scene-wide numeric ``jaxsim:restitution``, else the contact model's default.

Custom elements named ``jaxsim:...`` (:func:`custom_options`): texts ``jaxsim:contact``
(the contact model) and ``jaxsim:contact_mode[:body1[:body2]]``, numerics
``jaxsim:restitution[:geom]``, and ``jaxsim:KEY`` (a text or a numeric) for any scene
option or parameter of the contact model (``jaxsim.options``), e.g.
``<numeric name="jaxsim:solver_iterations" data="100"/>``. Keyword options given to the
loader win over the file's.
"""

from __future__ import annotations

import os
import warnings

import jax.numpy as jnp
import numpy as np

from jaxsim import contact as contact_models
from jaxsim import options as model_options
from jaxsim.builder import ModelBuilder
from jaxsim.names import current_name, rename
from jaxsim.io.urdf import resolve_urdf
from jaxsim.types import Model, ModelError

CYLINDER_SIDES = 16
ELLIPSOID_RINGS = 6
MAX_INT32 = 2**31 - 1  # MuJoCo's int fields (maxhullvert)

_INSTALL_HINT = ("loading MJCF/URDF needs MuJoCo's compiler: run pip install -e '.[mujoco]' "
                 "in the jaxsim checkout")


def _mujoco():
    try:
        import mujoco
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError(_INSTALL_HINT) from e
    return mujoco


def _compile(source: str, max_hull_vertices: int | None = None):
    mujoco = _mujoco()
    source = os.fspath(source)
    text = source.lstrip()
    if not text.startswith("<") and not os.path.exists(source):
        raise ModelError(f"model file not found: {source}")
    try:
        if max_hull_vertices is None:
            if text.startswith("<"):
                return mujoco.MjModel.from_xml_string(source)
            return mujoco.MjModel.from_xml_path(source)
        spec = mujoco.MjSpec.from_string(source) if text.startswith("<") else mujoco.MjSpec.from_file(source)
        limit_hull_vertices(spec, max_hull_vertices)
        return spec.compile()
    except ValueError as e:
        if isinstance(e, ModelError):
            raise
        raise ModelError(f"MuJoCo could not compile {source[:80]!r}: {e}") from None


def limit_hull_vertices(spec, max_hull_vertices: int | None) -> None:
    """Cap the convex hull of every mesh of an ``MjSpec`` at ``max_hull_vertices``
    vertices (MuJoCo's ``maxhullvert``; a mesh's own smaller cap stays). MuJoCo then
    builds the reduced hull itself, so MuJoCo and jaxsim collide the same shapes.

    Why: a hull-hull pair costs O(V1 V2) (the separating axes of every edge pair), and
    meshes of robot files give hulls of thousands of vertices: gymnasium-robotics'
    Fetch, with 84 hull-hull pairs of up to 2,024 vertices, asks XLA for terabytes.
    """
    if max_hull_vertices is None:
        return
    if isinstance(max_hull_vertices, bool) or not isinstance(max_hull_vertices, (int, np.integer)) \
            or not 4 <= max_hull_vertices <= MAX_INT32:
        raise ModelError(f"max_hull_vertices must be an integer >= 4 (a hull needs 4 vertices) and "
                         f"<= {MAX_INT32}, got {max_hull_vertices!r}")
    for mesh in spec.meshes:
        if mesh.maxhullvert < 0 or mesh.maxhullvert > max_hull_vertices:
            mesh.maxhullvert = int(max_hull_vertices)


def load_mjcf(source: str, dtype=jnp.float32, max_hull_vertices: int | None = None, **options) -> Model:
    """Load an MJCF file path or XML string into a Model.

    Args:
      source: path to an ``.xml`` file, or the XML text itself.
      dtype: float dtype of the Model's arrays.
      max_hull_vertices: cap every mesh's convex hull at this many vertices (MuJoCo's
        ``maxhullvert``, :func:`limit_hull_vertices`); None keeps the file's hulls.
      **options: ModelBuilder options and parameters of the contact model
        (``timestep``, ``integrator``, ``contact``, ``solver_iterations``, ...;
        ``jaxsim.options``), overriding the file's.

    Raises:
      ModelError: an element jaxsim does not support, an unknown option (naming the
        allowed ones) or a bad value.
    """
    return from_mjmodel(_compile(source, max_hull_vertices), dtype=dtype, **options)


def load_urdf(path: str, dtype=jnp.float32, package_dirs=(), balance_inertia: bool = False,
              floating_base: bool = False, self_collision: bool = True, max_hull_vertices: int | None = None,
              **options) -> Model:
    """Load a URDF file (through MuJoCo's URDF importer) into a Model.

    Args:
      path: the ``.urdf`` file.
      dtype: float dtype of the Model's arrays.
      package_dirs, balance_inertia, floating_base, self_collision, max_hull_vertices:
        as for ``urdf_spec``.
      **options: ModelBuilder options, as for ``load_mjcf``.
    """
    return from_mjmodel(compile_urdf(path, package_dirs, balance_inertia, floating_base, self_collision,
                                     max_hull_vertices), dtype=dtype, **options)


def compile_urdf(path: str, package_dirs=(), balance_inertia: bool = False, floating_base: bool = False,
                 self_collision: bool = True, max_hull_vertices: int | None = None):
    """MuJoCo's ``MjModel`` of a URDF file, its ``package://`` URIs resolved
    (arguments as for ``urdf_spec``)."""
    return _compile_spec(urdf_spec(path, package_dirs, balance_inertia, floating_base, self_collision,
                                   max_hull_vertices), path, balance_inertia)


def urdf_spec(path: str, package_dirs=(), balance_inertia: bool = False, floating_base: bool = False,
              self_collision: bool = True, max_hull_vertices: int | None = None):
    """MuJoCo's ``MjSpec`` of a URDF file, its ``package://`` URIs resolved.

    Args:
      path: the ``.urdf`` file.
      package_dirs: directories (or one) searched first for ``package://`` URIs;
        then ``$ROS_PACKAGE_PATH`` and the directories above the file
        (``jaxsim.io.urdf``).
      balance_inertia: make invalid inertias valid (``jaxsim.io.urdf.balance``)
        instead of rejecting the file, as MuJoCo's ``balanceinertia`` does for
        triangle-inequality violations.
      floating_base: give the root link a free joint (named ``floating_base``): a
        legged robot's URDF has none, and MuJoCo welds the root to the world.
      self_collision: False: the robot's links collide with other geoms only (their
        ``conaffinity`` 0, MuJoCo's usual idiom; a floor added later keeps 1). URDF
        meshes become convex hulls of hundreds of vertices and MuJoCo lets every
        non-adjacent link pair collide: Go2 has 143 such hull pairs, whose
        collision does not fit in memory.
      max_hull_vertices: as for ``load_mjcf``.
    """
    mujoco = _mujoco()
    text = resolve_urdf(path, package_dirs, balance_inertia)
    try:
        spec = mujoco.MjSpec.from_string(text)
    except ValueError as e:
        raise ModelError(f"MuJoCo could not read {os.fspath(path)!r}: {e}") from None
    if floating_base:
        roots = spec.worldbody.bodies
        if len(roots) != 1 or roots[0].joints:
            raise ModelError(f"{os.fspath(path)}: floating_base needs one root link without a joint; "
                             f"the world holds {[b.name for b in roots]}")
        roots[0].add_freejoint(name="floating_base")
    if not self_collision:
        for geom in spec.geoms:
            geom.conaffinity = 0
    limit_hull_vertices(spec, max_hull_vertices)
    return spec


def _compile_spec(spec, path, balance_inertia: bool = True):
    try:
        return spec.compile()
    except ValueError as e:
        hint = (" (balance_inertia=True makes such inertias valid)"
                if "inertia" in str(e).lower() and not balance_inertia else "")
        raise ModelError(f"MuJoCo could not compile {os.fspath(path)!r}: {e}{hint}") from None


def _name(m, objtype, i: int, kind: str) -> str:
    mujoco = _mujoco()
    return mujoco.mj_id2name(m, objtype, i) or f"{kind}{i}"


def _nonzero(m, attr: str, i: int) -> bool:
    arr = getattr(m, attr, None)
    return arr is not None and np.any(np.asarray(arr[i]) != 0)


def _unsupported_checks(m) -> None:
    """Reject MuJoCo features jaxsim does not model, naming the element."""
    mujoco = _mujoco()
    obj = mujoco.mjtObj
    for i in range(m.nbody):
        if _nonzero(m, "body_gravcomp", i):
            raise ModelError(f"body {_name(m, obj.mjOBJ_BODY, i, 'body')!r}: gravity compensation "
                             "(gravcomp) is not supported")
    for j in range(m.njnt):
        jn = _name(m, obj.mjOBJ_JOINT, j, "joint")
        for attr, what in (("jnt_stiffnesspoly", "polynomial stiffness"),
                           ("jnt_actgravcomp", "actuatorgravcomp")):
            if _nonzero(m, attr, j):
                raise ModelError(f"joint {jn!r}: {what} is not supported")
        if getattr(m, "jnt_plasticadr", None) is not None and m.jnt_plasticadr[j] >= 0:
            raise ModelError(f"joint {jn!r}: plastic joint springs are not supported")
    for d in range(m.nv):
        if _nonzero(m, "dof_dampingpoly", d):
            raise ModelError(f"joint {_name(m, obj.mjOBJ_JOINT, m.dof_jntid[d], 'joint')!r}: "
                             "polynomial damping is not supported")
    for t in range(m.ntendon):
        tn = _name(m, obj.mjOBJ_TENDON, t, "tendon")
        adr, num = m.tendon_adr[t], m.tendon_num[t]
        if np.any(m.wrap_type[adr:adr + num] != int(mujoco.mjtWrap.mjWRAP_JOINT)):
            raise ModelError(f"tendon {tn!r}: spatial tendons are not supported (only fixed "
                             "tendons: linear combinations of hinge/slide joints)")
        for attr, what in (("tendon_armature", "armature"), ("tendon_dampingpoly", "polynomial damping"),
                           ("tendon_stiffnesspoly", "polynomial stiffness"),
                           ("tendon_actfrclimited", "actuatorfrcrange")):
            if _nonzero(m, attr, t):
                raise ModelError(f"tendon {tn!r}: {what} is not supported")
    for e in range(m.neq):
        if int(m.eq_type[e]) not in _eq_types(mujoco):
            kind = mujoco.mjtEq(m.eq_type[e]).name.replace("mjEQ_", "").lower()
            raise ModelError(f"equality {_name(m, obj.mjOBJ_EQUALITY, e, 'equality')!r}: type "
                             f"{kind!r} is not supported (supported: {', '.join(_eq_types(mujoco).values())})")
    for a in range(m.nu):
        an = _name(m, obj.mjOBJ_ACTUATOR, a, "actuator")
        if int(m.actuator_trntype[a]) not in (int(mujoco.mjtTrn.mjTRN_JOINT), int(mujoco.mjtTrn.mjTRN_TENDON)):
            kind = mujoco.mjtTrn(m.actuator_trntype[a]).name.replace("mjTRN_", "").lower()
            raise ModelError(f"actuator {an!r}: transmission {kind!r} is not supported "
                             "(supported: joint, tendon)")
        if int(m.actuator_dyntype[a]) > int(mujoco.mjtDyn.mjDYN_FILTEREXACT):
            kind = mujoco.mjtDyn(m.actuator_dyntype[a]).name.replace("mjDYN_", "").lower()
            raise ModelError(f"actuator {an!r}: dynamics {kind!r} is not supported "
                             "(supported: none, integrator, filter, filterexact)")
        if int(m.actuator_gaintype[a]) != int(mujoco.mjtGain.mjGAIN_FIXED):
            raise ModelError(f"actuator {an!r}: only fixed gains are supported")
        if int(m.actuator_biastype[a]) not in (int(mujoco.mjtBias.mjBIAS_NONE), int(mujoco.mjtBias.mjBIAS_AFFINE)):
            raise ModelError(f"actuator {an!r}: only none or affine bias is supported")
        for attr, what in (("actuator_actearly", "actearly"), ("actuator_damping", "damping"),
                           ("actuator_armature", "armature"), ("actuator_delay", "delay")):
            if _nonzero(m, attr, a):
                raise ModelError(f"actuator {an!r}: {what} is not supported")
        if m.actuator_actnum[a] > 1:
            raise ModelError(f"actuator {an!r}: more than one activation is not supported")


def _cylinder(radius: float, half: float, n: int = CYLINDER_SIDES):
    ang = 2 * np.pi * np.arange(n) / n
    ring = np.stack([radius * np.cos(ang), radius * np.sin(ang)], -1)
    verts = np.concatenate([np.c_[ring, np.full(n, -half)], np.c_[ring, np.full(n, half)]])
    faces = []
    for i in range(n):
        k = (i + 1) % n
        faces += [(i, k, n + k), (i, n + k, n + i)]  # side
    for i in range(1, n - 1):
        faces += [(0, i + 1, i), (n, n + i, n + i + 1)]  # bottom (facing -z), top
    return verts, np.asarray(faces)


def _ellipsoid(size, rings: int = ELLIPSOID_RINGS):
    n = 2 * rings
    verts = [(0.0, 0.0, -1.0)]
    for r in range(1, rings):
        th = np.pi * r / rings - np.pi / 2
        for i in range(n):
            ph = 2 * np.pi * i / n
            verts.append((np.cos(th) * np.cos(ph), np.cos(th) * np.sin(ph), np.sin(th)))
    verts.append((0.0, 0.0, 1.0))
    verts = np.asarray(verts) * np.asarray(size)
    top = len(verts) - 1
    ring = lambda r, i: 1 + (r - 1) * n + (i % n)  # noqa: E731
    faces = [(0, ring(1, i + 1), ring(1, i)) for i in range(n)]
    for r in range(1, rings - 1):
        for i in range(n):
            faces += [(ring(r, i), ring(r, i + 1), ring(r + 1, i + 1)),
                      (ring(r, i), ring(r + 1, i + 1), ring(r + 1, i))]
    faces += [(ring(rings - 1, i), ring(rings - 1, i + 1), top) for i in range(n)]
    return verts, np.asarray(faces)


def convex_hull(points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vertices and outward triangles of the convex hull of (n, 3) points (Qhull)."""
    from scipy.spatial import ConvexHull

    hull = ConvexHull(points)
    used = np.unique(hull.simplices)
    remap = np.full(len(points), -1)
    remap[used] = np.arange(len(used))
    verts, faces = points[used], remap[hull.simplices]
    normal = np.cross(verts[faces[:, 1]] - verts[faces[:, 0]], verts[faces[:, 2]] - verts[faces[:, 0]])
    flip = np.einsum("ij,ij->i", normal, hull.equations[:, :3]) < 0
    faces[flip] = faces[flip][:, ::-1]
    area = np.linalg.norm(normal, axis=1)
    return verts, faces[area > 1e-12 * area.max()]


def _mesh_hull(m, mesh_id: int):
    """Convex hull of a mesh (in the geom frame): of the vertices of MuJoCo's own hull
    (``mesh_graph``, which honours ``maxhullvert``), or of all its vertices when
    MuJoCo built none."""
    vadr, nvert = m.mesh_vertadr[mesh_id], m.mesh_vertnum[mesh_id]
    points = np.asarray(m.mesh_vert[vadr:vadr + nvert], dtype=np.float64)
    gadr = int(m.mesh_graphadr[mesh_id])
    if gadr >= 0:  # graph: numvert, numface, vert_edgeadr[numvert], vert_globalid[numvert], ...
        nhull = int(m.mesh_graph[gadr])
        points = points[np.asarray(m.mesh_graph[gadr + 2 + nhull:gadr + 2 + 2 * nhull])]
    return convex_hull(points)


def from_mjmodel(m, dtype=jnp.float32, **options) -> Model:
    """Convert a compiled ``mujoco.MjModel`` into a jaxsim Model.

    Args:
      m: the compiled model.
      dtype: float dtype of the Model's arrays.
      **options: as for ``load_mjcf``: they win over the model's options and its
        ``jaxsim:`` custom elements.
    """
    mujoco = _mujoco()
    obj = mujoco.mjtObj
    _unsupported_checks(m)
    integrator, asked = _integrator(m)
    # MuJoCo's Euler takes damping implicitly unless eulerdamp is disabled; its implicit integrators always do
    euler_damp = not (int(m.opt.disableflags) & int(mujoco.mjtDisableBit.mjDSBL_EULERDAMP))
    opts = dict(timestep=float(m.opt.timestep), gravity=np.array(m.opt.gravity),
                density=float(m.opt.density), viscosity=float(m.opt.viscosity),
                wind=np.array(m.opt.wind), integrator=integrator, implicit_damping=euler_damp or asked is not None)
    disabled = int(m.opt.disableflags)
    flag = lambda name: bool(disabled & int(getattr(mujoco.mjtDisableBit, name)))  # noqa: E731
    if flag("mjDSBL_GRAVITY"):
        opts["gravity"] = np.zeros(3)
    if flag("mjDSBL_ACTUATION") and m.nu:
        raise ModelError("option flag actuation='disable' is not supported")
    no_spring, no_damper, no_clamp = flag("mjDSBL_SPRING"), flag("mjDSBL_DAMPER"), flag("mjDSBL_CLAMPCTRL")
    if flag("mjDSBL_CONTACT"):
        opts["contact_mode"] = "none"
    if flag("mjDSBL_CONSTRAINT"):
        opts["constraint"] = False
    texts, numerics = _custom_texts(m), _custom_numerics(m)
    _check_restitution_names(m, numerics)
    try:  # former option names: the current ones, with a warning
        options = rename(options, "load_mjcf")
    except ValueError as e:
        raise ModelError(str(e)) from None
    file_opts = custom_options(texts, numerics, options.get("contact"))
    opts.update(file_opts)
    model_options.check_names(options, options.get("contact", opts.get("contact", model_options.default_contact())))
    opts.update(options)
    if asked is not None and "integrator" not in file_opts and "integrator" not in options:
        warnings.warn(f"MuJoCo's {asked!r} integrator is not available in jaxsim: using 'euler' (semi-implicit) "
                      "with implicit joint damping (implicit_damping=True), as MuJoCo's implicit integrators "
                      "treat damping; other velocity-dependent forces stay explicit (implicit_pd=True solves "
                      "position and velocity servos implicitly). Pass integrator='euler' or 'rk4' to choose one.",
                      UserWarning, stacklevel=2)
    if "contact_mode" in options:  # the caller's scene-wide mode wins over the file's
        texts.pop("jaxsim:contact_mode", None)
    b = ModelBuilder(**opts)

    body_names = [_name(m, obj.mjOBJ_BODY, i, "body") for i in range(m.nbody)]
    for i in range(1, m.nbody):
        b.add_body(body_names[i], body_names[m.body_parentid[i]], pos=m.body_pos[i],
                   quat=m.body_quat[i], mass=float(m.body_mass[i]), com=m.body_ipos[i],
                   inertia=np.array(m.body_inertia[i]), inertia_quat=m.body_iquat[i])
    jtypes = {0: "free", 1: "ball", 2: "slide", 3: "hinge"}
    for j in range(m.njnt):
        d, qa = m.jnt_dofadr[j], m.jnt_qposadr[j]
        scalar = m.jnt_type[j] >= 2
        b.add_joint(body_names[m.jnt_bodyid[j]], jtypes[int(m.jnt_type[j])],
                    name=_name(m, obj.mjOBJ_JOINT, j, "joint"), axis=m.jnt_axis[j], pos=m.jnt_pos[j],
                    range=m.jnt_range[j] if m.jnt_limited[j] else None,
                    damping=0.0 if no_damper else float(m.dof_damping[d]),
                    armature=float(m.dof_armature[d]),
                    stiffness=0.0 if no_spring else float(m.jnt_stiffness[j]), frictionloss=float(m.dof_frictionloss[d]),
                    ref=float(m.qpos0[qa]) if scalar else 0.0,
                    springref=float(m.qpos_spring[qa]) if scalar else None,
                    actuator_force_range=m.jnt_actfrcrange[j] if _nonzero(m, "jnt_actfrclimited", j) else None)
    geom_kind = {int(mujoco.mjtGeom.mjGEOM_PLANE): "plane", int(mujoco.mjtGeom.mjGEOM_SPHERE): "sphere",
                 int(mujoco.mjtGeom.mjGEOM_CAPSULE): "capsule", int(mujoco.mjtGeom.mjGEOM_BOX): "box"}
    for g in range(m.ngeom):
        gn = _name(m, obj.mjOBJ_GEOM, g, "geom")
        gt = int(m.geom_type[g])
        size = np.array(m.geom_size[g])
        verts = faces = heights = None
        if gt in geom_kind:
            kind = geom_kind[gt]
        elif gt == int(mujoco.mjtGeom.mjGEOM_CYLINDER):
            kind, (verts, faces) = "convex", _cylinder(size[0], size[1])
        elif gt == int(mujoco.mjtGeom.mjGEOM_ELLIPSOID):
            kind, (verts, faces) = "convex", _ellipsoid(size)
        elif gt == int(mujoco.mjtGeom.mjGEOM_MESH):
            kind, (verts, faces) = "convex", _mesh_hull(m, m.geom_dataid[g])
        elif gt == int(mujoco.mjtGeom.mjGEOM_HFIELD):
            h = int(m.geom_dataid[g])
            nrow, ncol = int(m.hfield_nrow[h]), int(m.hfield_ncol[h])
            adr = int(m.hfield_adr[h])
            kind, size = "hfield", np.array(m.hfield_size[h])
            heights = np.asarray(m.hfield_data[adr:adr + nrow * ncol]).reshape(nrow, ncol)
        else:
            raise ModelError(f"geom {gn!r}: type {mujoco.mjtGeom(gt).name.replace('mjGEOM_', '').lower()!r} "
                             "is not supported (supported: plane, sphere, capsule, box, cylinder, "
                             "ellipsoid, mesh, hfield)")
        mu = float(m.geom_friction[g][0])
        b.add_geom(body_names[m.geom_bodyid[g]], kind, size, name=gn, pos=m.geom_pos[g],
                   quat=m.geom_quat[g], friction=(mu, mu), rgba=m.geom_rgba[g],
                   restitution=_restitution(numerics, gn, m.geom_solref[g]),
                   contype=int(m.geom_contype[g]), conaffinity=int(m.geom_conaffinity[g]),
                   condim=int(m.geom_condim[g]), vertices=verts, faces=faces, heights=heights)
    jnames = [_name(m, obj.mjOBJ_JOINT, j, "joint") for j in range(m.njnt)]
    tnames = [_name(m, obj.mjOBJ_TENDON, t, "tendon") for t in range(m.ntendon)]
    for t in range(m.ntendon):
        adr, num = m.tendon_adr[t], m.tendon_num[t]
        coefs: dict = {}
        for w in range(adr, adr + num):
            jn = jnames[m.wrap_objid[w]]
            coefs[jn] = coefs.get(jn, 0.0) + float(m.wrap_prm[w])
        b.add_tendon(tnames[t], coefs, stiffness=0.0 if no_spring else float(m.tendon_stiffness[t]),
                     damping=0.0 if no_damper else float(m.tendon_damping[t]), springlength=m.tendon_lengthspring[t],
                     range=m.tendon_range[t] if m.tendon_limited[t] else None)
    dyn = {0: "none", 1: "integrator", 2: "filter", 3: "filterexact"}
    for a in range(m.nu):
        target = int(m.actuator_trnid[a, 0])
        on_joint = int(m.actuator_trntype[a]) == int(mujoco.mjtTrn.mjTRN_JOINT)
        b.add_actuator(_name(m, obj.mjOBJ_ACTUATOR, a, "actuator"),
                       joint=jnames[target] if on_joint else None,
                       tendon=None if on_joint else tnames[target], kind="general",
                       gear=(m.actuator_gear[a, :3].copy() if on_joint and int(m.jnt_type[target]) == 1
                             else float(m.actuator_gear[a, 0])), gain=float(m.actuator_gainprm[a, 0]),
                       bias=np.array(m.actuator_biasprm[a, :3]),
                       ctrlrange=m.actuator_ctrlrange[a] if m.actuator_ctrllimited[a] and not no_clamp else None,
                       forcerange=m.actuator_forcerange[a] if m.actuator_forcelimited[a] else None,
                       actrange=m.actuator_actrange[a] if m.actuator_actlimited[a] else None,
                       dyntype=dyn[int(m.actuator_dyntype[a])], tau=float(max(m.actuator_dynprm[a, 0], 1e-10)))
    site_names = [_name(m, obj.mjOBJ_SITE, i, "site") for i in range(m.nsite)]
    for e in range(m.neq):
        _add_equality(b, m, e, jnames, tnames, body_names, site_names)
    for sig in np.asarray(getattr(m, "exclude_signature", [])):
        b.add_exclude(body_names[int(sig) >> 16], body_names[int(sig) & 0xFFFF])
    gnames = [_name(m, obj.mjOBJ_GEOM, g, "geom") for g in range(m.ngeom)]
    for p in range(m.npair):  # MuJoCo's pair friction: sliding, then torsional and rolling
        mu = float(m.pair_friction[p][0]) if int(m.pair_dim[p]) > 1 else 0.0  # condim 1: frictionless
        b.add_pair(gnames[m.pair_geom1[p]], gnames[m.pair_geom2[p]], friction=(mu, mu),
                   restitution=solref_restitution(m.pair_solref[p]))
    _contact_modes(b, texts)
    return b.build(dtype)


def _integrator(m) -> tuple[str, str | None]:
    """jaxsim's integrator for MuJoCo's ``m.opt.integrator``, and the name of MuJoCo's
    when jaxsim has no such integrator (``implicit``, ``implicitfast``, ...: then
    "euler", whose implicit joint damping is what they do for damping), else None."""
    mujoco = _mujoco()
    kind = int(m.opt.integrator)
    known = {int(mujoco.mjtIntegrator.mjINT_EULER): "euler", int(mujoco.mjtIntegrator.mjINT_RK4): "rk4"}
    if kind in known:
        return known[kind], None
    try:
        asked = mujoco.mjtIntegrator(kind).name.replace("mjINT_", "").lower()
    except ValueError:  # pragma: no cover - a MuJoCo newer than this module
        asked = str(kind)
    return "euler", asked


# custom elements with their own meaning: their kind and how many ":NAME" parts may follow
_CUSTOM_RESERVED = {"contact": ("text", 0), "contact_mode": ("text", 2), "restitution": ("numeric", 1)}


def custom_options(texts: dict, numerics: dict, contact: str | None = None) -> dict:
    """The scene options and contact-model parameters set by the file's custom
    elements: ``<text name="jaxsim:contact" data="MODEL"/>`` and, for any scene option
    or parameter KEY of that model, ``<numeric name="jaxsim:KEY" data="..."/>`` or
    ``<text name="jaxsim:KEY" data="..."/>`` (values as in ``jaxsim.options.parse``).
    ``jaxsim:contact_mode[:...]`` and ``jaxsim:restitution[:...]`` are read elsewhere.

    Args:
      texts, numerics: the model's custom texts and numerics by name.
      contact: the contact model the caller asks for, overriding the file's; the
        file's parameters of another model are then left out with a warning.

    Raises:
      ModelError: an unknown ``jaxsim:`` name (naming the allowed ones), a parameter
        the file's contact model does not have, or a bad value.
    """
    out: dict = {}
    file_contact = texts.get("jaxsim:contact")
    if file_contact is not None:
        file_contact = file_contact.strip()
        if contact is None and file_contact not in contact_models.MODELS:
            raise ModelError(f"custom text 'jaxsim:contact': unknown contact model {file_contact!r}; "
                             f"one of {sorted(contact_models.MODELS)}")
        out["contact"] = file_contact
    selected = contact or file_contact or model_options.default_contact()
    scene, params = model_options.scene_options(), model_options.contact_params(selected)
    everywhere = model_options.all_contact_params()
    for kind, entries in (("text", texts), ("numeric", numerics)):
        for name, data in entries.items():
            parts = (name or "").split(":")
            if parts[0] != "jaxsim" or len(parts) < 2:
                continue
            key, where = parts[1], f"custom {kind} {name!r}"
            if key in _CUSTOM_RESERVED:
                want, extra = _CUSTOM_RESERVED[key]
                if kind != want:
                    raise ModelError(f"{where}: jaxsim:{key} must be a custom {want}")
                if len(parts) > 2 + extra:
                    raise ModelError(f"{where}: expected jaxsim:{key}"
                                     + "".join(f"[:{n}" for n in ("name1", "name2")[:extra]) + "]" * extra)
                continue  # read where it is used
            if key != current_name(key) and len(parts) == 2:
                warnings.warn(f"{where}: {key!r} is a former name; use jaxsim:{current_name(key)}",
                              DeprecationWarning, stacklevel=3)
                key = current_name(key)
            if len(parts) > 2 or (key not in scene and key not in everywhere):
                raise ModelError(f"{where}: unknown name; allowed: jaxsim:contact, "
                                 "jaxsim:contact_mode[:body1[:body2]], jaxsim:restitution[:geom] and "
                                 f"jaxsim:KEY for KEY among the {model_options.allowed(selected)}")
            if key not in scene and key not in params:
                if contact is not None and contact != file_contact:
                    warnings.warn(f"{where}: contact model {contact!r} has no parameter {key!r}; left out "
                                  f"(the file's contact model is {file_contact or model_options.default_contact()!r})",
                                  UserWarning, stacklevel=3)
                    continue
                raise ModelError(f"{where}: contact model {selected!r} has no parameter {key!r} (a "
                                 f"parameter of {', '.join(everywhere[key][1])}); its parameters: "
                                 f"{', '.join(params) or 'none'}")
            if key in out:
                raise ModelError(f"{where}: jaxsim:{key} is set twice")
            try:
                out[key] = (model_options.parse(key, data, selected) if kind == "text"
                            else model_options.from_numbers(key, data, selected))
            except ModelError as e:
                raise ModelError(f"{where}: {e}") from None
    return out


def _custom_texts(m) -> dict:
    """The model's ``<custom><text name=... data=...>`` elements."""
    mujoco = _mujoco()
    out = {}
    for i in range(m.ntext):
        adr, size = int(m.text_adr[i]), int(m.text_size[i])
        out[mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_TEXT, i)] = bytes(m.text_data[adr:adr + size - 1]).decode()
    return out


def _custom_numerics(m) -> dict:
    """The model's ``<custom><numeric name=... data=...>`` elements, as arrays."""
    mujoco = _mujoco()
    return {mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_NUMERIC, i):
            np.asarray(m.numeric_data[int(m.numeric_adr[i]):int(m.numeric_adr[i]) + int(m.numeric_size[i])])
            for i in range(m.nnumeric)}


def _check_restitution_names(m, numerics: dict) -> None:
    """``jaxsim:restitution[:geom]`` numerics must hold one number and name a geom."""
    mujoco = _mujoco()
    for name, data in numerics.items():
        parts = name.split(":")
        if parts[:2] != ["jaxsim", "restitution"]:
            continue
        if len(parts) > 3 or data.size != 1:
            raise ModelError(f"custom numeric {name!r}: expected jaxsim:restitution[:geom] holding one number")
        if len(parts) == 3 and mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, parts[2]) < 0:
            raise ModelError(f"custom numeric {name!r}: no geom named {parts[2]!r}")


def _eq_types(mujoco) -> dict:
    return {int(mujoco.mjtEq.mjEQ_CONNECT): "connect", int(mujoco.mjtEq.mjEQ_WELD): "weld",
            int(mujoco.mjtEq.mjEQ_JOINT): "joint", int(mujoco.mjtEq.mjEQ_TENDON): "tendon"}


def _add_equality(b: ModelBuilder, m, e: int, jnames, tnames, body_names, site_names) -> None:
    """MuJoCo's compiled equality ``e`` as a builder equality (``eq_data`` holds the
    anchors and the weld's relative pose; with sites, their bodies, positions and
    orientations). An equality that starts inactive (``active="false"``) is left
    out: MuJoCo does not enforce it either until ``eq_active`` is switched on."""
    mujoco = _mujoco()
    if not m.eq_active0[e]:
        return
    kind, data = _eq_types(mujoco)[int(m.eq_type[e])], np.asarray(m.eq_data[e], float)
    name = _name(m, mujoco.mjtObj.mjOBJ_EQUALITY, e, "equality")
    o1, o2 = int(m.eq_obj1id[e]), int(m.eq_obj2id[e])
    timeconst = max(float(m.eq_solref[e, 0]), 0.0)  # a negative solref is a stiffness: corrected within a step
    if kind in ("joint", "tendon"):
        names = jnames if kind == "joint" else tnames
        b.add_equality(name, kind, names[o1], None if o2 < 0 else names[o2], polycoef=data[:5], timeconst=timeconst)
        return
    if int(m.eq_objtype[e]) == int(mujoco.mjtObj.mjOBJ_SITE):
        bodies = [body_names[m.site_bodyid[o]] for o in (o1, o2)]
        anchors, quats = [m.site_pos[o] for o in (o1, o2)], [m.site_quat[o] for o in (o1, o2)]
    else:
        bodies = [body_names[o] for o in (o1, o2)]
        # connect: anchor 1 then 2; weld: anchor 2 then 1, then body 1's relative pose
        anchors = [data[:3], data[3:6]] if kind == "connect" else [data[3:6], data[:3]]
        quats = [data[6:10], (1.0, 0.0, 0.0, 0.0)]
    b.add_equality(name, kind, bodies[0], bodies[1], anchor=anchors[0], anchor2=anchors[1],
                   quat1=quats[0] if kind == "weld" else (1, 0, 0, 0),
                   quat2=quats[1] if kind == "weld" else None,
                   torquescale=float(data[10]) if kind == "weld" else 1.0, timeconst=timeconst)


def solref_restitution(solref) -> float | None:
    """The restitution of MuJoCo's contact spring-damper for a ``solref`` of (time
    constant, damping ratio ``z``) with ``0 <= z < 1``: an underdamped oscillator
    released at contact leaves at ``exp(-pi z / sqrt(1 - z^2))`` of its approach speed.
    None (no opinion: the contact model's default) for ``z >= 1`` (MuJoCo's default
    (0.02, 1) included: no bounce there) and for the direct (negative) format, whose
    ratio depends on the contact's mass."""
    timeconst, ratio = float(solref[0]), float(solref[1])
    if timeconst <= 0 or not 0 <= ratio < 1:
        return None
    return float(np.exp(-np.pi * ratio / np.sqrt(1 - ratio * ratio)))


def _restitution(numerics: dict, geom: str, solref) -> float | None:
    """A geom's restitution: ``jaxsim:restitution:GEOM``, else its bouncy ``solref``
    (:func:`solref_restitution`), else the scene's ``jaxsim:restitution``, else None
    (the contact model's default)."""
    for value in (numerics.get(f"jaxsim:restitution:{geom}"), solref_restitution(solref),
                  numerics.get("jaxsim:restitution")):
        if value is not None:
            return float(np.ravel(value)[0])
    return None


def _contact_modes(b: ModelBuilder, texts: dict) -> None:
    """Contact modes from custom texts, in document order: ``jaxsim:contact_mode`` (the
    scene), ``jaxsim:contact_mode:BODY`` (its pairs), ``jaxsim:contact_mode:BODY1:BODY2``
    (that body pair), each with data "constraint", "penalty" or "none"."""
    for name, data in texts.items():
        parts = name.split(":")
        if parts[:2] != ["jaxsim", "contact_mode"]:
            continue
        if len(parts) > 4:
            raise ModelError(f"custom text {name!r}: expected jaxsim:contact_mode[:body1[:body2]]")
        b.set_contact_mode(data.strip(), *parts[2:])
