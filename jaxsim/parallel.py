"""Spread a batch of environments over every device: of one process, or of several.

Environments never talk to each other, so a vmapped step splits over devices along
its batch axis: put the batched States (and a batch of Models, if any) on a one-axis
``jax.sharding.Mesh`` named ``"batch"``, keep a shared Model replicated, and step with
``chunked_vmap(..., mesh=mesh)``, which hands each device its own slice
(``jax.shard_map``)::

    mesh = parallel.batch_mesh(batch)                  # all local devices that divide it
    states = parallel.shard_batch(states, mesh)         # (batch, ...) leaves split
    model = parallel.replicate(model, mesh)             # one copy per device
    run = jax.jit(parallel.chunked_vmap(jaxsim.step, (None, 0), mesh=mesh))
    states = run(model, states)                         # split over the mesh as it came

``jax.jit(jax.vmap(jaxsim.step, (None, 0)))`` on the same sharded arrays also runs
and gives the same States, but slower: a vmapped contact solve is a ``while_loop``
whose stopping test reduces over the whole batch, so a batch split over devices
makes them agree at every solver iteration. Measured on 2 CPU devices (cube, 64 envs,
100 steps): 0.48 s against 0.24 s on one device and 0.21 s with ``chunked_vmap``;
across two processes, where that agreement is a message over the network, a 50-step
rollout took 51 s against 0.1 s. On one device all of this is a no-op, so code
written this way runs unchanged on a laptop, one GPU or a node of eight. To try it on
a CPU, start Python with ``XLA_FLAGS=--xla_force_host_platform_device_count=4`` (or
``JAX_NUM_CPU_DEVICES=4``) before JAX is imported.

Meshes from ``jax.make_mesh`` have Explicit axes, whose shardings are part of each
array's type: every stage accepts batches sharded on them too
(``accepts_explicit_axes``).

Several processes (JAX's multi-controller runtime: one process per host or per GPU,
started by ``srun``, ``mpirun`` or ``python -m jaxsim.launch``): call ``initialize()``
first, build the mesh over every process's devices with ``global_mesh``, let each
process make only its own envs (``process_rows``, with per-env random keys from
``env_keys`` so that the draws do not depend on the number of processes), join them
into global arrays with ``from_process_rows`` and bring results back with ``gather``::

    parallel.initialize()                               # reads JAX_COORDINATOR_ADDRESS, ...
    mesh = parallel.global_mesh(batch)
    rows = parallel.process_rows(batch, mesh)           # this process's envs
    states = parallel.from_process_rows(make_states(parallel.env_keys(seed, batch, rows)), mesh)
    states = jax.jit(parallel.chunked_vmap(roll, 0, mesh=mesh))(states)
    q = parallel.gather(states.q)                       # (batch, nq) on every process

Chunks on a CPU (``chunked_vmap``, ``default_chunk``): a vmapped contact solve
touches every env's (n, n) QP matrix at each iteration, and a large batch's matrices
no longer fit in the CPU's caches. ``chunked_vmap`` steps ``chunk`` envs at a time
(``lax.map`` with ``batch_size``: a scan over vmapped chunks), so a chunk's matrices
stay in cache. (Within a batch or a chunk, the solver's loops already iterate only on
the envs still running: ``jaxsim.solver.compaction``.) ``default_chunk`` aims at
``CHUNK_ENTRIES`` matrix entries per chunk. Measured at batch 1,024 on 2 cores
(float32, 10-step calls): 8 boxes (a 144-row QP) 942 env-steps/s as one vmap, 1,205
in chunks of 4, 1,654 in chunks of 32 and 1,645 in chunks of 128; the ant (56 rows)
and the humanoid (65 rows) run as fast or faster as one vmap (9,287 and 5,812, against
7,612-8,011 and 4,177-6,361 in chunks of 16-128), so only QPs of more than about 90
rows are chunked. A GPU wants the whole batch at once: ``default_chunk`` chunks only
on the CPU backend.
"""

from __future__ import annotations

