"""From recorded elements to a ``Model``: ``compile_model(elements, options, dtype)``.

``ModelBuilder.build`` calls it on what the builder recorded (``jaxsim.elements``) and
its checked options (``jaxsim.options.SceneOptions``). The steps, each a function of the
elements:

* order the bodies parents-first (``body_order``) and address the joints' coordinates
  and dofs (``joint_table``);
* check that every moving body has mass (``check_masses``);
* resolve transmissions (``transmissions``: tendon coefficients, actuator moments,
  activation addresses) and equalities (``equality_table``: object ids, and the
  anchors and frames a connect or weld takes from the pose at ``qpos0``, by NumPy
  forward kinematics);
* pad meshes and height fields into arrays (``shapes``);
* fix the contact pair table (``jaxsim.collision.pairs.pair_table``);
* assemble the Model's arrays in ``dtype``.

Every reference by name is resolved here, so an unknown body, joint, geom or tendon
raises ``ModelError`` naming the element that refers to it.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxsim import contact as contact_models
from jaxsim.collision import pairs as collision_pairs
from jaxsim.collision.convex import mesh_edges
from jaxsim.elements import Actuator, Body, Elements, Geom, Joint, is_servo
from jaxsim.math import mat_to_quat_np, quat_to_mat_np
from jaxsim.options import SceneOptions
from jaxsim.types import DynType, JointType, Model, ModelError, Options, Topology


def body_order(bodies: list[Body]) -> list[Body]:
    """Bodies sorted parents-first; checks unknown parents and cycles."""
    by_name = {b.name: b for b in bodies}
    for b in bodies:
        if b.parent != "world" and b.parent not in by_name:
            raise ModelError(f"body {b.name!r}: unknown parent {b.parent!r}")
    order, placed = [], {"world"}
    remaining = list(bodies)
    while remaining:
        ready = [b for b in remaining if b.parent in placed]
        if not ready:
            names = sorted(b.name for b in remaining)
            raise ModelError(f"bodies {names} form a cycle (no path to 'world')")
        for b in ready:
            order.append(b)
            placed.add(b.name)
        remaining = [b for b in remaining if b.name not in placed]
    # keep the user's order where it already is parents-first (stable, MuJoCo-like)
    pos = {b.name: i for i, b in enumerate(bodies)}
    if all(b.parent == "world" or pos[b.parent] < pos[b.name] for b in bodies):
        return list(bodies)
    return order


def joint_table(joints: list[Joint], names: list[str], bid: dict, parent: list[int], bodies: list[Body]) -> dict:
    """Joints grouped by body (parents-first), their addresses; checks free joints and
    fills their ``qpos0`` from their body's pose."""
    for j in joints:
        if j.body not in bid or j.body == "world":
            raise ModelError(f"joint {j.name!r}: unknown body {j.body!r}")
    ordered = [j for n in names for j in joints if j.body == n]
    for n in names:
        js = [j for j in ordered if j.body == n]
        if any(j.type == JointType.FREE for j in js):
            if len(js) > 1:
                raise ModelError(f"body {n!r}: a free joint must be the body's only joint")
            if parent[bid[n]] != 0:
                raise ModelError(f"joint {js[0].name!r}: a free joint is supported only on a body "
                                 f"whose parent is the world (body {n!r} has parent "
                                 f"{names[parent[bid[n]]]!r})")
    jntadr, jntnum = [], []
    for n in names:
        idx = [i for i, j in enumerate(ordered) if j.body == n]
        jntadr.append(idx[0] if idx else -1)
        jntnum.append(len(idx))
    qposadr, dofadr, nq, nv = [], [], 0, 0
    for j in ordered:
        qposadr.append(nq)
        dofadr.append(nv)
        nq, nv = nq + j.type.nq, nv + j.type.nv
    for j in ordered:  # free joints start where their body is
        if j.type == JointType.FREE:
            b = bodies[bid[j.body] - 1]
            j.qpos0 = np.concatenate([b.pos, b.quat])
            j.qpos_spring = j.qpos0.copy()
    return dict(joints=ordered, jntadr=jntadr, jntnum=jntnum, qposadr=qposadr, dofadr=dofadr, nq=nq, nv=nv)


