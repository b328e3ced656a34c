"""XLA options under which jaxsim's programs compile faster on the CPU.

XLA's CPU backend emits fused loops through its newer MLIR "fusion emitters" by
default. A jaxsim step is thousands of small element-wise fusions, and on it the
classic emitter (``--xla_cpu_use_fusion_emitters=false``) compiles 20-45 % faster and
runs as fast or slightly faster (2-core CPU, float64: a 100-step cube rollout gradient
compiles in 10.6 s instead of 15.6 s, one cube step in 1.9 s instead of 3.5 s; a
humanoid rollout 4.5 s instead of 5.5 s). Results agree to rounding (the cube
gradient to every printed digit; a sharded rollout and its one-device twin to 6e-14
instead of bit for bit). GPUs ignore the option, and XLA releases without the classic
emitter (jaxlib 0.11 and later) do not define it: there it is left out.

XLA reads ``XLA_FLAGS`` once, when JAX starts its first backend, so
``use_fast_cpu_compile()`` only takes effect if it runs before the first JAX
computation: the command line, the test suite and the benchmarks call it first thing.
In a notebook or script of your own, call it right after ``import jaxsim``.
"""

from __future__ import annotations

import os
import subprocess
import sys

FAST_CPU_COMPILE = ("--xla_cpu_use_fusion_emitters=false",)
_PROBE = "import jax; jax.devices()"  # starts the CPU backend, which parses XLA_FLAGS


def _flag_name(flag: str) -> str:
    """``--xla_foo=value`` -> ``--xla_foo``."""
    return flag.split("=")[0]


def _xla_accepts(flags: list[str]) -> bool:
    """Whether the installed XLA starts with ``flags`` in ``XLA_FLAGS``: asked of a
    short CPU-only Python process (0.5-1 s), because XLA aborts the whole process on
    a flag it does not define, and XLA's releases drop flags (jaxlib 0.11 has no
    ``--xla_cpu_use_fusion_emitters``) while their names can stay in the library's
    bytes. A process that cannot be started counts as a refusal."""
    env = {**os.environ, "XLA_FLAGS": " ".join(flags), "JAX_PLATFORMS": "cpu"}
    try:
        done = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True)
    except OSError:
        return False
    return done.returncode == 0


def use_fast_cpu_compile(environ=os.environ, flags: tuple[str, ...] = FAST_CPU_COMPILE) -> list[str]:
    """Append ``flags`` (default ``FAST_CPU_COMPILE``) to ``environ["XLA_FLAGS"]``,
    skipping each flag that ``XLA_FLAGS`` already sets (either way) or that this XLA
    does not define. The flags it adds are then in ``XLA_FLAGS``, so processes started
    from this one inherit them without asking XLA again.

    Returns:
      The flags appended (empty when there was nothing to add).
    """
    current = environ.get("XLA_FLAGS", "")
    named = {_flag_name(f) for f in current.split()}
    added = [f for f in flags if _flag_name(f) not in named]
    if added and not _xla_accepts(added):  # one process in the usual case; else each flag alone
        added = [f for f in added if _xla_accepts([f])]
    if added:
        environ["XLA_FLAGS"] = " ".join([current, *added]).strip()
    return added