import functools
import math
import os
import socket
import time
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec

Array = jax.Array
AXIS = "batch"
CHUNK_ENTRIES = 2 ** 21  # chunk x n^2 QP-matrix entries a CPU chunk aims at (8 MiB in float32)


def explicit_mesh(tree: Any):
    """The mesh with Explicit axes that some array leaf of ``tree`` is typed on, or None.

    Arrays sharded on a mesh from ``jax.make_mesh`` (Explicit axes by default) carry
    their sharding in their type; under ``vmap`` a per-env value's type still names
    the mesh, though its batch axis is hidden."""
    for leaf in jax.tree.leaves(tree):
        if not isinstance(leaf, (jax.Array, jax.core.Tracer)):
            continue
        mesh = getattr(getattr(jax.typeof(leaf), "sharding", None), "mesh", None)
        if mesh is not None and not mesh.empty and AxisType.Explicit in mesh.axis_types:
            return mesh
    return None


def accepts_explicit_axes(fun: Callable) -> Callable:
    """``fun``, able to take arrays sharded on a mesh with Explicit axes.

    Under Explicit axes every operation must agree on its operands' shardings, and
    ``vmap`` breaks that for values a stage makes without reading its inputs (a
    ``zeros_like`` later stacked with batched ones is broadcast unsharded), or for
    gathers and scatters with the model's index arrays. Rather than spell out a
    sharding at each of those places, the body runs with the mesh's axes turned to
    Auto (``jax.sharding.auto_axes``), where the compiler chooses the shardings, as
    it does for meshes built with Auto axes; the outputs are per env unsharded, so
    under ``vmap`` they come back split along the batch axis like the inputs. With no
    Explicit axes in sight ``fun`` is called as it is. Non-array arguments (static
    ones, callables) are passed through unchanged."""
    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        leaves, treedef = jax.tree.flatten((args, kwargs))
        mesh = explicit_mesh(leaves)
        if mesh is None:
            return fun(*args, **kwargs)
        is_array = [isinstance(x, (jax.Array, jax.core.Tracer, np.ndarray)) for x in leaves]

        def body(arrays):
            it = iter(arrays)
            a, k = jax.tree.unflatten(treedef, [next(it) if arr else x for x, arr in zip(leaves, is_array)])
            return fun(*a, **k)

        with jax.sharding.use_abstract_mesh(mesh):
            return jax.sharding.auto_axes(body, out_sharding=PartitionSpec())(
                [x for x, arr in zip(leaves, is_array) if arr])
    return wrapped


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
    return NamedSharding(mesh, batch_spec(mesh))


def batch_spec(mesh: Mesh) -> PartitionSpec:
    """The leading axis split over every axis of ``mesh`` (its only one for
    ``batch_mesh``, ``"batch"``; any names for meshes from ``jax.make_mesh``)."""
    return PartitionSpec(mesh.axis_names if len(mesh.axis_names) > 1 else mesh.axis_names[0])


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


# ----------------------------------------------------------- several processes
# JAX's multi-controller runtime: one process per host (or per GPU), each running the
# same program on its own devices; an array on a mesh over every process's devices
# is one global array of which each process holds its rows.

COORDINATOR_ENV = "JAX_COORDINATOR_ADDRESS"  # host:port of process 0's coordinator
NUM_PROCESSES_ENV = "JAX_NUM_PROCESSES"
PROCESS_ID_ENV = "JAX_PROCESS_ID"
_CLUSTER_ENVS = ("SLURM_JOB_ID", "OMPI_COMM_WORLD_SIZE")  # JAX detects these clusters itself