def check_masses(names: list[str], parent: list[int], bodies: list[Body], jntnum: list[int]) -> None:
    """Massless moving bodies must have mass somewhere below them."""
    nbody = len(names)
    subtree_mass = np.zeros(nbody)
    for i in range(nbody - 1, 0, -1):
        subtree_mass[i] += bodies[i - 1].mass
        subtree_mass[parent[i]] += subtree_mass[i]
    moving = np.zeros(nbody, bool)
    for i in range(1, nbody):
        moving[i] = moving[parent[i]] or jntnum[i] > 0
    for i in range(1, nbody):
        if moving[i] and jntnum[i] > 0 and subtree_mass[i] <= 0:
            raise ModelError(f"body {names[i]!r}: a moving body needs positive mass in its subtree")
        if jntnum[i] > 0 and bodies[i - 1].mass > 0 and not np.any(bodies[i - 1].inertia):
            raise ModelError(f"body {names[i]!r}: a point mass (zero inertia) cannot have joints of its own")


def transmissions(elements: Elements, jt: dict) -> dict:
    """Tendon coefficients, actuator moments and activation addresses."""
    joints, nv = jt["joints"], jt["nv"]
    jid = {j.name: i for i, j in enumerate(joints)}
    scalar = {j.name for j in joints if j.type in (JointType.HINGE, JointType.SLIDE)}
    tendon_coef = np.zeros((len(elements.tendons), nv))
    for t_i, t in enumerate(elements.tendons):
        for jn, c in t.coefs.items():
            if jn not in scalar:
                raise ModelError(f"tendon {t.name!r}: joint {jn!r} is not a hinge or slide joint of the model")
            tendon_coef[t_i, jt["dofadr"][jid[jn]]] += float(c)
    tid = {t.name: i for i, t in enumerate(elements.tendons)}
    moment = np.zeros((len(elements.actuators), nv))
    actadr, na = [], 0
    for a_i, a in enumerate(elements.actuators):
        if a.joint is not None:
            kind = joints[jid[a.joint]].type if a.joint in jid else None
            if a.joint in scalar:
                if a.gear.shape != (1,):
                    raise ModelError(f"actuator {a.name!r}: gear on hinge/slide joint {a.joint!r} is a "
                                     f"number, got {a.gear.tolist()}")
                moment[a_i, jt["dofadr"][jid[a.joint]]] = a.gear[0]
            elif kind == JointType.BALL:
                gear = np.pad(a.gear, (0, 3 - len(a.gear)))  # g -> (g, 0, 0)
                moment[a_i, jt["dofadr"][jid[a.joint]] + np.arange(3)] = gear
            else:
                raise ModelError(f"actuator {a.name!r}: joint {a.joint!r} is not a hinge, slide or ball "
                                 "joint of the model (only those can be actuated)")
        else:
            if a.tendon not in tid:
                raise ModelError(f"actuator {a.name!r}: unknown tendon {a.tendon!r}")
            moment[a_i] = a.gear[0] * tendon_coef[tid[a.tendon]]
        actadr.append(na if a.dyntype != DynType.NONE else -1)
        na += a.dyntype != DynType.NONE
    return dict(tendon_coef=tendon_coef, moment=moment, actadr=actadr, na=na)


