"""Every matrix product a public stage traces runs at full float32 precision.

A GPU's default float32 product (TensorFloat-32) turns the seed quadruped at a 50 ms
step non-finite in two steps (``jaxsim.precision``). No GPU runs here, so the test
reads the traced programs instead: every ``dot_general`` in the step, in its
gradient (derivative rules and transposes included) and in the public solvers carries
``HIGHEST``, while a product the caller traces outside keeps the caller's default.
"""

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend.core import ClosedJaxpr, Jaxpr

import jaxsim
from jaxsim import ModelBuilder, quadruped
from jaxsim.solver import friction, qp

HIGHEST = (jax.lax.Precision.HIGHEST, jax.lax.Precision.HIGHEST)


def _sub_jaxprs(value):
    if isinstance(value, ClosedJaxpr):
        yield value.jaxpr
    elif isinstance(value, Jaxpr):
        yield value
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _sub_jaxprs(v)


def dot_precisions(closed) -> list:
    """The ``precision`` of every ``dot_general`` in ``closed`` and its sub-programs."""
    found, stack = [], [closed.jaxpr]
    while stack:
        jaxpr = stack.pop()
        for eqn in jaxpr.eqns:
            if eqn.primitive.name == "dot_general":
                found.append(eqn.params["precision"])
            for value in eqn.params.values():
                stack.extend(_sub_jaxprs(value))
    return found


def _step_and_gradient(model, v) -> tuple[list, list]:
    """The products' precisions in a step from ``v``, and in its gradient with respect
    to ``v``."""
    state = jaxsim.make_state(model)
    forward = dot_precisions(jax.make_jaxpr(jaxsim.step)(model, state.replace(v=v)))
    backward = dot_precisions(jax.make_jaxpr(jax.grad(
        lambda v: jnp.sum(jaxsim.step(model, state.replace(v=v)).q)))(v))
    return forward, backward


def _cube(**options):
    b = ModelBuilder(timestep=2e-3, **options)
    b.add_geom("world", "plane", (5, 5, 0.1), friction=(0.8, 0.8), name="floor")
    b.add_body("cube", pos=(0, 0, 0.049), mass=1.0, inertia=(1 / 600,) * 3)
    b.add_joint("cube", "free")
    b.add_geom("cube", "box", (0.05, 0.05, 0.05), friction=(0.8, 0.8), name="box")
    return b.build()


def test_stage_products_run_at_full_precision():
    model = quadruped.build(0.05)
    forward, backward = _step_and_gradient(model, jnp.full((model.nv,), 0.1, model.qpos0.dtype))
    assert len(forward) > 50 and len(backward) > len(forward)
    assert all(p == HIGHEST for p in forward + backward)

    contacts = [dict(contact=name) for name in sorted(jaxsim.CONTACT_MODELS)]
    contacts += [dict(contact="cone", solver=s) for s in ("anitescu-tasora", "nakaoka")]
    for options in contacts:
        model = _cube(**options)
        forward, backward = _step_and_gradient(model, jnp.full((model.nv,), 0.1, model.qpos0.dtype))
        assert forward and backward, options
        assert all(p == HIGHEST for p in forward + backward), options

    H = jnp.eye(6) * 2.0
    problem = qp.QP(H=H, g=-jnp.ones(6), lower=jnp.zeros(6), upper=jnp.full(6, jnp.inf), mu=jnp.zeros(0))
    solvers = [jax.make_jaxpr(lambda g: qp.solve(problem._replace(g=g), jnp.zeros(6), 1e-6)[0])(problem.g),
               jax.make_jaxpr(lambda q: friction.solve(H, q, jnp.full((2,), 0.5))[0])(-jnp.ones(6))]
    for closed in solvers:
        precisions = dot_precisions(closed)
        assert precisions and all(p == HIGHEST for p in precisions)

    # the caller's own products keep the caller's setting
    a = np.ones((3, 3), np.float32)
    assert dot_precisions(jax.make_jaxpr(lambda x: x @ x)(a)) == [None]