def initialize(coordinator_address: str | None = None, num_processes: int | None = None,
               process_id: int | None = None, local_device_ids: Sequence[int] | None = None, *,
               timeout_s: int = 120, heartbeat_timeout_s: int = 30) -> bool:
    """Join a run of several processes (``jax.distributed.initialize``), before any
    other JAX call; a single process does nothing.

    Arguments left None are read from the environment: ``JAX_COORDINATOR_ADDRESS``
    (``host:port`` of process 0), ``JAX_NUM_PROCESSES`` and ``JAX_PROCESS_ID`` (set by
    ``python -m jaxsim.launch`` or by hand), else found by JAX's cluster detection
    under SLURM (``srun``) and Open MPI (``mpirun``). Calling it again once joined is
    harmless.

    Args:
      coordinator_address: ``host:port`` of process 0, which serves the coordinator.
      num_processes: number of processes.
      process_id: this process's index, 0 to ``num_processes - 1``.
      local_device_ids: the local devices this process uses (e.g. one GPU each).
      timeout_s: how long to wait for every process to join before failing.
      heartbeat_timeout_s: after how long without news a process counts as dead, so
        that the others stop with an error instead of waiting forever.

    Returns:
      True when this process is one of several (``jax.process_count() > 1``).

    Raises:
      ValueError: a variable without a value, a malformed address, or a process id out
        of range.
      RuntimeError: process 0 cannot serve the coordinator (its port is taken), or the
        processes did not all join within ``timeout_s``.
    """
    if jax.distributed.is_initialized():
        return jax.process_count() > 1
    env = os.environ
    coordinator_address = coordinator_address or env.get(COORDINATOR_ENV) or None
    num_processes = _env_int(NUM_PROCESSES_ENV, num_processes)
    process_id = _env_int(PROCESS_ID_ENV, process_id)
    if coordinator_address is None and num_processes is None and not any(k in env for k in _CLUSTER_ENVS):
        return False
    if num_processes == 1:
        return False
    if coordinator_address is not None:
        host, _, port = coordinator_address.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"initialize: the coordinator address must be host:port, got {coordinator_address!r}")
        if num_processes is not None and process_id is not None and not 0 <= process_id < num_processes:
            raise ValueError(f"initialize: process id {process_id} out of range for {num_processes} processes")
        if process_id == 0 and not _port_free(int(port)):
            raise RuntimeError(f"initialize: process 0 cannot serve the coordinator at {coordinator_address}: "
                               f"port {port} is in use (choose another with {COORDINATOR_ENV}=host:port)")
        # JAX aborts the whole process, with no Python error, when the coordinator
        # never answers: wait for it here, so that a missing process 0 is an error
        if process_id not in (None, 0) and not _reachable(host.strip("[]"), int(port), timeout_s):
            raise RuntimeError(f"initialize: process {process_id} of {num_processes} found no coordinator at "
                               f"{coordinator_address} within {timeout_s} s (is process 0 running?)")
    try:
        jax.distributed.initialize(coordinator_address, num_processes, process_id, local_device_ids,
                                   initialization_timeout=int(timeout_s),
                                   heartbeat_timeout_seconds=int(heartbeat_timeout_s))
    except Exception as e:  # JAX's own messages do not say which process or address
        raise RuntimeError(f"initialize: process {process_id} of {num_processes} could not join the run "
                           f"coordinated at {coordinator_address} within {timeout_s} s: {e}") from e
    return jax.process_count() > 1


def _env_int(name: str, value: int | None) -> int | None:
    """``value``, else the environment variable ``name`` as an int, else None."""
    if value is not None or not os.environ.get(name):
        return value
    try:
        return int(os.environ[name])
    except ValueError:
        raise ValueError(f"initialize: {name} must be an integer, got {os.environ[name]!r}") from None


def _port_free(port: int) -> bool:
    """Whether a TCP ``port`` can be bound on this host (the coordinator binds every
    address on its port)."""
    with socket.socket(socket.AF_INET6 if socket.has_ipv6 else socket.AF_INET) as probe:
        try:
            probe.bind(("::" if socket.has_ipv6 else "", port))
        except OSError:
            return False
    return True


