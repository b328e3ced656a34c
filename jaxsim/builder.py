"""Programmatic model building with validation.

Example::

    b = ModelBuilder(timestep=1e-3)
    b.add_body("link", pos=(0, 0, 1), mass=1.0, inertia=(0.01, 0.01, 0.002))
    b.add_joint("link", "hinge", axis=(0, 1, 0), name="shoulder")
    b.add_geom("link", "box", size=(0.02, 0.02, 0.1))
    b.add_actuator("shoulder_motor", joint="shoulder", kind="motor", gear=10)
    model = b.build()

Elements are named; bodies may be added in any order (parents are resolved by name in
``build``). Every check raises ``ModelError`` naming the offending element. A body with
no joint (or a ``"fixed"`` joint) is welded to its parent: it adds no dof and moves with
its parent, which is the same as merging its inertia into the parent for dynamics while
keeping its own frame for kinematics and geoms.

The builder records and checks elements (``jaxsim.elements``); its options are
``jaxsim.options.SceneOptions``; ``build`` hands both to ``jaxsim.compiler``.
"""

from __future__ import annotations

from typing import Sequence

import jax.numpy as jnp
import numpy as np

from jaxsim import names as option_names
from jaxsim.compiler import compile_model
from jaxsim.elements import (Actuator, Body, Elements, Equality, Geom, Joint, Pair, Tendon, is_servo,
                             unit_vector, vector)
from jaxsim.math import mat_to_quat_np
from jaxsim.options import SceneOptions, keyword_signature, mode_from_name
from jaxsim.types import DynType, GeomType, JointType, Model, ModelError

_JOINTS = {"free": JointType.FREE, "ball": JointType.BALL, "slide": JointType.SLIDE,
           "prismatic": JointType.SLIDE, "hinge": JointType.HINGE, "revolute": JointType.HINGE}
_GEOMS = {"plane": GeomType.PLANE, "sphere": GeomType.SPHERE, "capsule": GeomType.CAPSULE,
          "box": GeomType.BOX, "convex": GeomType.CONVEX, "hfield": GeomType.HFIELD}
_DYNS = {"none": DynType.NONE, "integrator": DynType.INTEGRATOR, "filter": DynType.FILTER,
         "filterexact": DynType.FILTEREXACT}

# RoKi-FD's material defaults: (static, kinetic) friction
DEFAULT_FRICTION = (0.5, 0.3)

_PAIR_RENAMED = {"stiffness": "penalty_stiffness", "damping": "penalty_damping"}  # add_pair's former names
# attributes a builder forwards to its options and its elements (``b.contact_params`` is
# ``b.options.contact_params``, ``b.bodies`` is ``b.elements.bodies``)
_OPTION_ATTRIBUTES = ("timestep", "gravity", "density", "viscosity", "wind", "fluid", "contact",
                      "contact_params", "implicit_pd", "stage_params", "flags")
_ELEMENT_ATTRIBUTES = ("bodies", "joints", "geoms", "meshes", "hfields", "actuators", "tendons",
                       "equalities", "excludes", "mode_rules", "pairs")


