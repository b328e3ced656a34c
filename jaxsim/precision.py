"""Matrix products in full float32 precision on every backend.

On NVIDIA GPUs from the Ampere generation on, XLA's default precision for a float32
matrix product rounds both operands to TensorFloat-32 (a 10-bit mantissa, about 3
decimal digits), and JAX keeps that default unless told otherwise. The systems a step
solves (the joint-space mass matrix with implicit PD's damping and stiffness folded in,
the contact Delassus operator) are far too ill-conditioned for it: the seed quadruped
standing still at a 50 ms step turns non-finite on its second step in float32 on an
H200 under the default or ``"high"`` precision, and stands as on the CPU under
``"highest"``.

So every public stage traces its body under ``jax.default_matmul_precision("highest")``
(``full_precision``). The setting is read when an operation is traced and recorded in
it, so it holds for everything the stage traces: its loops, its derivative rules and
their transposes, and a policy that ``rollout_policy`` calls. A CPU computes float32
products in full precision anyway, so results there are unchanged to the bit. Matrix
products the caller traces outside jaxsim's stages keep the caller's precision.
"""

from __future__ import annotations

import functools
from typing import Callable

import jax

PRECISION = "highest"


def full_precision(fun: Callable) -> Callable:
    """``fun``, with every matrix product it traces at full float32 precision.

    The body runs under ``jax.default_matmul_precision("highest")``, read when each
    product is traced: a GPU's default TensorFloat-32 products are too coarse for the
    systems a step solves (module docstring). jaxsim's public stages, solvers and
    derivative rules carry it; wrap a function of your own that builds such systems
    the same way.
    """
    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        with jax.default_matmul_precision(PRECISION):
            return fun(*args, **kwargs)
    return wrapped