def equality_table(elements: Elements, jt: dict, bid: dict, parent: list[int], bodies: list[Body]) -> dict:
    """Equality object ids, and the anchors and frames of connect / weld (those left
    to ``qpos0`` are taken from the bodies' poses there)."""
    joints = jt["joints"]
    jid = {j.name: i for i, j in enumerate(joints)}
    scalar = {j.name for j in joints if j.type in (JointType.HINGE, JointType.SLIDE)}
    tid = {t.name: i for i, t in enumerate(elements.tendons)}
    # body poses at qpos0 (a joint at qpos0 leaves its body at pos / quat)
    pos_w, rot_w = [np.zeros(3)], [np.eye(3)]
    for i, b in enumerate(bodies, start=1):
        pos_w.append(pos_w[parent[i]] + rot_w[parent[i]] @ b.pos)
        rot_w.append(rot_w[parent[i]] @ quat_to_mat_np(b.quat))
    obj1, obj2, anchor, frame_quat = [], [], [], []
    for e in elements.equalities:
        on_bodies = e.type in ("connect", "weld")
        table = bid if on_bodies else jid if e.type == "joint" else tid
        for label, o in (("obj1", e.obj1), ("obj2", e.obj2)):
            if o is None and label == "obj2":
                continue
            if on_bodies and o not in bid:
                raise ModelError(f"equality {e.name!r}: {label} {o!r} is not a body of the model")
            if not on_bodies and (o not in table or (e.type == "joint" and o not in scalar)):
                raise ModelError(f"equality {e.name!r}: {label} {o!r} is not a hinge/slide "
                                 f"joint or a tendon of the model")
        b1, b2 = table[e.obj1], (0 if on_bodies else -1) if e.obj2 is None else table[e.obj2]
        if on_bodies and b1 == b2:
            raise ModelError(f"equality {e.name!r}: obj1 and obj2 are the same body {e.obj1!r}")
        a, fq = e.anchor.copy(), e.frame_quat.copy()
        if on_bodies:
            if np.isnan(a[1]).any():  # where anchor 1 sits at qpos0, in body 2's frame
                a[1] = rot_w[b2].T @ (pos_w[b1] + rot_w[b1] @ a[0] - pos_w[b2])
            if np.isnan(fq[1]).any():  # R1 q1 = R2 q2 at qpos0
                fq[1] = mat_to_quat_np(rot_w[b2].T @ rot_w[b1] @ quat_to_mat_np(fq[0]))
        else:
            a[:], fq[:] = 0.0, (1.0, 0.0, 0.0, 0.0)
        obj1.append(b1)
        obj2.append(b2)
        anchor.append(a)
        frame_quat.append(fq)
    return dict(obj1=obj1, obj2=obj2, anchor=anchor, frame_quat=frame_quat)


def shapes(elements: Elements, bid: dict) -> dict:
    """Padded mesh and height-field arrays; checks geom bodies."""
    meshes, hfields = elements.meshes, elements.hfields
    for g in elements.geoms:
        if g.body not in bid:
            raise ModelError(f"geom {g.name!r}: unknown body {g.body!r}")
    maxv = max([1] + [len(v) for v, _ in meshes])
    maxf = max([1] + [len(f) for _, f in meshes])
    mesh_vert = np.zeros((len(meshes), maxv, 3))
    mesh_face = np.zeros((len(meshes), maxf, 3), dtype=np.int32)
    edges, naxis = zip(*[mesh_edges(f, v) for v, f in meshes]) if meshes else ((), ())
    mesh_edge = np.zeros((len(meshes), max([1] + [len(e) for e in edges]), 2), dtype=np.int32)
    for m_i, (v, f) in enumerate(meshes):
        mesh_vert[m_i, :len(v)] = v
        mesh_vert[m_i, len(v):] = v[0]  # pad with a real vertex: harmless in max/min
        mesh_face[m_i, :len(f)] = f
        mesh_edge[m_i, :len(edges[m_i])] = edges[m_i]
    hfield_data = np.zeros((len(hfields), max([1] + [h.size for _, h in hfields])))
    for h_i, (_, h) in enumerate(hfields):
        hfield_data[h_i, :h.size] = h.reshape(-1)
    return dict(mesh_vert=mesh_vert, mesh_face=mesh_face, mesh_edge=mesh_edge, edges=edges, naxis=naxis,
                hfield_data=hfield_data)