def _reachable(host: str, port: int, timeout_s: float) -> bool:
    """Whether something accepts TCP connections at ``host:port`` within ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with socket.create_connection((host, port), timeout=1.0):
                return True
        except OSError:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.2)


def global_mesh(batch: int | None = None) -> Mesh:
    """A one-axis mesh (``"batch"``) over every device of every process (``jax.devices()``,
    process by process), for a batch split across processes; on one process, the same
    as ``batch_mesh(batch, jax.devices())``.

    Raises:
      ValueError: with several processes, a ``batch`` the device count does not divide
        (every process must hold a share).
    """
    devices = jax.devices()
    if jax.process_count() > 1 and batch is not None and int(batch) % len(devices):
        raise ValueError(f"global_mesh: a batch of {batch} does not split over the {len(devices)} devices of "
                         f"{jax.process_count()} processes; use a multiple of {len(devices)}")
    return batch_mesh(batch, devices)


def process_rows(batch: int, mesh: Mesh) -> slice:
    """The rows (env indices) of a ``batch`` split over ``mesh`` that this process holds:
    one contiguous block, as ``global_mesh`` orders devices process by process."""
    index = batch_sharding(mesh).addressable_devices_indices_map((batch,))
    starts = sorted((idx[0].start or 0, idx[0].stop if idx[0].stop is not None else batch)
                    for idx in index.values())
    return slice(starts[0][0], starts[-1][1])


def env_keys(seed: int, batch: int, rows: slice | None = None) -> Array:
    """Per-env PRNG keys: env ``i``'s key is ``fold_in(PRNGKey(seed), i)``, so a random
    draw depends on the env's global index only, not on how many processes or devices
    share the batch. ``rows``: only those envs' keys (``process_rows``)."""
    index = jnp.arange(batch)[rows if rows is not None else slice(None)]
    return jax.vmap(lambda i: jax.random.fold_in(jax.random.PRNGKey(seed), i))(index)


def from_process_rows(tree: Any, mesh: Mesh) -> Any:
    """Global batched arrays from each process's own rows (``process_rows``): the
    leaves of ``tree`` have this process's share along their leading axis, and the
    result's leading axis is the whole batch, split over ``mesh``
    (``jax.make_array_from_process_local_data``)."""
    spec, whole = batch_sharding(mesh), NamedSharding(mesh, PartitionSpec())
    share = mesh.devices.size // len(mesh.local_devices)  # global rows per local row

    def put(x):
        x = np.asarray(x)
        if x.size:
            return jax.make_array_from_process_local_data(spec, x)
        # an empty leaf (nu = 0, no activations), replicated as shard_batch puts it
        shape = (x.shape[0] * share,) + x.shape[1:]
        return jax.make_array_from_callback(shape, whole, lambda index: np.zeros(shape, x.dtype)[index])

    return jax.tree.map(put, tree)


def gather(tree: Any) -> Any:
    """Every leaf of ``tree`` in full on every process, as NumPy arrays
    (``multihost_utils.process_allgather``; a collective: every process must call it).
    On one process, ``jax.device_get``."""
    if jax.process_count() == 1:
        return jax.device_get(tree)
    from jax.experimental import multihost_utils
    return multihost_utils.process_allgather(tree, tiled=True)


def default_chunk(model, platform: str | None = None) -> int | None:
    """Envs per chunk for ``chunked_vmap`` on ``platform`` (default: JAX's default
    backend), from the size ``n`` of the model's contact solve: the power of two
    nearest ``CHUNK_ENTRIES / n^2``, at least 4; None (one vmap over the whole batch)
    off the CPU, without a contact solve, or where that is 256 or more (QPs of up to
    about 90 rows run fastest unchunked). Module docstring: why and measurements."""
    from jaxsim.contact.stage import solve_size  # (imports the contact models)

    if (platform or jax.default_backend()) != "cpu":
        return None
    n = solve_size(model)
    if n == 0:
        return None
    chunk = 2 ** round(math.log2(CHUNK_ENTRIES / n ** 2))
    return None if chunk >= 256 else max(chunk, 4)


