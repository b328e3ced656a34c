"""A geom pair's contact parameters, derived in the step from the Model's own fields.

For each pair of the pair table (``Topology.pair_geom1``, ``pair_geom2``):

  * friction (static, kinetic): the selected contact model's blend of its two geoms'
    ``geom_friction``, the larger per coefficient (``"max"``, MuJoCo's rule) or their
    mean (``"mean"``, Springhead's); ``ContactModel.friction_blend`` says which; zero
    where both geoms have ``condim`` 1 (MuJoCo's frictionless contacts: a pair's
    condim is the larger of its geoms');
  * restitution: the mean of the two geoms' ``geom_restitution``;
  * penalty stiffness and damping: ``opt.penalty_stiffness`` and ``opt.penalty_damping``.

A pair given its own value (``ModelBuilder.add_pair``, an MJCF ``<pair>``) takes it
from the Model's ``pair_*`` arrays instead, row ``i`` of ``pair_friction`` for pair
``Topology.pair_friction_id[i]`` (likewise for the others). Deriving the values here,
not at build time, is what lets a batch of Models with different ``geom_friction``
(domain randomization) or a gradient with respect to it change the contact forces.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxsim.types import Model

Array = jax.Array


class PairParams(NamedTuple):
    """Per pair of the pair table (npair = ``len(Topology.pair_geom1)``)."""

    friction: Array  # (npair, 2) static and kinetic coefficients
    restitution: Array  # (npair,)
    penalty_stiffness: Array  # (npair,) N/m
    penalty_damping: Array  # (npair,) N s/m


def blend_friction(rule: str, mu1: Array, mu2: Array) -> Array:
    """A pair's friction from its two geoms' (..., 2) coefficients under ``rule``."""
    if rule == "max":
        return jnp.maximum(mu1, mu2)
    if rule == "mean":
        return 0.5 * (mu1 + mu2)
    raise ValueError(f"friction blend must be 'max' or 'mean', got {rule!r}")


def _override(values: Array, ids: tuple, explicit: Array) -> Array:
    if not ids:
        return values
    return values.at[np.asarray(ids, np.int32)].set(explicit.astype(values.dtype))


def pair_params(model: Model, friction_blend: str) -> PairParams:
    """The parameters of every pair of the pair table (module docstring)."""
    topo = model.topo
    g1, g2 = np.asarray(topo.pair_geom1, np.int32), np.asarray(topo.pair_geom2, np.int32)
    npair, dtype = g1.size, model.dtype
    friction = blend_friction(friction_blend, model.geom_friction[g1], model.geom_friction[g2])
    condim = np.asarray(topo.geom_condim, np.int32)
    frictionless = np.maximum(condim[g1], condim[g2]) == 1
    if frictionless.any():
        friction = jnp.where(frictionless.reshape(frictionless.shape + (1,)), 0.0, friction)
    restitution = 0.5 * (model.geom_restitution[g1] + model.geom_restitution[g2])
    stiffness = jnp.broadcast_to(model.opt.penalty_stiffness, (npair,)).astype(dtype)
    damping = jnp.broadcast_to(model.opt.penalty_damping, (npair,)).astype(dtype)
    return PairParams(
        friction=_override(friction.reshape(npair, 2), topo.pair_friction_id, model.pair_friction),
        restitution=_override(restitution.reshape(npair), topo.pair_restitution_id, model.pair_restitution),
        penalty_stiffness=_override(stiffness, topo.pair_penalty_stiffness_id, model.pair_penalty_stiffness),
        penalty_damping=_override(damping, topo.pair_penalty_damping_id, model.pair_penalty_damping))
