"""A ``lax.while_loop`` that, under ``vmap``, iterates only on the envs still running.

Under ``vmap`` a plain ``lax.while_loop`` applies its body to the whole batch until
the last env stops, so a batch whose median env needs 10 iterations and whose slowest
needs 150 costs 150 iterations of the whole batch. ``while_loop`` here has a batching
rule (``jax.custom_batching.custom_vmap``) that, from ``MIN_BATCH`` envs on, runs
the loop in stages of static, shrinking batch sizes ``B, B/2, B/4, ..., 1`` (or
by another factor, ``shrink``): a stage iterates until at most the next stage's size
of its envs still run, then those envs (and their operands) are gathered into the
next stage, and its results are scattered back. The cost follows the sum of the
envs' iterations rather than the batch's maximum, on any backend, with static shapes
throughout. (Chunking a batch, ``jaxsim.parallel.chunked_vmap``, bounds
the same waste by running the batch in small pieces one after another, which suits
a CPU and wastes a GPU.)

Each env runs the iterations the plain loop would run, on the same data. A stage is a
smaller batch, which XLA may compile with different rounding, as it may any change of
batch size: a loop whose control flow follows rounding (the contact QP accepts or
rejects a step by comparing two curvatures) can then take a few iterations more or
less, and its result agrees with the plain loop's to the loop's own tolerance rather
than bit for bit. Under nested ``vmap`` the rule compacts the innermost batch axis;
outer ones are batched as usual.

No library offers this: JAX's own batching of ``while_loop`` is the plain one above.
"""

from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp

STAGE_SHRINK = 2  # each stage's batch is this factor smaller than the one before
SMALLEST_STAGE = 1  # the last stage's batch is at most this
# smaller batches run as one stage (JAX's batching): every stage is one more copy of
# the loop to compile (boxes8's vmapped step at 64 envs: 6.4 s with one, 10.2 s
# with seven), and a few envs have little iteration to shed
MIN_BATCH = 16


def stage_sizes(batch: int, shrink: int = STAGE_SHRINK) -> tuple[int, ...]:
    """The static batch sizes of the stages for a batch of ``batch`` envs:
    ``batch``, then each a ``shrink``-th of the last (rounded up), down to
    ``SMALLEST_STAGE``; one stage below ``MIN_BATCH`` envs."""
    sizes = [batch]
    while batch >= MIN_BATCH and sizes[-1] > SMALLEST_STAGE:
        sizes.append(-(-sizes[-1] // shrink))
    return tuple(sizes)


def while_loop(cond_fun: Callable[[Any, Any], jax.Array], body_fun: Callable[[Any, Any], Any],
               operands: Any, init_val: Any, shrink: int = STAGE_SHRINK) -> Any:
    """``lax.while_loop(lambda c: cond_fun(operands, c), lambda c: body_fun(operands,
    c), init_val)``, batched in compacting stages under ``vmap`` (module docstring).

    Args:
      cond_fun: ``(operands, carry) -> () bool``, whether to run another iteration.
      body_fun: ``(operands, carry) -> carry``.
      operands: a pytree of arrays the loop reads and does not change (problem data).
        Everything batched that the functions read must come through here or the
        carry: they must not close over traced values.
      init_val: the carry's initial value (a pytree of arrays).
      shrink: each stage's batch is this factor smaller than the one before. A larger
        factor means fewer stages, each of whose hand-overs costs a gather and a
        scatter of the carry and operands: it suits loops whose iterations cost less
        than a hand-over.

    Returns:
      The final carry.
    """
    @jax.custom_batching.custom_vmap
    def loop(operands, carry):
        return jax.lax.while_loop(lambda c: cond_fun(operands, c), lambda c: body_fun(operands, c), carry)

    @loop.def_vmap
    def _batched(axis_size, in_batched, operands, carry):
        ops_batched, carry_batched = in_batched
        carry = jax.tree.map(lambda x, b: x if b else jnp.broadcast_to(x, (axis_size,) + jnp.shape(x)),
                             carry, carry_batched)
        axes = jax.tree.map(lambda b: 0 if b else None, ops_batched)
        running = jax.vmap(cond_fun, (axes, 0))
        advance = jax.vmap(body_fun, (axes, 0))
        out = _stage(running, advance, ops_batched, stage_sizes(axis_size, shrink), operands, carry)
        return out, jax.tree.map(lambda _: True, out)

    return loop(operands, init_val)


def _stage(running: Callable, advance: Callable, ops_batched: Any, sizes: tuple[int, ...],
           operands: Any, carry: Any) -> Any:
    """Iterate the batch ``carry`` (``sizes[0]`` envs) while more than ``sizes[1]`` of
    them run, then hand the running ones to the next stage and scatter its results back."""
    after = sizes[1] if len(sizes) > 1 else 0

    def body(c):
        on = running(operands, c)
        new = advance(operands, c)
        return jax.tree.map(lambda a, b: jnp.where(on.reshape(on.shape + (1,) * (a.ndim - 1)), a, b), new, c)

    carry = jax.lax.while_loop(lambda c: jnp.sum(running(operands, c)) > after, body, carry)
    if len(sizes) == 1:
        return carry
    on = running(operands, carry)

    def next_stage(carry):
        _, idx = jax.lax.top_k(on.astype(jnp.int32), after)  # the running envs, then stopped ones
        sub_ops = jax.tree.map(lambda x, b: jnp.take(x, idx, 0) if b else x, operands, ops_batched)
        sub = _stage(running, advance, ops_batched, sizes[1:], sub_ops, jax.tree.map(lambda x: jnp.take(x, idx, 0),
                                                                                     carry))
        return jax.tree.map(lambda x, s: x.at[idx].set(s), carry, sub)

    return jax.lax.cond(jnp.any(on), next_stage, lambda c: c, carry)
