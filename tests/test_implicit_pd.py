"""Implicit PD (SPEC section 5): a position servo evaluated at the step's end,
solved as a soft constraint row by every contact model (float64).

One hinge (inertia 0.2 kg m^2 about its axis, no gravity) driven by a position servo
K = 1e4 N m/rad, B = 10 N m s/rad towards 1 rad at dt = 50 ms: semi-implicit Euler
with the servo's force taken at the step's end is the recurrence

    I w+ = I w + dt (K (q* - q - dt w+) - B w+),   q+ = q + dt w+,

which jaxsim must reproduce to round-off under every contact model, while the same
servo evaluated explicitly diverges (K dt^2 / I = 125).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsim
from conftest import rollout_in_chunks
from jaxsim import ModelError
from jaxsim.builder import ModelBuilder

I_AXIS, KP, KV, DT, STEPS = 0.2, 1e4, 10.0, 0.05, 40
BUILT_IN = ["relaxed", "rigid", "penalty", "springhead", "volume", "cone"]  # (tests register more)


def hinge(dt=DT, kp=KP, kv=KV, implicit=True, gravity=(0.0, 0.0, 0.0), forcerange=None, **options):
    """A 1 kg arm on a hinge (about z, or y with its centre of mass 0.3 m out when
    there is gravity) driven by one position servo."""
    b = ModelBuilder(timestep=dt, gravity=gravity, implicit_pd=implicit, **options)
    swing = gravity != (0.0, 0.0, 0.0)
    b.add_body("arm", mass=1.0, com=(0.3, 0.0, 0.0) if swing else (0.0, 0.0, 0.0), inertia=(0.1, 0.1, I_AXIS))
    b.add_joint("arm", "hinge", name="j", axis=(0, 1, 0) if swing else (0, 0, 1))
    b.add_actuator("servo", joint="j", kind="position", kp=kp, kv=kv, forcerange=forcerange)
    return b.build(jnp.float64)


def closed_form(steps=STEPS, target=1.0):
    q, w, out = 0.0, 0.0, []
    for _ in range(steps):
        w = (I_AXIS * w + DT * KP * (target - q)) / (I_AXIS + DT * KV + DT * DT * KP)
        q += DT * w
        out.append(q)
    return np.array(out)


def final_angles(model, ctrl, steps):
    _, traj = rollout_in_chunks(model, jaxsim.make_state(model), jnp.full((steps, 1), ctrl))
    return np.asarray(traj.q[:, 0])


@pytest.mark.parametrize("contact", BUILT_IN)
def test_every_contact_model_matches_the_closed_form(contact):
    got = final_angles(hinge(contact=contact), 1.0, STEPS)
    np.testing.assert_allclose(got, closed_form(), rtol=0, atol=1e-10)


def test_explicit_pd_diverges_where_implicit_settles():
    implicit = final_angles(hinge(), 1.0, STEPS)
    explicit = final_angles(hinge(implicit=False), 1.0, STEPS)
    assert abs(implicit[-1] - 1.0) < 1e-6 and np.all(implicit < 1.0 + 0.03)  # B = 10: a 2.7 % overshoot
    assert not np.all(np.abs(explicit) < 1e3)  # |q| grows ~120x per step


def test_force_limit_is_honoured():
    """Far from its target the servo saturates at its forcerange (50 N m): the arm
    accelerates at 50 / 0.2 = 250 rad/s^2, q_k = 250 dt^2 k (k + 1) / 2."""
    got = final_angles(hinge(forcerange=(-50.0, 50.0)), 10.0, 4)
    k = np.arange(1, 5)
    np.testing.assert_allclose(got, 250 * DT ** 2 * k * (k + 1) / 2, rtol=1e-10)


def test_small_steps_agree_with_explicit_pd():
    """A pendulum under gravity with a soft servo (K = 50, B = 2) at dt = 1 ms: the
    implicit and explicit laws differ by O(dt) per step; over 1 s within 1 %."""
    g = (0.0, 0.0, -9.81)
    implicit = final_angles(hinge(dt=1e-3, kp=50.0, kv=2.0, gravity=g), 0.5, 1000)
    explicit = final_angles(hinge(dt=1e-3, kp=50.0, kv=2.0, gravity=g, implicit=False), 0.5, 1000)
    assert np.max(np.abs(implicit - explicit)) < 0.01 * np.max(np.abs(explicit))


def test_gradients_match_finite_differences():
    """d(angle after 6 steps)/d(kp, target) through the soft row (implicit adjoint of
    the QP) against central differences."""
    model = hinge()

    def angle(kp, target):
        m = model.replace(actuator_gain=model.actuator_gain.at[0].set(kp),
                          actuator_bias=model.actuator_bias.at[0, 1].set(-kp))
        final, _ = jaxsim.rollout(m, jaxsim.make_state(m), jnp.full((6, 1), target))
        return final.q[0]

    x = (jnp.float64(300.0), jnp.float64(0.8))
    grads = jax.jit(jax.grad(angle, argnums=(0, 1)))(*x)
    f = jax.jit(angle)
    for i, h in enumerate((1e-3, 1e-6)):
        up = [*x]
        down = [*x]
        up[i], down[i] = x[i] + h, x[i] - h
        fd = (f(*up) - f(*down)) / (2 * h)
        np.testing.assert_allclose(grads[i], fd, rtol=1e-6)


def test_builder_rejects_what_implicit_pd_cannot_do():
    b = ModelBuilder()
    b.add_body("arm")
    b.add_joint("arm", "hinge", name="j", actuator_force_range=(-1, 1))
    with pytest.raises(ModelError, match="needs position or velocity feedback"):
        b.add_actuator("motor", joint="j", implicit_pd=True)
    b.add_actuator("servo", joint="j", kind="position", kp=10.0, implicit_pd=True)
    with pytest.raises(ModelError, match="actuatorfrcrange"):
        b.build()
    b = ModelBuilder(constraint=False)
    b.add_body("arm")
    b.add_joint("arm", "hinge", name="j")
    b.add_actuator("servo", joint="j", kind="position", kp=10.0, implicit_pd=True)
    with pytest.raises(ModelError, match="constraint=False"):
        b.build()
    b = ModelBuilder(implicit_pd=True)  # the scene default leaves motors explicit
    b.add_body("arm")
    b.add_joint("arm", "hinge", name="j")
    b.add_actuator("motor", joint="j")
    b.add_actuator("servo", joint="j", kind="position", kp=10.0)
    assert b.build().topo.actuator_implicit == (False, True)