class ModelBuilder:
    """Collects bodies, joints, geoms, actuators, tendons and couplings; ``build()``
    validates them and returns a ``Model``."""

    def __init__(self, **options):
        """Scene-wide options, by keyword.

        Args:
          **options: the scene options, the fields of ``jaxsim.options.SceneOptions``
            (``timestep``, ``gravity``, ``contact``, ``contact_mode``, ``constraint``,
            ``solver_iterations``, ``implicit_pd``, ...; their defaults, units and
            meanings are there and on the docs' Options page), and the parameters of
            the contact model ``contact`` by their names (``contact_rate=...``; see the
            model's ``params`` in its module). Former option names are accepted with a
            ``DeprecationWarning``.

        Raises:
          ModelError: a bad value, or a name that is neither a scene option nor a
            parameter of the contact model.
        """
        self.options = SceneOptions.from_keywords(options, stacklevel=4)
        self.elements = Elements(mode_rules=[(mode_from_name(self.options.contact_mode, "contact_mode"), (), False)])
        self._names: dict[str, set] = {k: set() for k in ("body", "joint", "geom", "actuator",
                                                          "tendon", "equality")}

    def __getattr__(self, name: str):
        """The options' and the element lists' attributes, forwarded (see
        ``_OPTION_ATTRIBUTES``)."""
        if name in _OPTION_ATTRIBUTES:
            return getattr(self.options, name)
        if name in _ELEMENT_ATTRIBUTES:
            return getattr(self.elements, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # ---------------------------------------------------------------- elements

    def _name(self, kind: str, name: str | None, count: int) -> str:
        name = name if name else f"{kind}{count}"
        if name in self._names[kind] or (kind == "body" and name == "world"):
            raise ModelError(f"duplicate {kind} name {name!r}")
        self._names[kind].add(name)
        return name

    def add_body(self, name: str, parent: str = "world", *, pos=(0, 0, 0), quat=(1, 0, 0, 0),
                 mass: float = 1.0, com=(0, 0, 0), inertia=None, inertia_quat=None) -> str:
        """Add a rigid body.

        Args:
          name: unique body name.
          parent: parent body name ("world" for the root).
          pos: (3,) body origin in the parent frame at q = qpos0, m.
          quat: (4,) orientation in the parent frame, (w, x, y, z); normalized here.
          mass: kg, > 0 (0 allowed for a massless body whose subtree has mass).
            A body without joints of its own may be a point mass (inertia all
            zero, as MuJoCo allows for bodies that do not move on their own).
          com: (3,) centre of mass in the body frame, m.
          inertia: (3,) principal moments or (3, 3) tensor about the com, kg m^2;
            default: a solid sphere of radius 0.05 m.
          inertia_quat: (4,) orientation of the principal axes when ``inertia`` has 3
            entries.
        """
        name = self._name("body", name, len(self.elements.bodies) + 1)
        where = f"body {name!r}"
        mass = float(mass)
        if not np.isfinite(mass) or mass < 0:
            raise ModelError(f"{where}: mass must be positive, got {mass}")
        if inertia is None:
            inertia = np.full(3, 0.4 * mass * 0.05**2)
        inertia = np.asarray(inertia, dtype=np.float64)
        if inertia.shape == (3,):  # principal moments, axes given (or the body axes)
            moments = inertia
            iquat = np.array([1.0, 0, 0, 0]) if inertia_quat is None else \
                unit_vector(inertia_quat, 4, f"{where} inertia_quat")
        elif inertia.shape == (3, 3):
            if not np.all(np.isfinite(inertia)) or not np.allclose(
                    inertia, inertia.T, atol=1e-12 + 1e-9 * np.abs(inertia).max()):
                raise ModelError(f"{where}: inertia must be a finite symmetric matrix, got {inertia.tolist()}")
            moments, axes = np.linalg.eigh(0.5 * (inertia + inertia.T))
            if np.linalg.det(axes) < 0:
                axes[:, 0] = -axes[:, 0]
            iquat = mat_to_quat_np(axes)
        else:
            raise ModelError(f"{where}: inertia must have 3 or 3x3 entries, got shape {inertia.shape}")
        if not np.all(np.isfinite(moments)):
            raise ModelError(f"{where}: non-finite inertia {moments.tolist()}")
        scale = max(np.abs(moments).max(), 1e-300)
        point_mass = mass > 0 and not np.any(moments)  # checked at build: no joints of its own
        if mass > 0 and not point_mass and moments.min() <= 1e-12 * scale:
            raise ModelError(f"{where}: inertia is not positive definite (principal moments {moments.tolist()})")
        if mass == 0 and scale > 1e-300:
            raise ModelError(f"{where}: a massless body must have zero inertia")
        srt = np.sort(moments)
        if srt[0] + srt[1] < srt[2] * (1 - 1e-6):
            raise ModelError(f"{where}: principal moments {moments.tolist()} violate the triangle inequality")
        self.elements.bodies.append(Body(name, parent, vector(pos, 3, f"{where} pos"),
                                         unit_vector(quat, 4, f"{where} quat"), mass,
                                         vector(com, 3, f"{where} com"), moments.copy(), iquat))
        return name

    def add_joint(self, body: str, type: str = "hinge", *, name: str | None = None,
                  axis=(0, 0, 1), pos=(0, 0, 0), range=None, damping: float = 0.0,
                  armature: float = 0.0, stiffness: float = 0.0, frictionloss: float = 0.0,
                  ref: float = 0.0, springref: float | None = None,
                  actuator_force_range=None) -> str | None:
        """Add a joint between ``body`` and its parent; several joints on one body act in
        the order added (as in MJCF).

        Args:
          body: child body name.
          type: "free", "ball", "hinge"/"revolute", "slide"/"prismatic" or "fixed".
          axis: (3,) hinge / slide axis in the body frame (normalized here).
          pos: (3,) anchor in the body frame, m.
          range: (lo, hi) joint limits in rad or m (a ball joint: its rotation angle
            stays below hi); None: unlimited.
          damping, armature, stiffness, frictionloss: per-dof values (>= 0).
          ref: hinge/slide coordinate at which the body sits at ``pos``/``quat``.
          springref: rest coordinate of the joint spring (default ``ref``).
          actuator_force_range: (lo, hi) clamp on the total actuator force on this
            hinge/slide joint (URDF ``effort``); None: unclamped.
        Returns:
          the joint name, or None for a fixed joint (the body is welded).
        """
        if type == "fixed":
            return None
        if type not in _JOINTS:
            raise ModelError(f"joint on body {body!r}: unknown type {type!r}; "
                             f"supported: {sorted(_JOINTS) + ['fixed']}")
        jtype = _JOINTS[type]
        name = self._name("joint", name, len(self.elements.joints))
        where = f"joint {name!r}"
        for label, val in (("damping", damping), ("armature", armature),
                           ("stiffness", stiffness), ("frictionloss", frictionloss)):
            if not np.isfinite(val) or val < 0:
                raise ModelError(f"{where}: {label} must be >= 0, got {val}")
        if range is not None:
            range = vector(range, 2, f"{where} range")
            if not range[0] < range[1]:
                raise ModelError(f"{where}: range must have low < high, got {range.tolist()}")
        if actuator_force_range is not None:
            if jtype not in (JointType.HINGE, JointType.SLIDE):
                raise ModelError(f"{where}: actuator_force_range applies to hinge and slide joints only")
            actuator_force_range = vector(actuator_force_range, 2, f"{where} actuator_force_range")
            if not actuator_force_range[0] <= actuator_force_range[1]:
                raise ModelError(f"{where}: actuator_force_range must have low <= high, "
                                 f"got {actuator_force_range.tolist()}")
        axis = unit_vector(axis, 3, f"{where} axis") if jtype in (JointType.HINGE, JointType.SLIDE) \
            else np.array([0.0, 0.0, 1.0])
        if jtype == JointType.FREE:
            qpos0 = np.zeros(7)  # filled from the body pose in build()
        elif jtype == JointType.BALL:
            qpos0 = np.array([1.0, 0, 0, 0])
        else:
            qpos0 = np.array([float(ref)])
        spring = qpos0.copy() if springref is None else np.array([float(springref)])
        self.elements.joints.append(Joint(name, body, jtype, vector(pos, 3, f"{where} pos"), axis, range,
                                          float(damping), float(armature), float(stiffness),
                                          float(frictionloss), actuator_force_range, qpos0, spring))
        return name

    def add_geom(self, body: str, type: str, size=(0.0, 0.0, 0.0), *, name: str | None = None,
                 pos=(0, 0, 0), quat=(1, 0, 0, 0), friction=DEFAULT_FRICTION,
                 restitution: float | None = None, rgba=(0.6, 0.6, 0.7, 1.0), contype: int = 1,
                 conaffinity: int = 1, condim: int = 3, vertices=None, faces=None, heights=None) -> str:
        """Add a collision shape to ``body`` ("world" for static geometry).

        Args:
          type: "plane", "sphere" (size: radius), "capsule" (radius, half-length along
            z), "box" (half-extents) or "convex" (``vertices`` (n, 3) and triangle
            ``faces`` (f, 3) of a convex polyhedron, outward counter-clockwise) or
            "hfield" (static terrain: ``heights`` (nrow, ncol) in [0, 1], size =
            (half x, half y, top z, base depth) as in MuJoCo).
          friction: (static, kinetic) coefficients.
          restitution: coefficient in [0, 1]; None: the contact model's default
            (``ContactModel.default_restitution``: 0.4 for ``springhead``, else 0).
          condim: MuJoCo's contact dimensionality, 1, 3, 4 or 6. A contact between two
            geoms takes the larger of their two; 1 makes it frictionless (``friction``
            is not used), 3 has sliding friction. 4 and 6 (torsional and rolling
            friction in MuJoCo) act as 3: jaxsim models sliding friction only.
        """
        if type not in _GEOMS:
            raise ModelError(f"geom on body {body!r}: unknown type {type!r}; supported: {sorted(_GEOMS)}")
        gtype = _GEOMS[type]
        name = self._name("geom", name, len(self.elements.geoms))
        where = f"geom {name!r}"
        raw_size = np.asarray(size, dtype=np.float64).reshape(-1)
        size = np.resize(np.asarray(size, dtype=np.float64).reshape(-1), 3) if np.size(size) else np.zeros(3)
        need = {GeomType.SPHERE: 1, GeomType.CAPSULE: 2, GeomType.BOX: 3}.get(gtype, 0)
        if need and (raw_size.size < need or not np.all(raw_size[:need] > 0)):
            raise ModelError(f"{where}: {type} needs {need} positive size values, got {raw_size.tolist()}")
        friction = vector(friction, 2, f"{where} friction")
        if np.any(friction < 0):
            raise ModelError(f"{where}: friction must be >= 0, got {friction.tolist()}")
        if restitution is not None and not 0 <= restitution <= 1:
            raise ModelError(f"{where}: restitution must be in [0, 1], got {restitution}")
        if condim not in (1, 3, 4, 6):
            raise ModelError(f"{where}: condim must be 1, 3, 4 or 6, got {condim!r}")
        mesh = hfield = -1
        if gtype == GeomType.CONVEX:
            mesh = self._add_mesh(where, vertices, faces)
        if gtype == GeomType.HFIELD:
            hsize = raw_size
            h = np.asarray(heights if heights is not None else [], dtype=np.float64)
            if hsize.shape != (4,) or not np.all(hsize > 0):
                raise ModelError(f"{where}: hfield size must be 4 positive numbers, got {raw_size.tolist()}")
            if h.ndim != 2 or min(h.shape) < 2 or not np.all(np.isfinite(h)):
                raise ModelError(f"{where}: hfield heights must be a finite (nrow >= 2, ncol >= 2) array")
            self.elements.hfields.append((hsize, h))
            hfield = len(self.elements.hfields) - 1
        self.elements.geoms.append(Geom(name, body, gtype, size, vector(pos, 3, f"{where} pos"),
                                        unit_vector(quat, 4, f"{where} quat"), friction, restitution,
                                        vector(rgba, 4, f"{where} rgba"), int(contype), int(conaffinity), mesh,
                                        hfield, int(condim)))
        return name

    def _add_mesh(self, where: str, vertices, faces) -> int:
        if vertices is None or faces is None:
            raise ModelError(f"{where}: a convex geom needs vertices and faces")
        v = np.asarray(vertices, dtype=np.float64)
        f = np.asarray(faces, dtype=np.int64)
        if v.ndim != 2 or v.shape[1] != 3 or len(v) < 4 or not np.all(np.isfinite(v)):
            raise ModelError(f"{where}: vertices must be (n >= 4, 3) finite, got shape {v.shape}")
        if f.ndim != 2 or f.shape[1] != 3 or len(f) < 4 or f.min() < 0 or f.max() >= len(v):
            raise ModelError(f"{where}: faces must be (f >= 4, 3) indices into the vertices")
        centre = v.mean(0)
        normals = np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]])
        if np.any(np.linalg.norm(normals, axis=1) <= 1e-14):
            raise ModelError(f"{where}: degenerate (zero-area) face")
        outward = np.einsum("ij,ij->i", normals, v[f[:, 0]] - centre)
        if np.any(outward <= 0):
            raise ModelError(f"{where}: faces must be oriented outward (counter-clockwise seen from outside)")
        self.elements.meshes.append((v, f))
        return len(self.elements.meshes) - 1

    def add_actuator(self, name: str | None = None, *, joint: str | None = None,
                     tendon: str | None = None, kind: str = "motor", gear=1.0,
                     kp: float = 0.0, kv: float = 0.0, gain: float | None = None,
                     bias=None, ctrlrange=None, forcerange=None, actrange=None,
                     dyntype: str = "none", tau: float = 1.0, implicit_pd: bool | None = None,
                     **former) -> str:
        """Add an actuator on a hinge/slide/ball joint or a tendon.

        ``force = gain * u + bias[0] + bias[1] * length + bias[2] * velocity`` with
        ``u`` the control (or the activation when ``dyntype`` is not "none") and length
        and velocity those of the transmission scaled by ``gear``; the generalized force
        is ``gear * force`` on the joint. On a ball joint ``gear`` is a 3-vector in
        the joint frame (a number g means (g, 0, 0), as in MuJoCo): length ``gear .
        rotvec`` of the joint's rotation, velocity ``gear . omega``, so three
        position servos with gears along x, y, z hold a target orientation. ``kind`` fills gain and bias:
        "motor" (gain 1), "position" (PD servo: gain kp, bias (0, -kp, -kv)),
        "velocity" (gain kv, bias (0, 0, -kv)) or "general" (give gain and bias).
        ``implicit_pd``: evaluate the feedback at the step's end, solved with the
        constraints (implicit PD: stable at large dt; needs ``bias[1] <= 0``,
        ``bias[2] <= 0``, not both 0); None: the builder's ``implicit_pd``. (Former
        name: ``implicit``.)
        """
        name = self._name("actuator", name, len(self.elements.actuators))
        where = f"actuator {name!r}"
        former = option_names.rename(former, f"add_actuator {where}")
        if set(former) - {"implicit_pd"}:
            raise ModelError(f"{where}: unknown argument(s) {sorted(set(former) - {'implicit_pd'})}")
        implicit_pd = former.get("implicit_pd", implicit_pd)
        if (joint is None) == (tendon is None):
            raise ModelError(f"{where}: give exactly one of joint= or tendon=")
        if kind == "motor":
            g, b = 1.0, np.zeros(3)
        elif kind == "position":
            g, b = float(kp), np.array([0.0, -float(kp), -float(kv)])
        elif kind == "velocity":
            g, b = float(kv), np.array([0.0, 0.0, -float(kv)])
        elif kind == "general":
            g = float(1.0 if gain is None else gain)
            b = vector(np.zeros(3) if bias is None else bias, 3, f"{where} bias")
        else:
            raise ModelError(f"{where}: unknown kind {kind!r}; supported: motor, position, velocity, general")
        if dyntype not in _DYNS:
            raise ModelError(f"{where}: unknown dyntype {dyntype!r}; supported: {sorted(_DYNS)}")
        gear = np.atleast_1d(np.asarray(gear, float))
        if gear.shape not in ((1,), (3,)) or not np.all(np.isfinite(gear)) or not np.any(gear != 0):
            raise ModelError(f"{where}: gear must be a finite non-zero number (or a 3-vector on a ball joint), "
                             f"got {gear.tolist()}")
        if tendon is not None and gear.shape != (1,):
            raise ModelError(f"{where}: a tendon's gear is a number, got {gear.tolist()}")
        if _DYNS[dyntype] in (DynType.FILTER, DynType.FILTEREXACT) and not tau > 0:
            raise ModelError(f"{where}: filter time constant tau must be positive, got {tau}")
        ranges = []
        for label, r in (("ctrlrange", ctrlrange), ("forcerange", forcerange), ("actrange", actrange)):
            if r is not None:
                r = vector(r, 2, f"{where} {label}")
                if not r[0] <= r[1]:
                    raise ModelError(f"{where}: {label} must have low <= high, got {r.tolist()}")
            ranges.append(r)
        if implicit_pd and not is_servo(b):
            raise ModelError(f"{where}: implicit_pd=True needs position or velocity feedback (bias[1] <= 0, "
                             f"bias[2] <= 0, not both 0), got bias {b.tolist()}")
        self.elements.actuators.append(Actuator(name, joint, tendon, gear, g, b, *ranges,
                                                _DYNS[dyntype], float(tau), implicit_pd))
        return name

    def add_tendon(self, name: str, coefs: dict, *, stiffness: float = 0.0,
                   damping: float = 0.0, springlength=None, range=None) -> str:
        """Add a fixed tendon: ``length = sum(coef * q_joint)`` over hinge/slide joints.

        ``springlength``: (low, high) dead band of the tendon spring (default: no spring
        force unless ``stiffness`` > 0, then the band is [0, 0]).
        """
        name = self._name("tendon", name, len(self.elements.tendons))
        if not coefs:
            raise ModelError(f"tendon {name!r}: needs at least one joint coefficient")
        for label, val in (("stiffness", stiffness), ("damping", damping)):
            if not val >= 0:
                raise ModelError(f"tendon {name!r}: {label} must be >= 0, got {val}")
        sl = None if springlength is None else vector(springlength, 2, f"tendon {name!r} springlength")
        rg = None if range is None else vector(range, 2, f"tendon {name!r} range")
        self.elements.tendons.append(Tendon(name, dict(coefs), float(stiffness), float(damping), sl, rg))
        return name

    def add_equality(self, name: str | None, type: str, obj1: str, obj2: str | None = None,
                     polycoef=(0, 1, 0, 0, 0), *, anchor=(0, 0, 0), anchor2=None, quat1=(1, 0, 0, 0),
                     quat2=None, torquescale: float = 1.0, timeconst: float = 0.0) -> str:
        """Add an equality constraint, enforced as rows of the constraint solve
        (``contact/equality.py``), as MuJoCo's ``<equality>``:

          * ``"joint"`` / ``"tendon"``: ``x1 - x1_0 = poly(x2 - x2_0)`` between two
            hinge/slide joints or fixed tendons (``x_0`` at ``qpos0``; without ``obj2``:
            ``x1 - x1_0 = polycoef[0]``).
          * ``"connect"``: the point ``anchor`` of body ``obj1`` (its frame, m) and the
            point ``anchor2`` of ``obj2`` (default: where ``anchor`` is at ``qpos0``)
            coincide (a ball joint closing a loop). ``obj2`` None: the world.
          * ``"weld"``: as connect, and the frame ``quat1`` on ``obj1`` stays aligned
            with the frame ``quat2`` on ``obj2`` (defaults: their relative pose at
            ``qpos0`` is kept). The rotation error is scaled by ``torquescale``.

        Args:
          timeconst: s, the time in which a position error is corrected (the row's
            velocity target is ``-error / max(timeconst, dt)``: 0 corrects within a
            step; MuJoCo's ``solref[0]`` when loaded from MJCF).
        """
        if type not in ("joint", "tendon", "connect", "weld"):
            raise ModelError(f"equality {name!r}: type must be 'joint', 'tendon', 'connect' or 'weld', got {type!r}")
        name = self._name("equality", name, len(self.elements.equalities))
        where = f"equality {name!r}"
        if not (np.isfinite(timeconst) and timeconst >= 0):
            raise ModelError(f"{where}: timeconst must be >= 0, got {timeconst}")
        if not (np.isfinite(torquescale) and torquescale > 0):
            raise ModelError(f"{where}: torquescale must be > 0, got {torquescale}")
        a1 = vector(anchor, 3, f"{where} anchor")
        a2 = np.full(3, np.nan) if anchor2 is None else vector(anchor2, 3, f"{where} anchor2")
        q2 = np.full(4, np.nan) if quat2 is None else unit_vector(quat2, 4, f"{where} quat2")  # nan: from qpos0
        quats = np.stack([unit_vector(quat1, 4, f"{where} quat1"), q2])
        self.elements.equalities.append(Equality(name, type, obj1, obj2, vector(polycoef, 5, f"{where} polycoef"),
                                                 np.stack([a1, a2]), quats, float(torquescale), float(timeconst)))
        return name

    def add_exclude(self, body1: str, body2: str) -> None:
        """Never collide the geoms of ``body1`` with those of ``body2``."""
        self.elements.excludes.append((body1, body2))

    def set_contact_mode(self, mode: str, *bodies: str, group: Sequence[str] | None = None) -> None:
        """Set the contact mode ("constraint", "penalty" or "none") of geom pairs.

        ``set_contact_mode(mode)``: every pair; ``(mode, "a")``: every pair with a geom
        on body "a"; ``(mode, "a", "b")``: the pairs between bodies "a" and "b";
        ``(mode, group=[...])``: the pairs whose two bodies are both in the group.
        Later calls override earlier ones; ``add_pair(mode=...)`` overrides them all.
        A "none" pair is not even detected; a "penalty" pair gets a spring-damper
        force (``contact/penalty_forces.py``) instead of the contact model's solve.
        """
        m = mode_from_name(mode, "set_contact_mode")
        if group is not None and bodies:
            raise ModelError("set_contact_mode: give bodies or group=, not both")
        if len(bodies) > 2:
            raise ModelError(f"set_contact_mode: at most two bodies (a body pair), got {list(bodies)}; "
                             "use group= for more")
        names = tuple(group) if group is not None else tuple(bodies)
        self.elements.mode_rules.append((m, names, group is not None))

    def add_pair(self, geom1: str, geom2: str, *, mode: str | None = None, friction=None,
                 restitution: float | None = None, penalty_stiffness: float | None = None,
                 penalty_damping: float | None = None, **former) -> None:
        """An explicit geom pair (MJCF ``<contact><pair>``): it collides even where
        contype/conaffinity or an exclude would filter it, and the parameters given
        here replace those derived from the geoms in the step (None: derived).
        ``friction``: (static, kinetic); ``penalty_stiffness``, ``penalty_damping``:
        N/m, N s/m of a penalty pair (former names ``stiffness``, ``damping``)."""
        where = f"pair ({geom1!r}, {geom2!r})"
        former = option_names.rename(former, f"add_pair {where}", renamed=_PAIR_RENAMED)
        unknown = sorted(set(former) - {"penalty_stiffness", "penalty_damping"})
        if unknown:
            raise ModelError(f"{where}: unknown argument(s) {unknown}")
        penalty_stiffness = former.get("penalty_stiffness", penalty_stiffness)
        penalty_damping = former.get("penalty_damping", penalty_damping)
        f = None if friction is None else vector(np.resize(np.asarray(friction, float).reshape(-1), 2), 2,
                                                 f"{where} friction")
        if f is not None and np.any(f < 0):
            raise ModelError(f"{where}: friction must be >= 0, got {f.tolist()}")
        for label, val in (("restitution", restitution), ("penalty_stiffness", penalty_stiffness),
                           ("penalty_damping", penalty_damping)):
            if val is not None and not (np.isfinite(val) and val >= 0):
                raise ModelError(f"{where}: {label} must be >= 0, got {val}")
        if restitution is not None and restitution > 1:
            raise ModelError(f"{where}: restitution must be in [0, 1], got {restitution}")
        self.elements.pairs.append(Pair(geom1, geom2, None if mode is None else mode_from_name(mode, where), f,
                                        restitution, penalty_stiffness, penalty_damping))

    # ------------------------------------------------------------------- build

    def build(self, dtype=jnp.float32) -> Model:
        """Validate and return the Model (float arrays in ``dtype``; ``jaxsim.compiler``).

        Raises:
          ModelError: an element that cannot be built (an unknown name it refers to, a
            cycle of bodies, a massless moving body, ...), or, with contacts on, a geom
            pair of a kind that has no collision routine.
        """
        return compile_model(self.elements, self.options, dtype)


# ``inspect.signature(ModelBuilder)`` and ``help`` list every option and its default
ModelBuilder.__init__.__signature__ = keyword_signature()