def chunked_vmap_leaves(fun: Callable, in_batched: tuple, chunk: int | None) -> Callable:
    """``chunked_vmap`` with the batched inputs named per leaf: ``in_batched`` holds, per
    positional argument, a pytree of bools like it (True: the leaf has the batch axis
    first; False: shared by every env). For arguments only partly batched, as Brax's
    domain randomization vmaps a model whose randomized fields alone carry the batch
    axis (``jaxsim.envs.wrappers``)."""
    in_batched = tuple(in_batched)
    vfun = jax.vmap(fun, tuple(jax.tree.map(lambda b: 0 if b else None, flags) for flags in in_batched))

    def run(*args):
        leaves, treedef = jax.tree.flatten(args)
        flags = jax.tree.leaves(in_batched)
        if len(flags) != len(leaves):
            raise ValueError(f"chunked_vmap_leaves: in_batched has {len(flags)} leaves, the arguments {len(leaves)}")
        mapped = [x for x, f in zip(leaves, flags) if f]
        batch = mapped[0].shape[0] if mapped else 0

        def envs(xs):  # the full argument list around a slice of the batched leaves
            it = iter(xs)
            if xs and xs[0].shape[0] == 1:  # one env: unbatched (see chunked_vmap)
                out = fun(*treedef.unflatten([next(it)[0] if f else x for x, f in zip(leaves, flags)]))
                return jax.tree.map(lambda y: jnp.expand_dims(y, 0), out)
            return vfun(*treedef.unflatten([next(it) if f else x for x, f in zip(leaves, flags)]))

        if not chunk or batch <= chunk:
            return envs(mapped) if mapped else vfun(*args)

        # (lax.map's own batch_size reshapes with -1, which fails on the State's empty
        # leaves, e.g. ``act`` without activations: the shapes are spelled out here)
        full, size = batch // chunk, batch // chunk * chunk
        cut = [x[:size].reshape((full, chunk) + x.shape[1:]) for x in mapped]
        out = jax.tree.map(lambda y: y.reshape((size,) + y.shape[2:]), jax.lax.map(envs, cut))
        if size == batch:
            return out
        rest = envs([x[size:] for x in mapped])
        return jax.tree.map(lambda a, b: jnp.concatenate([a, b]), out, rest)
    return run


def chunked_vmap(fun: Callable, in_axes: int | None | Sequence[int | None] = 0, chunk: int | None = None,
                 mesh: Mesh | None = None) -> Callable:
    """``jax.vmap(fun, in_axes)`` computed ``chunk`` envs at a time.

    The envs are cut into chunks of ``chunk`` that a ``lax.map`` runs one after the
    other, each chunk vmapped (envs left over when ``chunk`` does not divide the
    batch: one more vmap); results are those of the plain vmap (to the contact QP's
    tolerance: its step choices can follow rounding). ``chunk`` None or 0,
    or a batch no larger than it: the plain vmap. A batch (or a leftover) of one env
    is not vmapped but run as one env with a batch axis added to its results: under
    ``vmap`` a ``lax.cond`` runs both branches and a ``while_loop`` body selects
    between old and new carries, which one env does not need (exact and Nakaoka
    friction skip their converged sweeps by ``cond``). With a ``mesh`` of several devices
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

    def run(*args):
        axes = axes_in or (in_axes,) * len(args)
        flags = tuple(jax.tree.map(lambda _, ax=ax: ax is not None, a) for a, ax in zip(args, axes))
        return chunked_vmap_leaves(fun, flags, chunk)(*args)

    if mesh is None or mesh.devices.size == 1:
        return run

    def sharded(*args):
        axes = axes_in or (in_axes,) * len(args)
        specs = tuple(batch_spec(mesh) if ax is not None else PartitionSpec() for ax in axes)
        if AxisType.Explicit in mesh.axis_types:  # shard_map takes them only as its specs say
            args = tuple(jax.tree.map(lambda x, sp=sp: jax.sharding.reshard(x, NamedSharding(mesh, sp)), a)
                         for a, sp in zip(args, specs))
        return jax.shard_map(run, mesh=mesh, in_specs=specs, out_specs=batch_spec(mesh),
                             check_vma=False)(*args)
    return sharded
