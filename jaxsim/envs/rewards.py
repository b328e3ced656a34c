"""Smooth reward shaping: ``tolerance``, the bounded-distance reward of the DeepMind
Control Suite's tasks (1 inside ``bounds``, falling off with the distance outside them
over ``margin``), written in jax.numpy so that rewards built from it are
differentiable in the action."""

from __future__ import annotations

import jax.numpy as jnp

SIGMOIDS = ("gaussian", "quadratic")


def tolerance(x, bounds=(0.0, 0.0), margin: float = 0.0, sigmoid: str = "gaussian",
              value_at_margin: float = 0.1):
    """1 where ``bounds[0] <= x <= bounds[1]``, else a sigmoid of the distance to the
    nearer bound in units of ``margin``, equal to ``value_at_margin`` one margin away.

    Args:
      x: array of values.
      bounds: (lower, upper) of the rewarded interval.
      margin: > 0, the distance over which the reward falls to ``value_at_margin``;
        0 gives a step (1 inside, 0 outside).
      sigmoid: "gaussian" (``exp(-(d s)^2 / 2)``) or "quadratic" (``1 - (d s)^2``,
        0 beyond one margin, where ``value_at_margin`` must be 0).
      value_at_margin: the reward one margin outside the bounds, in [0, 1).

    Returns:
      An array shaped like ``x``, in [0, 1].
    """
    lower, upper = bounds
    if lower > upper:
        raise ValueError(f"tolerance: lower bound {lower} above upper bound {upper}")
    if margin < 0:
        raise ValueError(f"tolerance: margin must be non-negative, got {margin}")
    if sigmoid not in SIGMOIDS:
        raise ValueError(f"tolerance: sigmoid must be one of {SIGMOIDS}, got {sigmoid!r}")
    x = jnp.asarray(x)
    inside = (x >= lower) & (x <= upper)
    if margin == 0:
        return jnp.where(inside, 1.0, 0.0).astype(x.dtype)
    d = jnp.where(x < lower, lower - x, x - upper) / margin
    if sigmoid == "gaussian":
        if not 0 < value_at_margin < 1:
            raise ValueError(f"tolerance: a gaussian needs 0 < value_at_margin < 1, got {value_at_margin}")
        scale = jnp.sqrt(-2 * jnp.log(value_at_margin))
        outside = jnp.exp(-0.5 * (d * scale) ** 2)
    else:
        if not 0 <= value_at_margin < 1:
            raise ValueError(f"tolerance: a quadratic needs 0 <= value_at_margin < 1, got {value_at_margin}")
        scaled = d * jnp.sqrt(1 - value_at_margin)
        outside = jnp.where(jnp.abs(scaled) < 1, 1 - scaled ** 2, 0.0)
    return jnp.where(inside, 1.0, outside).astype(x.dtype)