def pair_table(elements: Elements, options: SceneOptions, topo: Topology, bid: dict,
               sh: dict) -> tuple[Topology, dict]:
    """Checks the contact-mode rules' bodies and the explicit pairs' geoms, then
    ``collision.pairs.pair_table``: the Topology with its pair table, and the explicit
    pairs' parameter arrays."""
    gid = {g.name: i for i, g in enumerate(elements.geoms)}
    for _, rule_bodies, _ in elements.mode_rules:
        for b in rule_bodies:
            if b not in bid:
                raise ModelError(f"set_contact_mode: unknown body {b!r}")
    explicit = {}
    for p in elements.pairs:
        for g in (p.geom1, p.geom2):
            if g not in gid:
                raise ModelError(f"pair ({p.geom1!r}, {p.geom2!r}): unknown geom {g!r}")
        a, b = gid[p.geom1], gid[p.geom2]
        if topo.geom_body[a] == topo.geom_body[b]:
            raise ModelError(f"pair ({p.geom1!r}, {p.geom2!r}): both geoms are on one body")
        a, b = (a, b) if topo.geom_type[a] <= topo.geom_type[b] else (b, a)
        explicit[(a, b)] = p
    geom_size = np.reshape(np.asarray([g.size for g in elements.geoms], np.float64), (len(elements.geoms), 3))
    hfield_size = np.reshape(np.asarray([hs for hs, _ in elements.hfields], np.float64), (len(elements.hfields), 4))
    return collision_pairs.pair_table(topo, explicit, elements.mode_rules,
                                      contact_models.get(options.contact).collision, geom_size,
                                      sh["mesh_vert"], hfield_size)


def is_implicit(a: Actuator, joints: list[Joint], options: SceneOptions) -> bool:
    """Whether actuator ``a`` is solved implicitly (``ModelBuilder.add_actuator``)."""
    implicit = options.implicit_pd if a.implicit is None else a.implicit
    if not implicit or not is_servo(a.bias):
        return False
    if not options.constraint:
        if a.implicit:
            raise ModelError(f"actuator {a.name!r}: implicit PD is solved in the constraint stage, "
                             "which constraint=False turns off")
        return False
    if a.joint is not None and any(j.name == a.joint and j.actfrcrange is not None for j in joints):
        raise ModelError(f"actuator {a.name!r}: joint {a.joint!r} clamps its total actuator force "
                         "(actuatorfrcrange), which implicit PD does not honour; use forcerange")
    return True


def restitution(geom: Geom, options: SceneOptions) -> float:
    """A geom's restitution, the contact model's default where it set none."""
    return contact_models.get(options.contact).default_restitution if geom.restitution is None else geom.restitution


