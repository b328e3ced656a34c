"""Reverse-mode gradients of a contact rollout with respect to the Model's physical
parameters match central finite differences (float64), under every contact model.

What is checked. One vector ``theta`` holds every physical parameter the scene
exercises: the box's kinetic friction (``geom_friction``), its mass, pitch inertia and
centre of mass (x, z), its half extents along x and z (``geom_size``), the damping and
armature of the pushed slide joint (``dof_damping``, ``dof_armature``), the motor's
gain (``actuator_gain``), the initial sliding speed (not a Model field: the state's
gradient through the same rollout) and, under Springhead's model (the only one with
restitution), the box's ``geom_restitution``. ``jax.grad`` (reverse mode: implicit QP
adjoints, unrolled Gauss-Seidel sweeps, the scan's transpose) of a scalar loss of a
30-step rollout must agree with a central finite difference of the same loss in
every component, and every component must move the loss (a parameter the step does
not read, or reads without a derivative, fails one of the two checks). One compile
per contact model: ``theta`` is the only argument (the Models it makes share one
treedef), and the finite differences read the value output of the same compiled
``value_and_grad`` (cheaper than compiling the loss alone as well).

The scene, and why. A 20 x 10 x 10 cm, 1 kg box on three joints (slide x, pushed by a
6 N motor with damping and armature; slide z; a hinge about y) starts tilted 0.5 rad,
its lower edge 2.2 mm above the floor, moving at 0.5 m/s along x and falling at
0.6 m/s. It lands on that edge in the second step (an impact: Springhead's model
bounces it at e = 0.15, as its approach exceeds the lowered ``impact_threshold``, and
it lands again in step 13; the others stop the approach), then slides on the edge
while it tips towards its face; the 75 ms end with it still at 0.1-0.3 rad, its other
edge 21 mm or more above the floor. Every parameter enters: friction decelerates the
sliding edge and, through its lever, the tipping; mass, inertia and the centre of mass
set the fall about the edge; the half extents place the edge (and the gap at the
start); the motor, damping and armature drive the slide. The configuration keeps off
the switches that would make finite differences meaningless: the edge slips at
0.5-1.1 m/s throughout (far above ``slip_speed``: the kinetic coefficient holds, and
the static one, not a parameter here, has exactly no effect), the edge stays loaded
from its landing to the end (Springhead's: from its second landing), and the landing
step is fixed (the gap is 1.5 steps' travel; a relative perturbation of 1e-5 moves
it by micrometres, not the 1.5 mm of a step). The penalty
model gets soft springs (1e4 N/m, 100 N s/m), on which the edge stays pressed in: at
its default 1e6 N/m the edge hops on and off the springs from step to step, whether a
slot takes part in a step is a threshold, and the loss's sensitivity to the box's
size is a thousand times the others' (there an FD step of 1e-6 m missed AD by a
factor 3.3 where one of 1e-8 m agreed to 2e-9: the switch lies within a micrometre).
The loss weighs the final positions and velocities, the mean positions over the
rollout (so the flight of Springhead's bounce counts as much as the end) and the
floor's force on the box in the last step (``body_contact_wrench``, x and z: the
force query's derivatives; with it stopped, AD misses FD by 7 % under ``relaxed``).

Tolerance. Each component is compared as a sensitivity ``theta_k dL/dtheta_k`` (the
loss change per relative change of the parameter, so that kilograms and
kg m^2 compare): ``|AD - FD| <= 1e-4 max(|FD|, 1e-3 S)`` with S the largest
sensitivity. The FD is central with a relative step of 1e-5: its truncation error is
about (1e-5)^2 relative, rounding about 1e-16 / 1e-5, and the solvers' own error
(QP tolerance 1e-12, the exact friction solver converged to ~1e-17, fixed sweeps
differentiated as they run) enters as tol / h; measured, AD and FD agree to 1e-7
relative or better in every component under every model (and so in a variant with
gap 1.9 mm, 0.4 m/s, 0.55 rad). 1e-4 leaves three orders of margin for other CPUs and
XLA versions, while a wrong or missing adjoint term is an error of percent.
"Moves the loss": ``|theta_k dL/dtheta_k| >= 1e-4 S`` (measured, the weakest
component, Springhead's restitution, is at 4e-3 S; a decoy such as ``geom_rgba``
gives exactly 0).

Compile time dominates (the rollout's gradient is a large program: 6-15 s of CPU per
contact model, the volume model's the largest); it is compiled at XLA's backend
optimization level 0 on the CPU, which halves XLA's part and leaves the 5-100 ms runs
slower by a factor under 2.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsim
from jaxsim import ModelBuilder

DT, STEPS = 2.5e-3, 30
HALF = (0.1, 0.05, 0.05)  # m, box half extents
TILT, GAP, VX, VZ = 0.5, 2.2e-3, 0.5, -0.6  # rad, m, m/s, m/s at the start
REL_STEP = 1e-5  # relative finite-difference step
RTOL, FLOOR, NONZERO = 1e-4, 1e-3, 1e-4  # module docstring

# test id: (contact model, ModelBuilder options)
MODELS = {
    "relaxed": ("relaxed", {}),
    "rigid": ("rigid", {}),
    "penalty": ("penalty", {"penalty_stiffness": 1e4, "penalty_damping": 100.0}),
    "springhead": ("springhead", {"impact_threshold": 0.3}),
    "volume": ("volume", {}),
    "cone-exact": ("cone", {"solver": "exact"}),
    "cone-anitescu-tasora": ("cone", {"solver": "anitescu-tasora"}),
    "cone-nakaoka": ("cone", {"solver": "nakaoka"}),  # here its sweeps converge to 'exact'
}

# physical parameters: (label, Model field, index builder given the model)
PARAMS = [
    ("friction (kinetic)", "geom_friction", lambda m: (m.geom_id("box"), 1)),
    ("mass", "body_mass", lambda m: (m.body_id("box"),)),
    ("inertia (pitch)", "body_inertia", lambda m: (m.body_id("box"), 1)),
    ("com x", "body_com", lambda m: (m.body_id("box"), 0)),
    ("com z", "body_com", lambda m: (m.body_id("box"), 2)),
    ("half size x", "geom_size", lambda m: (m.geom_id("box"), 0)),
    ("half size z", "geom_size", lambda m: (m.geom_id("box"), 2)),
    ("damping", "dof_damping", lambda m: (m.topo.jnt_dofadr[m.joint_id("x")],)),
    ("armature", "dof_armature", lambda m: (m.topo.jnt_dofadr[m.joint_id("x")],)),
    ("gain", "actuator_gain", lambda m: (m.actuator_id("push"),)),
]
RESTITUTION = ("restitution", "geom_restitution", lambda m: (m.geom_id("box"),))


def fast_compile():
    """XLA options for the CPU that halve the gradient's compile time (module docstring)."""
    if jax.default_backend() != "cpu":
        return None
    return {"xla_backend_optimization_level": 0, "xla_llvm_disable_expensive_passes": True}


