"""Domain randomization: a batch of Models drawn around one Model.

``randomize(model, rng, ranges)`` draws one Model per PRNG key. Each ``Range`` names a
Model field (optionally some of its entries) and an interval ``[low, high]``; the
value drawn from it, uniformly or log-uniformly, either multiplies the nominal value
(``mode="scale"``) or replaces it (``mode="absolute"``). Only the fields named by some
range get a leading batch axis; every other leaf is the input Model's own array, shared
by the whole batch. The second result, ``in_axes``, is a Model-shaped pytree holding 0
on the batched leaves and None elsewhere, which is what ``jax.vmap`` takes::

    import jax, jaxsim
    from jaxsim import Range

    ranges = [
        Range("body_mass", 0.8, 1.2, index="torso"),                  # +-20 % on one body
        Range("geom_friction", 0.4, 1.2, mode="absolute", column=1,   # kinetic coefficient,
              shared=True),                                           # one value for all geoms
        Range("dof_damping", 0.5, 2.0, dist="loguniform", index=["hip", "knee"]),
        Range("opt.gravity", -10.0, -9.6, mode="absolute", index=2),  # z component, m/s^2
        Range("contact_params.contact_relaxation", 0.005, 0.02, mode="absolute"),
    ]
    models, in_axes = jaxsim.randomize(model, jax.random.key(0), ranges, num=1024)
    states = jax.vmap(jaxsim.make_state, in_axes=(in_axes,))(models)
    states = jax.jit(jax.vmap(jaxsim.step, in_axes=(in_axes, 0)))(models, states)

With Brax, ``functools.partial(jaxsim.randomize, ranges=ranges)`` is a
``randomization_fn``: the training loop binds ``rng`` to a batch of keys of shape
``(num_envs, 2)``, calls the function with the system and gets ``(sys_batch, in_axes)``
back, one model per key.

``randomize`` is pure JAX (the draws of the whole batch are one vmapped computation), so
it can run under ``jax.jit`` with ``ranges`` and ``num`` bound, e.g. by
``functools.partial``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence, Union

import jax
import jax.numpy as jnp
import numpy as np

from jaxsim.parallel import accepts_explicit_axes
from jaxsim.types import STRUCTURAL_FIELDS, JointType, Model

Array = jax.Array
Index = Union[int, str, Sequence[Union[int, str]], None]

MODES = ("scale", "absolute")
DISTS = ("uniform", "loguniform")
# field prefix -> (Topology attribute holding the element names, what an element is)
NAMED = {"body": ("body_name", "body"), "jnt": ("jnt_name", "joint"),
         "geom": ("geom_name", "geom"), "actuator": ("actuator_name", "actuator"),
         "tendon": ("tendon_name", "tendon"), "eq": ("eq_name", "equality constraint")}


def _freeze(value, what: str):
    """A bound as a float or nested tuple of floats (hashable), checked finite."""
    a = np.asarray(value, np.float64)
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{what} must be finite, got {value!r}")
    return a.item() if a.ndim == 0 else tuple(_freeze(r, what) for r in a)


def _freeze_index(index, what: str):
    if index is None:
        return None
    items = (index,) if isinstance(index, (str, int, np.integer)) else tuple(index)
    for item in items:
        if isinstance(item, bool) or not isinstance(item, (str, int, np.integer)):
            raise ValueError(f"{what} entries must be ints or names, got {item!r}")
    return tuple(i if isinstance(i, str) else int(i) for i in items)


@dataclasses.dataclass(frozen=True)
class Range:
    """How to draw one Model field (or some of its entries) per model of the batch.

    Attributes:
      field: a float array field of the Model (``"body_mass"``, ``"geom_friction"``,
        ``"dof_damping"``, ...), an options field ``"opt.<name>"`` (``"opt.gravity"``,
        ``"opt.timestep"``) or a parameter of the model's contact model
        ``"contact_params.<name>"``.
      low, high: bounds of the draw, ``low <= high``; floats or arrays that broadcast
        to the selected entries' shape (e.g. ``(3,)`` bounds for the three components
        of ``opt.gravity``). Dimensionless factors for ``mode="scale"``, the field's
        own units (kg, m, N s/m, ...) for ``mode="absolute"``.
      mode: ``"scale"`` (value = nominal * draw) or ``"absolute"`` (value = draw).
      dist: ``"uniform"`` on ``[low, high]`` or ``"loguniform"`` (the draw's log is
        uniform on ``[log low, log high]``; needs ``0 < low``).
      index: entries along the field's first axis: an int, a name, or a list of them;
        None selects all. Names are those of bodies (``body_*``), joints (``jnt_*``),
        geoms (``geom_*``), actuators (``actuator_*``), tendons (``tendon_*``) and
        equality constraints (``eq_*``); for ``dof_*`` fields a joint name selects that
        joint's dofs and for ``qpos0`` / ``qpos_spring`` its coordinates. Other fields
        take ints only.
      column: entries along the second axis (an int or a list of ints; None: all), e.g.
        ``Range("geom_friction", ..., column=1)`` draws only the kinetic coefficient.
      shared: False (default): an independent draw for every selected value (each
        body's mass, each component of a com offset). True: one draw per model, used
        for every selected value (one friction factor for all geoms; one factor for a
        body's three inertia moments with ``index`` that body).

    Ranges are applied in order; a later range on the same entries acts on the value
    the earlier ones produced (two scale ranges multiply).
    """

    field: str
    low: Any
    high: Any
    mode: str = "scale"
    dist: str = "uniform"
    index: Index = None
    column: int | Sequence[int] | None = None
    shared: bool = False

    def __post_init__(self):
        what = f"Range({self.field!r})"
        if not isinstance(self.field, str):
            raise ValueError(f"Range: field must be a string, got {self.field!r}")
        if self.mode not in MODES:
            raise ValueError(f"{what}: mode must be one of {list(MODES)}, got {self.mode!r}")
        if self.dist not in DISTS:
            raise ValueError(f"{what}: dist must be one of {list(DISTS)}, got {self.dist!r}")
        low, high = _freeze(self.low, f"{what}: low"), _freeze(self.high, f"{what}: high")
        lo, hi = np.asarray(low), np.asarray(high)
        try:
            np.broadcast_shapes(lo.shape, hi.shape)
        except ValueError:
            raise ValueError(f"{what}: low {lo.shape} and high {hi.shape} do not broadcast") from None
        if np.any(lo > hi):
            raise ValueError(f"{what}: low > high ({self.low} > {self.high})")
        if self.dist == "loguniform" and np.any(lo <= 0):
            raise ValueError(f"{what}: loguniform needs positive bounds, got low = {self.low}")
        column = self.column
        if column is not None:
            cols = (column,) if isinstance(column, (int, np.integer)) else tuple(column)
            if not all(isinstance(c, (int, np.integer)) and not isinstance(c, bool) for c in cols):
                raise ValueError(f"{what}: column must be an int or a list of ints, got {column!r}")
            column = tuple(int(c) for c in cols)
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)
        object.__setattr__(self, "index", _freeze_index(self.index, f"{what}: index"))
        object.__setattr__(self, "column", column)
        object.__setattr__(self, "shared", bool(self.shared))


def _data_fields(obj) -> list[str]:
    return [f.name for f in dataclasses.fields(obj) if not f.metadata.get("static", False)]


def randomizable_fields(model: Model) -> tuple[str, ...]:
    """Names ``Range.field`` accepts for ``model``: its float array fields (less the
    collision geometry), ``opt.<name>`` and ``contact_params.<name>``."""

    def floats(obj, prefix=""):
        return [prefix + name for name in _data_fields(obj)
                if isinstance(getattr(obj, name), jax.Array | np.ndarray)
                and jnp.issubdtype(getattr(obj, name).dtype, jnp.floating)]

    names = [n for n in floats(model) if n not in STRUCTURAL_FIELDS]
    names += floats(model.opt, "opt.")
    if dataclasses.is_dataclass(model.contact_params):
        names += floats(model.contact_params, "contact_params.")
    return tuple(names)


def _get(obj, path: tuple[str, ...]):
    for name in path:
        obj = getattr(obj, name)
    return obj


def _set(obj, path: tuple[str, ...], value):
    if len(path) > 1:
        value = _set(getattr(obj, path[0]), path[1:], value)
    return dataclasses.replace(obj, **{path[0]: value})


def _check_field(model: Model, field: str, valid: tuple[str, ...]) -> tuple[str, ...]:
    if field in valid:
        return tuple(field.split("."))
    path, obj = field.split("."), model
    for name in path:  # a field that exists but is not a float array: structural
        if not dataclasses.is_dataclass(obj) or name not in [f.name for f in dataclasses.fields(obj)]:
            raise ValueError(f"randomize: unknown field {field!r}; randomizable fields: {list(valid)}")
        obj = getattr(obj, name)
    if dataclasses.is_dataclass(obj) and name != "topo":
        raise ValueError(f"randomize: {field!r} is a group of fields, name one: '{field}.<name>'")
    raise ValueError(f"randomize: field {field!r} is structural (topology, collision geometry, "
                     f"integer data or a static option) and cannot be randomized")


def _rows_of_name(model: Model, field: str, name: str) -> list[int]:
    topo = model.topo
    prefix = "qpos" if field.startswith("qpos") else field.split("_")[0]
    if "." not in field and prefix in ("dof", "qpos"):
        kind, names = "joint", topo.jnt_name
    elif "." not in field and prefix in NAMED:
        attr, kind = NAMED[prefix]
        names = getattr(topo, attr)
    else:
        raise ValueError(f"randomize: {field!r} has no element names, index it by int (got {name!r})")
    if name not in names:
        raise ValueError(f"randomize: {field!r}: no {kind} named {name!r}; "
                         f"known: {[n for n in names if n]}")
    i = names.index(name)
    if prefix == "dof":
        return list(range(topo.jnt_dofadr[i], topo.jnt_dofadr[i] + JointType(topo.jnt_type[i]).nv))
    if prefix == "qpos":
        return list(range(topo.jnt_qposadr[i], topo.jnt_qposadr[i] + JointType(topo.jnt_type[i]).nq))
    return [i]


def _positions(items: tuple, n: int, what: str) -> np.ndarray:
    out = []
    for i in items:
        if not -n <= i < n:
            raise ValueError(f"{what} {i} out of range for size {n}")
        if i % n not in out:
            out.append(i % n)
    return np.asarray(out, np.int64)


def _selection(model: Model, spec: Range, shape: tuple[int, ...]) -> tuple:
    """The numpy-style index of the entries ``spec`` selects in an array of ``shape``."""
    if spec.index is None and spec.column is None:
        return (Ellipsis,)
    if spec.index is not None and len(shape) < 1:
        raise ValueError(f"randomize: {spec.field!r} is a scalar, it takes no index")
    if spec.column is not None and len(shape) < 2:
        raise ValueError(f"randomize: {spec.field!r} has shape {shape}, it has no columns")
    rows = slice(None)
    if spec.index is not None:
        rows = []
        for item in spec.index:
            rows += _rows_of_name(model, spec.field, item) if isinstance(item, str) else [item]
        rows = _positions(tuple(rows), shape[0], f"randomize: {spec.field!r}: index")
    if spec.column is None:
        return (rows,)
    cols = _positions(spec.column, shape[1], f"randomize: {spec.field!r}: column")
    return (slice(None), cols) if isinstance(rows, slice) else (rows[:, None], cols[None, :])


def _keys(rng, num: int | None) -> Array:
    """A (num,) array of typed keys from one key (split ``num`` ways) or a batch of keys."""
    rng = jnp.asarray(rng) if not isinstance(rng, jax.Array) else rng
    if not jnp.issubdtype(rng.dtype, jax.dtypes.prng_key):
        try:
            rng = jax.random.wrap_key_data(rng)
        except (TypeError, ValueError):
            raise ValueError(f"randomize: rng must be a PRNG key or a (num, 2) batch of keys, "
                             f"got shape {rng.shape} {rng.dtype}") from None
    if rng.ndim == 0:
        if num is None or int(num) < 1:
            raise ValueError(f"randomize: with a single key, num must be a batch size >= 1, got {num}")
        return jax.random.split(rng, int(num))
    if rng.ndim == 1:
        if num is not None and int(num) != rng.shape[0]:
            raise ValueError(f"randomize: num = {num} but rng holds {rng.shape[0]} keys")
        return rng
    raise ValueError(f"randomize: rng must be one key or a 1-D batch of keys, got key shape {rng.shape}")


def randomize(model: Model, rng, ranges: Range | Sequence[Range], num: int | None = None
              ) -> tuple[Model, Model]:
    """A batch of Models with the fields of ``ranges`` drawn per model.

    Args:
      model: one Model (not batched).
      rng: one PRNG key (``jax.random.key`` or a raw ``(2,)`` ``PRNGKey``), split into
        ``num`` keys, or a batch of keys (``(num,)`` typed or ``(num, 2)`` raw), one model
        per key (Brax passes such a batch).
      ranges: a ``Range`` or a sequence of them, applied in order.
      num: batch size with a single key; with a batch of keys None or its length.

    Returns:
      ``(models, in_axes)``: ``models`` is ``model`` with every randomized leaf
      replaced by a ``(num, ...)`` array (the other leaves are ``model``'s own arrays,
      unbatched); ``in_axes`` has ``model``'s structure with 0 on the randomized leaves
      and None on all others, for ``jax.vmap(f, in_axes=(in_axes, ...))``.

    Raises:
      ValueError: an unknown or structural field, a name not in the model, an index or
        column out of range, bounds that do not fit the selection, a bad ``rng`` or
        ``num``, or an already batched model.
    """
    specs = (ranges,) if isinstance(ranges, Range) else tuple(ranges)
    for spec in specs:
        if not isinstance(spec, Range):
            raise ValueError(f"randomize: ranges must be Range objects, got {spec!r}")
    if jnp.ndim(model.body_mass) != 1:
        raise ValueError(f"randomize: model must be a single model, its body_mass has shape "
                         f"{jnp.shape(model.body_mass)}")
    valid, dtype = randomizable_fields(model), model.dtype
    plan = []  # (spec, path, selection)
    for spec in specs:
        path = _check_field(model, spec.field, valid)
        shape = tuple(_get(model, path).shape)
        sel = _selection(model, spec, shape)
        sub = np.empty(shape, bool)[sel].shape
        bounds = np.broadcast_shapes(np.shape(spec.low), np.shape(spec.high))
        try:
            fits = np.broadcast_shapes(bounds, sub) == sub
        except ValueError:
            fits = False
        if not fits:
            raise ValueError(f"randomize: {spec.field!r}: bounds of shape {bounds} do not broadcast "
                             f"to the {sub} selected values")
        plan.append((spec, path, sel))
    keys = _keys(rng, num)

    @accepts_explicit_axes  # keys sharded on an Explicit mesh give models sharded alike
    def draw(key):
        values = {}
        for i, (spec, path, sel) in enumerate(plan):
            x = values.get(path, _get(model, path))
            low, high = jnp.asarray(spec.low, dtype), jnp.asarray(spec.high, dtype)
            shape = () if spec.shared else x[sel].shape
            u = jax.random.uniform(jax.random.fold_in(key, i), shape, dtype)
            if spec.dist == "loguniform":
                value = jnp.exp(jnp.log(low) + u * (jnp.log(high) - jnp.log(low)))
            else:
                value = low + u * (high - low)
            value = jnp.clip(value, low, high)  # rounding never leaves [low, high]
            new = value if spec.mode == "absolute" else x[sel] * value
            values[path] = x.at[sel].set(jnp.broadcast_to(new, x[sel].shape))
        return values

    batched = jax.vmap(draw)(keys)
    in_axes = jax.tree_util.tree_map(lambda _: None, model)
    for path, value in batched.items():
        model = _set(model, path, value)
        in_axes = _set(in_axes, path, 0)
    return model, in_axes
