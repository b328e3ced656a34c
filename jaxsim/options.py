"""The keyword options that build a Model: their defaults, checks and names.

``ModelBuilder``'s scene-wide options (``timestep``, ``gravity``, ``solver_iterations``,
``contact``, ...; the fields of :class:`SceneOptions`) and the parameters of the
selected contact model (the fields of ``jaxsim.contact.get(name).params``:
``contact_rate``, ``contact_relaxation``, ``solver``, ...) are keyword options of the
builder, of the loaders (``load_mjcf(path, **options)``, ``load_urdf``) and of the
built-in scenes. ``SceneOptions.from_keywords`` checks them once for all of these. This
module also lists them, read from ``SceneOptions`` and the models' ``params`` so that a
new or renamed option is known everywhere at once, checks names against them, and
turns text into their values: the command line's ``--set KEY=VALUE`` and the MJCF
custom elements ``<text name="jaxsim:KEY" .../>`` / ``<numeric name="jaxsim:KEY" .../>``.

The type of a value follows the option's default: a boolean (``true`` / ``false``), an
integer, a finite number, a vector of finite numbers (``0,0,-9.81``) or a string
(checked against the option's choices where it declares them). Former names of
options (``jaxsim.names``) are known as the options they now name.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
from typing import Sequence

import numpy as np

from jaxsim import contact as contact_models
from jaxsim import names as option_names
from jaxsim.elements import vector
from jaxsim.names import current_name
from jaxsim.types import ContactMode, ModelError

_TRUE, _FALSE = ("true", "yes", "on", "1"), ("false", "no", "off", "0")


def _option(default, units: str, meaning: str):
    """A scene option: its default, units ("" for none) and meaning (the option table)."""
    return dataclasses.field(default=default, metadata={"units": units, "meaning": meaning})


def mode_from_name(mode: str, where: str) -> ContactMode:
    """The ContactMode named ``mode`` ("constraint", "penalty" or "none").

    Raises:
      ModelError: another name; the message starts with ``where``.
    """
    modes = {m.name.lower(): m for m in ContactMode}
    if mode not in modes:
        raise ModelError(f"{where}: contact mode must be one of {sorted(modes)}, got {mode!r}")
    return modes[mode]


@dataclasses.dataclass(frozen=True, eq=False)
class SceneOptions:
    """``ModelBuilder``'s scene-wide options, with their defaults (every field but
    ``contact_params`` is a keyword option of the builder, the loaders and the scenes).

    Built by :meth:`from_keywords`, which checks them. The fields' units and meanings
    make the option table (``SCENE_OPTIONS``, the docs' Options page); in more detail:

    * ``contact``: the contact model of constraint pairs (``jaxsim.contact.MODELS``:
      "relaxed", "rigid", "penalty", ...). Its own parameters are keyword options of
      their names (``contact_rate=...``; see the model's ``params`` in its module),
      kept in ``contact_params``; an unknown name raises ``ModelError``.
    * ``contact_mode``: every pair's default mode, "constraint", "penalty" or "none"
      (``ModelBuilder.set_contact_mode`` and ``add_pair`` refine it).
    * ``constraint``: False turns off contacts and every constraint row (joint limits
      too): smooth dynamics only, MuJoCo's ``constraint`` disable flag.
    * ``contact_margin``: m, shapes this close get (speculative) contacts.
    * ``edge_contacts``: False leaves the point contacts of two polyhedra at their
      vertices (no edge-edge crossings): the vertex-only point contacts, for comparing
      with the contact-volume wrench.
    * ``narrow_pairs``: > 0: of each pair kind (hull-hull, box-hull, ...), only this
      many pairs go through the narrow phase each step, those whose bounding spheres
      are nearest (gap ranked with ``lax.top_k``); the others' slots stay inactive, and
      a pair beyond the cap whose spheres touch counts one contact of ``overflow``. 0:
      every pair, every step. For robot files whose many hull-hull pairs mostly stay
      apart (gymnasium-robotics' Fetch: 84, of which about 10 have touching bounding
      spheres).
    * ``penalty_stiffness``, ``penalty_damping``: N/m and N s/m of penalty pairs (per
      pair with ``ModelBuilder.add_pair``).
    * ``slip_speed``: m/s, tangential speed above which a contact slips: friction takes
      the kinetic coefficient (every contact model; penalty pairs' friction is viscous
      below it).
    * ``gradient_smoothing``: m/s, read by gradients only. The implicit derivative of
      each contact solve blends its switches (a contact separating or touching,
      sticking or sliding, a limit row becoming active) over about this much
      separation speed or impulse-made speed on either side, as if complementarity
      were relaxed there; the simulated motion is unchanged to the bit. It trades the
      exact gradient's jumps for a bias that vanishes with it. Every model that
      solves a contact problem reads it (``qp.solve``, ``friction.solve``); the
      ``unrolled`` adjoint, the cone model's ``nakaoka`` and springhead's ``pgs``
      sweeps (differentiated as they run) have none, and asking for it there raises.
    * ``fluid``: apply the medium's fluid forces (``density``, ``viscosity``, ``wind``
      are read only then); None: when ``density`` or ``viscosity`` is above 0 (checked
      options hold the resolved bool). True lets a batch of Models vary the medium from
      zero.
    * ``implicit_pd``: the default of ``ModelBuilder.add_actuator(implicit_pd=...)``:
      every servo (position or velocity feedback) is solved implicitly, as a
      constraint row (implicit PD; ``contact/rows.py``); other actuators stay explicit.
    """

    timestep: float = _option(1e-3, "s", "time step")
    gravity: Sequence[float] = _option((0, 0, -9.81), "m/s^2", "gravity, world frame")
    density: float = _option(0.0, "kg/m^3", "density of the surrounding medium (fluid forces)")
    viscosity: float = _option(0.0, "Pa s", "viscosity of the surrounding medium")
    wind: Sequence[float] = _option((0, 0, 0), "m/s", "velocity of the medium")
    integrator: str = _option("euler", "", "'euler' (semi-implicit) or 'rk4'")
    forward_dynamics: str = _option("crba", "", "'crba' (mass matrix and Cholesky) or 'aba' (articulated bodies)")
    implicit_damping: bool = _option(True, "", "Euler: joint damping taken at the step's end velocity, as MuJoCo")
    implicit_gyroscopic: bool = _option(True, "", "Euler: gyroscopic torque of free bodies taken at the step's end")
    contact: str = _option("relaxed", "", "the contact model of constraint pairs (table below)")
    contact_mode: str = _option("constraint", "", "every pair's default: 'constraint', 'penalty' or 'none'")
    constraint: bool = _option(True, "", "false: no contacts and no constraint rows (smooth dynamics only)")
    contact_margin: float = _option(1e-3, "m", "shapes this close get speculative contacts")
    solver_tol: float = _option(1e-6, "", "relative tolerance of the contact QP")
    solver_iterations: int = _option(500, "", "cap on the contact QP's iterations")
    adjoint: str = _option("implicit", "", "QP gradients: 'implicit' (implicit function theorem) or 'unrolled'")
    gradient_smoothing: float = _option(0.0, "m/s", "contact switches blended over this speed in gradients only "
                                        "(0: exact gradients)")
    max_contacts: int = _option(0, "", "solve only this many deepest contact slots (0: all)")
    edge_contacts: bool = _option(True, "", "point slots of polyhedra at edge-edge crossings too")
    narrow_pairs: int = _option(0, "", "per pair kind, only this many nearest pairs reach the narrow phase (0: all)")
    penalty_stiffness: float = _option(1e6, "N/m", "spring of penalty pairs")
    penalty_damping: float = _option(1000.0, "N s/m", "damper of penalty pairs")
    slip_speed: float = _option(0.01, "m/s", "tangential speed above which friction is kinetic (every contact model)")
    implicit_pd: bool = _option(False, "", "servos solved implicitly with the constraints")
    fluid: bool | None = _option(None, "", "fluid forces of the medium on (None: when density or viscosity > 0)")
    contact_params: dict = dataclasses.field(default_factory=dict)  # the contact model's parameters by name

    @classmethod
    def from_keywords(cls, keywords: dict, stacklevel: int = 3) -> SceneOptions:
        """Checked options from ``ModelBuilder``'s keywords: scene options by name, the
        rest parameters of the contact model (former names renamed with a
        ``DeprecationWarning``, ``stacklevel`` frames above this call's caller).

        Raises:
          ModelError: a bad value or an unknown name, naming the option.
          ValueError: a former name given with its current name.
        """
        scene = {f.name: f.default for f in dataclasses.fields(cls) if "units" in f.metadata}
        given = {k: v for k, v in keywords.items() if k in scene}
        params = option_names.rename({k: v for k, v in keywords.items() if k not in scene}, "ModelBuilder",
                                     stacklevel=stacklevel + 1)  # former names, with a warning
        o = {**scene, **given}
        for name in ("constraint", "slip_speed", "implicit_pd"):  # current names of former parameters
            o[name] = params.pop(name, o[name])
        if not o["timestep"] > 0:
            raise ModelError(f"timestep must be positive, got {o['timestep']}")
        if o["integrator"] not in ("euler", "rk4"):
            raise ModelError(f"integrator must be 'euler' or 'rk4', got {o['integrator']!r}")
        if o["forward_dynamics"] not in ("aba", "crba"):
            raise ModelError(f"forward_dynamics must be 'aba' or 'crba', got {o['forward_dynamics']!r}")
        if o["density"] < 0 or o["viscosity"] < 0:
            raise ModelError(f"density and viscosity must be >= 0, got {o['density']}, {o['viscosity']}")
        if o["contact"] == "none":
            raise ModelError("contact='none' is gone: use contact_mode='none' (no contacts; joint limits "
                             "stay) or constraint=False (no contacts and no constraint rows)")
        if o["contact"] not in contact_models.MODELS:
            raise ModelError(f"contact must name a contact model, one of {sorted(contact_models.MODELS)}; "
                             f"got {o['contact']!r}")
        if o["adjoint"] not in ("implicit", "unrolled"):
            raise ModelError(f"adjoint must be 'implicit' or 'unrolled', got {o['adjoint']!r}")
        for name in ("contact_margin", "solver_tol", "penalty_stiffness", "penalty_damping", "slip_speed",
                     "gradient_smoothing"):
            if not o[name] >= 0:
                raise ModelError(f"{name} must be >= 0, got {o[name]}")
        if not o["slip_speed"] > 0:
            raise ModelError(f"slip_speed must be positive, got {o['slip_speed']}")
        if int(o["solver_iterations"]) < 1:
            raise ModelError(f"solver_iterations must be >= 1, got {o['solver_iterations']}")
        if int(o["max_contacts"]) < 0:
            raise ModelError(f"max_contacts must be >= 0 (0: all contact slots), got {o['max_contacts']}")
        if int(o["narrow_pairs"]) < 0:
            raise ModelError(f"narrow_pairs must be >= 0 (0: every pair), got {o['narrow_pairs']}")
        try:  # checked now, so the error points at the builder call
            contact_models.make_params(o["contact"], None, **params)
        except ValueError as e:
            raise ModelError(str(e)) from None
        solver_field = contact_params(o["contact"]).get("solver")
        solver = params.get("solver", solver_field.default if solver_field else None)
        if o["gradient_smoothing"] > 0 and (o["adjoint"] != "implicit" or solver in ("nakaoka", "pgs")):
            raise ModelError("gradient_smoothing applies to implicit gradients of solved contact problems; "
                             "adjoint='unrolled', the cone model's 'nakaoka' and springhead's 'pgs' sweeps are "
                             f"differentiated as they run (got gradient_smoothing={o['gradient_smoothing']})")
        gravity = vector(o["gravity"], 3, "gravity")
        density, viscosity = float(o["density"]), float(o["viscosity"])
        fluid = density > 0 or viscosity > 0 if o["fluid"] is None else bool(o["fluid"])
        wind = vector(o["wind"], 3, "wind")
        mode_from_name(o["contact_mode"], "contact_mode")
        return cls(timestep=float(o["timestep"]), gravity=gravity, density=density, viscosity=viscosity, wind=wind,
                   integrator=o["integrator"], forward_dynamics=o["forward_dynamics"],
                   implicit_damping=bool(o["implicit_damping"]), implicit_gyroscopic=bool(o["implicit_gyroscopic"]),
                   contact=o["contact"], contact_mode=o["contact_mode"], constraint=bool(o["constraint"]),
                   contact_margin=float(o["contact_margin"]), solver_tol=float(o["solver_tol"]),
                   solver_iterations=int(o["solver_iterations"]), adjoint=o["adjoint"],
                   gradient_smoothing=float(o["gradient_smoothing"]),
                   max_contacts=int(o["max_contacts"]), edge_contacts=bool(o["edge_contacts"]),
                   narrow_pairs=int(o["narrow_pairs"]), penalty_stiffness=float(o["penalty_stiffness"]),
                   penalty_damping=float(o["penalty_damping"]), slip_speed=float(o["slip_speed"]),
                   implicit_pd=bool(o["implicit_pd"]), fluid=fluid, contact_params=dict(params))

    @property
    def stage_params(self) -> dict:
        """The constraint stage's numeric options (array leaves of ``Options``)."""
        return dict(contact_margin=self.contact_margin, solver_tol=self.solver_tol,
                    penalty_stiffness=self.penalty_stiffness, penalty_damping=self.penalty_damping,
                    slip_speed=self.slip_speed, gradient_smoothing=self.gradient_smoothing)

    @property
    def flags(self) -> dict:
        """The static fields of ``Options`` other than ``contact`` and ``fluid``."""
        return dict(adjoint=self.adjoint, solver_iterations=self.solver_iterations,
                    max_contacts=self.max_contacts, edge_contacts=self.edge_contacts,
                    narrow_pairs=self.narrow_pairs, constraint=self.constraint,
                    integrator=self.integrator, forward_dynamics=self.forward_dynamics,
                    implicit_damping=self.implicit_damping, implicit_gyroscopic=self.implicit_gyroscopic)


# the scene options: units ("" for none) and meaning, by name (``markdown_table``)
SCENE_OPTIONS = {f.name: (f.metadata["units"], f.metadata["meaning"])
                 for f in dataclasses.fields(SceneOptions) if "units" in f.metadata}


def scene_options() -> dict:
    """``ModelBuilder``'s scene-wide keyword options and their defaults."""
    return {f.name: f.default for f in dataclasses.fields(SceneOptions) if "units" in f.metadata}


def keyword_signature() -> inspect.Signature:
    """The signature of ``ModelBuilder.__init__(self, **options)`` spelled out: every
    scene option by keyword with its default, then the contact model's parameters
    (``**contact_params``)."""
    Parameter = inspect.Parameter
    params = [Parameter(f.name, Parameter.KEYWORD_ONLY, default=f.default, annotation=f.type)
              for f in dataclasses.fields(SceneOptions) if "units" in f.metadata]
    return inspect.Signature([Parameter("self", Parameter.POSITIONAL_OR_KEYWORD)] + params
                             + [Parameter("contact_params", Parameter.VAR_KEYWORD)])


def default_contact() -> str:
    """The contact model a Model gets when none is named."""
    return scene_options()["contact"]


def contact_params(contact: str) -> dict:
    """The parameters of contact model ``contact``: name -> ``dataclasses.Field``.

    Raises:
      ModelError: ``contact`` names no registered model.
    """
    if contact not in contact_models.MODELS:
        raise ModelError(f"contact must name a contact model, one of {sorted(contact_models.MODELS)}; "
                         f"got {contact!r}")
    return {f.name: f for f in dataclasses.fields(contact_models.get(contact).params)}


def all_contact_params() -> dict:
    """Every registered model's parameters: name -> (field, names of the models having it)."""
    out: dict = {}
    for model in sorted(contact_models.MODELS):
        for name, f in contact_params(model).items():
            out.setdefault(name, (f, []))[1].append(model)
    return out


def allowed(contact: str | None) -> str:
    """The allowed option names, for error messages: the scene options and the
    parameters of contact model ``contact`` (None: of every model)."""
    scene = ", ".join(scene_options())
    if contact is None:
        params = ", ".join(sorted(all_contact_params()))
        return f"scene options: {scene}; contact-model parameters (each model has its own): {params}"
    params = ", ".join(contact_params(contact)) or "none"
    return f"scene options: {scene}; parameters of contact model {contact!r}: {params}"


def check_names(names, contact: str) -> None:
    """Raise ``ModelError`` naming the first of ``names`` that is neither a scene
    option nor a parameter of contact model ``contact`` (nor a former name of one),
    and the allowed names."""
    known = set(scene_options()) | set(contact_params(contact))
    for name in names:
        if current_name(name) not in known:
            raise ModelError(f"unknown option {name!r}; {allowed(contact)}")


def _spec(key: str, contact: str | None):
    """(default, choices) of option ``key``: a scene option, else a parameter of
    ``contact`` (None: of any model; its choices are then left to the model's check)."""
    scene, now = scene_options(), current_name(key)
    if now in scene:
        return scene[now], (tuple(sorted(contact_models.MODELS)) if now == "contact" else None)
    if contact is None:
        f = all_contact_params().get(now, (None,))[0]
        if f is not None:
            return f.default, None
    else:
        f = contact_params(contact).get(now)
    if f is None:
        raise ModelError(f"unknown option {key!r}; {allowed(contact)}")
    return f.default, f.metadata.get("choices")


def _number(key: str, text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise ModelError(f"{key} must be a number, got {text!r}") from None
    if not math.isfinite(x):
        raise ModelError(f"{key} must be a finite number, got {text!r}")
    return x


def parse(key: str, text: str, contact: str | None = None):
    """The value of option ``key`` written as text, typed by the option's default.

    Args:
      key: a scene option or a parameter of contact model ``contact``.
      text: ``true`` / ``false`` for a boolean option; an integer; a number; numbers
        separated by commas (or spaces) for a vector (``0,0,-9.81``); a name for a
        string option (one of its choices where it has them).
      contact: the contact model whose parameters are known; None: any model's.

    Raises:
      ModelError: an unknown ``key`` (naming the allowed ones) or a value of the wrong
        type (naming the expected one).
    """
    default, choices = _spec(key, contact)
    t = text.strip()
    if isinstance(default, bool):
        if t.lower() in _TRUE + _FALSE:
            return t.lower() in _TRUE
        raise ModelError(f"{key} must be true or false, got {text!r}")
    if isinstance(default, str):
        if choices is not None and t not in choices:
            raise ModelError(f"{key} must be one of {list(choices)}, got {text!r}")
        return t
    if isinstance(default, (int, np.integer)):
        try:
            return int(t)
        except ValueError:
            x = _number(key, t)
            if not x.is_integer():
                raise ModelError(f"{key} must be an integer, got {text!r}") from None
            return int(x)
    if np.ndim(default) == 1:
        parts = t.replace(",", " ").split()
        if len(parts) != len(default):
            raise ModelError(f"{key} must be {len(default)} numbers separated by commas, got {text!r}")
        return tuple(_number(key, p) for p in parts)
    return _number(key, t)


def from_numbers(key: str, data, contact: str | None = None):
    """The value of option ``key`` from an array of numbers (an MJCF custom numeric),
    typed by the option's default as in :func:`parse`: one number for a scalar (0 or
    1 for a boolean, integral for an integer), as many as the vector for a vector.

    Raises:
      ModelError: an unknown ``key``, a string option, or the wrong count or kind of
        numbers.
    """
    default, _ = _spec(key, contact)
    a = np.asarray(data, np.float64).reshape(-1)
    if isinstance(default, str):
        raise ModelError(f"{key} is a name, not a number")
    if not np.all(np.isfinite(a)):
        raise ModelError(f"{key} must be finite, got {a.tolist()}")
    if np.ndim(default) == 1:
        if a.size != len(default):
            raise ModelError(f"{key} must be {len(default)} numbers, got {a.tolist()}")
        return tuple(float(x) for x in a)
    if a.size != 1:
        raise ModelError(f"{key} must be one number, got {a.tolist()}")
    x = float(a[0])
    if isinstance(default, bool):
        if x not in (0.0, 1.0):
            raise ModelError(f"{key} must be 0 or 1 (false or true), got {x:g}")
        return x == 1.0
    if isinstance(default, (int, np.integer)):
        if not x.is_integer():
            raise ModelError(f"{key} must be an integer, got {x:g}")
        return int(x)
    return x


def _value(default) -> str:
    if isinstance(default, str):
        return f"`{default!r}`".replace("'", '"')
    if isinstance(default, bool):
        return f"`{str(default).lower()}`"
    if np.ndim(default):
        return "`" + ", ".join(f"{x:g}" for x in default) + "`"
    return f"`{default:g}`" if isinstance(default, float) else f"`{default}`"


def _units_and_meaning(doc: str) -> tuple[str, str]:
    """A contact-model parameter's doc, ``"units, meaning"`` where it starts with its
    units (``param``'s convention), split in two."""
    head, sep, rest = doc.partition(", ")
    if sep and (head in ("s", "m", "m/s", "1/s", "N/m", "N s/m") or head.startswith("m/s (")):
        return head, rest
    return "", doc


def markdown_table() -> str:
    """Every option with its units, default and meaning, as Markdown: the scene-wide
    options of ``ModelBuilder`` (``SCENE_OPTIONS``), then each contact model that ships
    with jaxsim (the ``param`` metadata of its ``params``). The docs' Options page holds
    this text (``python -m jaxsim.options`` prints it)."""
    rows = ["| option | applies to | units | default | meaning |", "|---|---|---|---|---|"]
    for name, default in scene_options().items():
        units, meaning = SCENE_OPTIONS[name]
        rows.append(f"| `{name}` | scene | {units} | {_value(default)} | {meaning} |")
    for model in contact_models.BUILTIN:
        for name, f in contact_params(model).items():
            units, meaning = _units_and_meaning(f.metadata["doc"])
            rows.append(f"| `{name}` | `{model}` | {units} | {_value(f.default)} | {meaning} |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(markdown_table(), end="")
