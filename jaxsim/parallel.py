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

Chunks on a CPU (``chunked_vmap``, ``default_chunk``): a vmapped contact solve is a
``while_loop`` that iterates as long as the batch's slowest env, and each iteration
touches every env's (n, n) QP matrix. On a CPU a large batch therefore loses twice:
one hard env (the 8 tumbling boxes' QPs need 19 iterations at the median and 318 at
the worst) sets the count for all, and the batch's matrices no longer fit in cache.
``chunked_vmap`` steps ``chunk`` envs at a time (``lax.map`` with ``batch_size``:
a scan over vmapped chunks), so a chunk stops as soon as its own envs have converged
and its matrices stay in cache. Measured at batch 1,024 on 2 cores (float32, 10-step
calls): 8 boxes 266 -> 1,023 env-steps/s with chunks of 4, ant 2,705 -> 5,848 and
humanoid 1,878 -> 3,433 with 16; the cube (a 12-row QP, 2 iterations) is faster
unchunked (116k against 93k with 64). A GPU wants the whole batch at once:
``default_chunk`` chunks only on the CPU backend.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

AXIS = "batch"
CHUNK_ENTRIES = 65536  # chunk x n^2 QP-matrix entries a CPU chunk aims at (256 KiB in float32)


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


def default_chunk(model, platform: str | None = None) -> int | None:
    """Envs per chunk for ``chunked_vmap`` on ``platform`` (default: JAX's default
    backend), from the size ``n`` of the model's contact solve: the power of two
    nearest ``CHUNK_ENTRIES / n^2``, at least 4; None (one vmap over the whole batch)
    off the CPU, without a contact solve, or where that is 256 or more (small QPs:
    the cube's 12 rows run fastest unchunked). Module docstring: why and measurements."""
    from jaxsim.contact.stage import solve_size  # (imports the contact models)

    if (platform or jax.default_backend()) != "cpu":
        return None
    n = solve_size(model)
    if n == 0:
        return None
    chunk = 2 ** round(math.log2(CHUNK_ENTRIES / n ** 2))
    return None if chunk >= 256 else max(chunk, 4)


def chunked_vmap(fun: Callable, in_axes: int | None | Sequence[int | None] = 0, chunk: int | None = None,
                 mesh: Mesh | None = None) -> Callable:
    """``jax.vmap(fun, in_axes)`` computed ``chunk`` envs at a time.

    The envs are cut into chunks of ``chunk`` that a ``lax.map`` runs one after the
    other, each chunk vmapped (envs left over when ``chunk`` does not divide the
    batch: one more vmap); results are those of the plain vmap (to the contact QP's
    tolerance: its step choices can follow rounding). ``chunk`` None or 0,
    or a batch no larger than it: the plain vmap. With a ``mesh`` of several devices
    the batch is first split over them (``jax.shard_map``: the batched arguments as
    ``shard_batch`` puts them, the others replicated) and each device chunks its own
    slice, so no chunk crosses devices.

    Args:
      fun: the per-env function (positional arguments only).
      in_axes: 0 (batched) or None (shared) per positional argument, or one of them
        for all.
      chunk: envs per chunk (``default_chunk(model)``).
      mesh: optional ``batch_mesh``.

    Raises:
      ValueError: an ``in_axes`` entry other than 0 or None, or a chunk below 0.
    """
    axes_in = tuple(in_axes) if isinstance(in_axes, (tuple, list)) else None
    if any(ax not in (0, None) for ax in (axes_in or (in_axes,))):
        raise ValueError(f"chunked_vmap: in_axes must be 0 or None per argument, got {in_axes!r}")
    if chunk is not None and int(chunk) < 0:
        raise ValueError(f"chunked_vmap: chunk must be positive (or 0/None: no chunks), got {chunk}")
    vfun = jax.vmap(fun, in_axes)

    def run(*args):
        axes = axes_in or (in_axes,) * len(args)
        mapped = tuple(a for a, ax in zip(args, axes) if ax is not None)
        batch = jax.tree.leaves(mapped)[0].shape[0] if jax.tree.leaves(mapped) else 0
        if not chunk or batch <= chunk:
            return vfun(*args)

        def envs(xs):  # the full argument list around a slice of the batched ones
            it = iter(xs)
            return vfun(*(next(it) if ax is not None else a for a, ax in zip(args, axes)))

        # (lax.map's own batch_size reshapes with -1, which fails on the State's empty
        # leaves, e.g. ``act`` without activations: the shapes are spelled out here)
        full, size = batch // chunk, batch // chunk * chunk
        cut = jax.tree.map(lambda x: x[:size].reshape((full, chunk) + x.shape[1:]), mapped)
        out = jax.tree.map(lambda y: y.reshape((size,) + y.shape[2:]), jax.lax.map(envs, cut))
        if size == batch:
            return out
        rest = envs(jax.tree.map(lambda x: x[size:], mapped))
        return jax.tree.map(lambda a, b: jnp.concatenate([a, b]), out, rest)

    if mesh is None or mesh.devices.size == 1:
        return run

    def sharded(*args):
        axes = axes_in or (in_axes,) * len(args)
        specs = tuple(PartitionSpec(AXIS) if ax is not None else PartitionSpec() for ax in axes)
        return jax.shard_map(run, mesh=mesh, in_specs=specs, out_specs=PartitionSpec(AXIS),
                             check_vma=False)(*args)
    return sharded