def compile_model(elements: Elements, options: SceneOptions, dtype=jnp.float32) -> Model:
    """Validate the recorded elements and return the Model (float arrays in ``dtype``).

    Raises:
      ModelError: an element that cannot be built (an unknown name it refers to, a
        cycle of bodies, a massless moving body, ...), or, with contacts on, a geom
        pair of a kind that has no collision routine.
    """
    bodies = body_order(elements.bodies)
    names = ["world"] + [b.name for b in bodies]
    bid = {n: i for i, n in enumerate(names)}
    parent = [-1] + [bid[b.parent] for b in bodies]
    nbody = len(names)
    jt = joint_table(elements.joints, names, bid, parent, bodies)
    joints, nq, nv = jt["joints"], jt["nq"], jt["nv"]
    check_masses(names, parent, bodies, jt["jntnum"])
    tr = transmissions(elements, jt)
    eq = equality_table(elements, jt, bid, parent, bodies)
    exclude = []
    for b1, b2 in elements.excludes:
        for b in (b1, b2):
            if b not in bid:
                raise ModelError(f"contact exclude ({b1!r}, {b2!r}): unknown body {b!r}")
        exclude.append(tuple(sorted((bid[b1], bid[b2]))))
    sh = shapes(elements, bid)
    geoms, meshes, hfields = elements.geoms, elements.meshes, elements.hfields
    actuators, tendons, equalities = elements.actuators, elements.tendons, elements.equalities
    nu = len(actuators)

    topo = Topology(
        nq=nq, nv=nv, nbody=nbody, njnt=len(joints), ngeom=len(geoms),
        nmesh=len(meshes), nhfield=len(hfields), nu=nu, na=tr["na"], ntendon=len(tendons),
        neq=len(equalities),
        body_parent=tuple(parent), body_jntadr=tuple(jt["jntadr"]),
        body_jntnum=tuple(jt["jntnum"]), body_name=tuple(names),
        jnt_type=tuple(int(j.type) for j in joints), jnt_body=tuple(bid[j.body] for j in joints),
        jnt_qposadr=tuple(jt["qposadr"]), jnt_dofadr=tuple(jt["dofadr"]),
        jnt_limited=tuple(j.range is not None for j in joints),
        jnt_actfrclimited=tuple(j.actfrcrange is not None for j in joints),
        jnt_name=tuple(j.name for j in joints),
        geom_type=tuple(int(g.type) for g in geoms),
        geom_body=tuple(bid[g.body] for g in geoms),
        geom_mesh=tuple(g.mesh for g in geoms),
        geom_hfield=tuple(g.hfield for g in geoms),
        geom_contype=tuple(g.contype for g in geoms),
        geom_conaffinity=tuple(g.conaffinity for g in geoms),
        geom_condim=tuple(g.condim for g in geoms),
        geom_name=tuple(g.name for g in geoms),
        mesh_nvert=tuple(len(v) for v, _ in meshes),
        mesh_nface=tuple(len(f) for _, f in meshes),
        mesh_nedge=tuple(len(e) for e in sh["edges"]),
        mesh_naxis=tuple(sh["naxis"]),
        hfield_nrow=tuple(h.shape[0] for _, h in hfields),
        hfield_ncol=tuple(h.shape[1] for _, h in hfields),
        actuator_dyntype=tuple(int(a.dyntype) for a in actuators),
        actuator_actadr=tuple(tr["actadr"]),
        actuator_ctrllimited=tuple(a.ctrlrange is not None for a in actuators),
        actuator_forcelimited=tuple(a.forcerange is not None for a in actuators),
        actuator_actlimited=tuple(a.actrange is not None for a in actuators),
        actuator_name=tuple(a.name for a in actuators),
        actuator_implicit=tuple(is_implicit(a, joints, options) for a in actuators),
        actuator_ball=tuple(any(j.name == a.joint and j.type == JointType.BALL for j in joints)
                            for a in actuators),
        dof_frictional=tuple(bool(j.frictionloss > 0) for j in joints for _ in range(j.type.nv)),
        tendon_limited=tuple(t.range is not None for t in tendons),
        tendon_name=tuple(t.name for t in tendons),
        eq_type=tuple(e.type for e in equalities), eq_obj1=tuple(eq["obj1"]),
        eq_obj2=tuple(eq["obj2"]), eq_name=tuple(e.name for e in equalities),
        exclude=tuple(sorted(set(exclude))),
    )
    topo, pairs = pair_table(elements, options, topo, bid, sh)
    if options.constraint:  # without contacts no pair reaches a narrow phase
        collision_pairs.check_supported(topo)

    def arr(x, shape=None):
        a = np.asarray(x, dtype=np.float64)
        if shape is not None:
            a = a.reshape(shape)
        return jnp.asarray(a, dtype=dtype)

    def per_dof(attr):
        return np.concatenate([[getattr(j, attr)] * j.type.nv for j in joints]) if joints else np.zeros(0)

    def ranges(items, attr, n):
        return arr([np.zeros(2) if getattr(x, attr) is None else getattr(x, attr) for x in items], (n, 2))

    opt = Options(timestep=arr(options.timestep), gravity=arr(options.gravity),
                  density=arr(options.density), viscosity=arr(options.viscosity), wind=arr(options.wind),
                  **{name: arr(value) for name, value in options.stage_params.items()},
                  contact=options.contact, fluid=options.fluid, **options.flags)
    nj, ng, nt, neq = len(joints), len(geoms), len(tendons), len(equalities)
    return Model(
        topo=topo, opt=opt,
        body_pos=arr([np.zeros(3)] + [b.pos for b in bodies], (nbody, 3)),
        body_quat=arr([np.array([1.0, 0, 0, 0])] + [b.quat for b in bodies], (nbody, 4)),
        body_mass=arr([0.0] + [b.mass for b in bodies], (nbody,)),
        body_com=arr([np.zeros(3)] + [b.com for b in bodies], (nbody, 3)),
        body_inertia=arr([np.zeros(3)] + [b.inertia for b in bodies], (nbody, 3)),
        body_iquat=arr([np.array([1.0, 0, 0, 0])] + [b.iquat for b in bodies], (nbody, 4)),
        jnt_pos=arr([j.pos for j in joints], (nj, 3)),
        jnt_axis=arr([j.axis for j in joints], (nj, 3)),
        jnt_stiffness=arr([j.stiffness for j in joints], (nj,)),
        jnt_range=ranges(joints, "range", nj),
        jnt_actfrcrange=ranges(joints, "actfrcrange", nj),
        qpos0=arr(np.concatenate([j.qpos0 for j in joints]) if joints else [], (nq,)),
        qpos_spring=arr(np.concatenate([j.qpos_spring for j in joints]) if joints else [], (nq,)),
        dof_damping=arr(per_dof("damping"), (nv,)),
        dof_armature=arr(per_dof("armature"), (nv,)),
        dof_frictionloss=arr(per_dof("frictionloss"), (nv,)),
        geom_size=arr([g.size for g in geoms], (ng, 3)),
        geom_pos=arr([g.pos for g in geoms], (ng, 3)),
        geom_quat=arr([g.quat for g in geoms], (ng, 4)),
        geom_friction=arr([g.friction for g in geoms], (ng, 2)),
        geom_restitution=arr([restitution(g, options) for g in geoms], (ng,)),
        geom_rgba=arr([g.rgba for g in geoms], (ng, 4)),
        mesh_vert=arr(sh["mesh_vert"]),
        mesh_face=jnp.asarray(sh["mesh_face"]),
        mesh_edge=jnp.asarray(sh["mesh_edge"]),
        hfield_size=arr([hs for hs, _ in hfields], (len(hfields), 4)),
        hfield_data=arr(sh["hfield_data"]),
        actuator_moment=arr(tr["moment"], (nu, nv)),
        actuator_gain=arr([a.gain for a in actuators], (nu,)),
        actuator_bias=arr([a.bias for a in actuators], (nu, 3)),
        actuator_ctrlrange=ranges(actuators, "ctrlrange", nu),
        actuator_forcerange=ranges(actuators, "forcerange", nu),
        actuator_actrange=ranges(actuators, "actrange", nu),
        actuator_tau=arr([a.tau for a in actuators], (nu,)),
        tendon_coef=arr(tr["tendon_coef"], (nt, nv)),
        tendon_stiffness=arr([t.stiffness for t in tendons], (nt,)),
        tendon_damping=arr([t.damping for t in tendons], (nt,)),
        tendon_lengthspring=ranges(tendons, "lengthspring", nt),
        tendon_range=ranges(tendons, "range", nt),
        eq_polycoef=arr([e.polycoef for e in equalities], (neq, 5)),
        eq_anchor=arr(eq["anchor"], (neq, 2, 3)),
        eq_frame_quat=arr(eq["frame_quat"], (neq, 2, 4)),
        eq_torquescale=arr([e.torquescale for e in equalities], (neq,)),
        eq_timeconst=arr([e.timeconst for e in equalities], (neq,)),
        **{k: arr(v) for k, v in pairs.items()},
        contact_params=contact_models.make_params(options.contact, dtype, **options.contact_params),
    )
