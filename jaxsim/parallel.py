"""Spread a batch of environments over every local device.

Environments never talk to each other, so a vmapped step splits over devices along
its batch axis with no communication: put the batched States (and a batch of Models,
if any) on a one-axis ``jax.sharding.Mesh`` named ``"batch"``, keep a shared Model
replicated, and ``jax.jit`` partitions the vmapped computation itself (each device
steps its own slice; the outputs stay sharded the same way)::

    mesh = parallel.batch_mesh(batch)                  # all local devices that divide it
    states = parallel.shard_batch(states, mesh)         # (batch, ...) leaves split
    model = parallel.replicate(model, mesh)             # one copy per device
    states = jax.jit(jax.vmap(jaxsim.step, (None, 0)))(model, states)

On one device all three are no-ops, so code written this way runs unchanged on a
laptop, one GPU or a node of eight. To try it on a CPU, start Python with
``XLA_FLAGS=--xla_force_host_platform_device_count=4`` (before JAX is imported).
"""

from __future__ import annotations

from typing import Any, Sequence

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

AXIS = "batch"


def batch_mesh(batch: int | None = None, devices: Sequence[jax.Device] | None = None) -> Mesh:
    """A one-axis mesh (``"batch"``) over the largest number of ``devices`` (default:
    ``jax.local_devices()``) that divides ``batch``, taken in order; every device when
    ``batch`` is None.

    Raises:
      ValueError: ``batch`` below 1, or no devices.
    """
    devices = list(jax.local_devices() if devices is None else devices)
    if not devices:
        raise ValueError("batch_mesh: no devices given")
    count = len(devices)
    if batch is not None:
        if int(batch) < 1:
            raise ValueError(f"batch_mesh: batch must be at least 1, got {batch}")
        count = max(k for k in range(1, count + 1) if int(batch) % k == 0)
    return Mesh(np.asarray(devices[:count]), (AXIS,))


def batch_sharding(mesh: Mesh) -> NamedSharding:
    """The sharding of a batched leaf: leading axis split over ``mesh`` (for
    ``jax.lax.with_sharding_constraint`` or ``jax.jit(out_shardings=...)``, so a jitted
    loop hands back its States split as it got them)."""
    return NamedSharding(mesh, PartitionSpec(AXIS))


def shard_batch(tree: Any, mesh: Mesh) -> Any:
    """``tree`` with the leading (batch) axis of every array leaf split over ``mesh``.

    Raises:
      ValueError: a leaf without a leading axis, or whose length the mesh's device
        count does not divide (build the mesh with ``batch_mesh(batch)``).
    """
    n = mesh.devices.size
    spec, empty = batch_sharding(mesh), NamedSharding(mesh, PartitionSpec())

    def put(path, x):
        shape = np.shape(x)
        if not shape or shape[0] % n:
            where = jax.tree_util.keystr(path) or "the array"
            raise ValueError(f"shard_batch: {where} has shape {shape}; its leading (batch) axis "
                             f"must be a multiple of the mesh's {n} devices")
        # an empty leaf (nu = 0, no activations) holds nothing to split, and XLA hands
        # it back replicated: put it so, or a compiled loop would refuse its own output
        return jax.device_put(x, spec if np.size(x) else empty)

    return jax.tree_util.tree_map_with_path(put, tree)


def replicate(tree: Any, mesh: Mesh) -> Any:
    """``tree`` (a Model, shared by every env) with a full copy on every device of
    ``mesh``; non-array leaves are left as they are."""
    spec = NamedSharding(mesh, PartitionSpec())
    return jax.tree.map(lambda x: jax.device_put(x, spec) if isinstance(x, (jax.Array, np.ndarray)) else x,
                        tree)