def pushed_box(contact: str, **options):
    """The scene of the module docstring (the floor's friction is below the box's, so
    the max rule of most models takes the box's; Springhead's mean takes half of it)."""
    b = ModelBuilder(timestep=DT, contact=contact, solver_tol=1e-12, **options)
    b.add_geom("world", "plane", (0, 0, 0), name="floor", friction=(0.2, 0.1), restitution=0.0)
    b.add_body("box", mass=1.0, com=(0.005, 0, -0.004), inertia=(0.003, 0.0042, 0.005))
    b.add_joint("box", "slide", axis=(1, 0, 0), name="x", damping=0.8, armature=0.3)
    b.add_joint("box", "slide", axis=(0, 0, 1), name="z")
    b.add_joint("box", "hinge", axis=(0, 1, 0), name="pitch")
    b.add_geom("box", "box", HALF, name="box", friction=(0.6, 0.4), restitution=0.3)
    b.add_actuator("push", joint="x", kind="general", gain=6.0)
    return b.build(jnp.float64)


@pytest.mark.parametrize("name", list(MODELS))
def test_parameter_gradients_match_finite_differences(name):
    contact, options = MODELS[name]
    base = pushed_box(contact, **options)
    params = PARAMS + [RESTITUTION] if contact == "springhead" else PARAMS
    where = [(field, index(base)) for _, field, index in params]
    theta0 = np.array([float(getattr(base, field)[i]) for field, i in where] + [VX])  # last: initial vx
    assert np.all(theta0 != 0)  # relative steps

    q0 = jnp.asarray([0.0, HALF[0] * np.sin(TILT) + HALF[2] * np.cos(TILT) + GAP, TILT])
    ctrl = jnp.ones((STEPS, base.nu))
    w_final_q = jnp.asarray([1.0, -2.0, 0.5])  # x, z, pitch
    w_final_v = jnp.asarray([0.5, 0.3, -0.1])
    w_mean_q = jnp.asarray([-1.0, 3.0, 0.4])
    w_force = jnp.asarray([0.02, 0.01])  # 1/N: the floor's last force on the box, x and z

    def loss(theta):
        model = base
        for k, (field, i) in enumerate(where):
            model = model.replace(**{field: getattr(model, field).at[i].set(theta[k])})

        def body(carry, u):
            state, total = carry
            state = jaxsim.step(model, state, u)
            return (state, total + state.q), None

        start = jaxsim.make_state(model, q=q0, v=jnp.stack([theta[-1], VZ, 0.0]))
        (final, total), _ = jax.lax.scan(body, (start, jnp.zeros_like(q0)), ctrl)
        force = jaxsim.body_contact_wrench(model, final, "box")[0]
        return w_final_q @ final.q + w_final_v @ final.v + w_mean_q @ total / STEPS + w_force @ force[::2]

    # one program for both: the finite differences read its value (module docstring)
    value_and_grad = jax.jit(jax.value_and_grad(loss), compiler_options=fast_compile())
    ad = np.asarray(value_and_grad(jnp.asarray(theta0))[1])
    fd = np.empty_like(theta0)
    for k in range(theta0.size):
        step = np.zeros_like(theta0)
        step[k] = REL_STEP * abs(theta0[k])
        up, down = (float(value_and_grad(jnp.asarray(theta0 + sign * step))[0]) for sign in (1, -1))
        fd[k] = (up - down) / (2 * step[k])

    s_ad, s_fd = theta0 * ad, theta0 * fd  # sensitivities: dL per relative change
    scale = np.max(np.abs(s_fd))
    table = "\n".join(f"  {label:20s} AD {a: .9e}  FD {f: .9e}  theta dL/dtheta {s: .2e}  rel err "
                      f"{abs(a - f) / max(abs(f), 1e-300):.1e}"
                      for label, a, f, s in zip([p[0] for p in params] + ["initial vx"], ad, fd, s_ad))
    print(f"{name}:\n{table}")
    assert np.all(np.isfinite(ad)) and np.all(np.isfinite(fd)), table
    assert np.all(np.abs(s_ad) >= NONZERO * scale), f"a parameter does not move the loss:\n{table}"
    tol = RTOL * np.maximum(np.abs(s_fd), FLOOR * scale)
    assert np.all(np.abs(s_ad - s_fd) <= tol), f"AD and FD disagree:\n{table}"
