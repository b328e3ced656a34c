"""Contact that never explodes: randomized scenes in float32 (as users run them), and
bodies started overlapping, checked by ``jaxsim.diagnostics`` (penetration from the
shapes' support functions, independent of the collision code). The runs happen in
float32 processes (``float32_runs.py``); the assertions here.

Every random scene (``scenes.random_drop``: 4 free boxes, spheres, capsules or
convex hulls, masses 0.01-30 kg with up to 1000:1 in a scene, extents 1-15 cm, dt
0.5-5 ms, ~2 m/s and ~2 rad/s initial velocities, stacked with gaps above a floor)
must keep every value finite, never hold energy above its start by more than 1 % plus
the work bound of the capped depenetration (``diagnostics.energy_bound``), never keep
a pair more than 1 cm deep for longer than 20 ms, and never report a contact slot
deeper than its shapes' size. ``experiments/robustness.py`` runs the same checks on
1,000 scenes of 1-4 bodies for 10,000 steps.
"""

import numpy as np
import pytest

from float32_runs import EXACT_SCENES, OTHER_MODEL_SCENES, SCENES, TOPOLOGIES, VOLUME_SCENES, run


def _check_healthy(r: dict) -> None:
    """The module docstring's checks on every scene of a run."""
    report = {s: dict(energy=e, bound=b, depth=d, deep_time=t, slot=k) for s, e, b, d, t, k in
              zip(r["seeds"], r["energy_rise"], r["energy_bound"], r["depth_max"], r["deep_time"], r["slot_ratio"])}
    assert not any(r["nonfinite"]), report
    assert np.all(np.asarray(r["energy_rise"]) <= np.asarray(r["energy_bound"])), report
    assert np.all(np.asarray(r["deep_time"]) <= 0.02 + 1e-6), report
    assert np.all(np.asarray(r["slot_ratio"]) <= 1.0), report


@pytest.mark.parametrize("name", sorted(TOPOLOGIES))
def test_random_scenes_float32(name):
    r = run("random", name)
    assert r["dtype"] == "float32" and len(r["seeds"]) == SCENES[name]
    assert r["mass_ratio"] > 100  # heavy on light is in the sample
    _check_healthy(r)


@pytest.mark.parametrize("contact", ["rigid", "penalty", "springhead", "cone/exact", "cone/anitescu-tasora",
                                     "cone/nakaoka"])
def test_random_scenes_other_contact_models(contact):
    """The same checks for the other built-in contact models (relaxed: the tests above)
    on a few scenes of three boxes and a sphere, the stacks that load a solver most;
    the cone model with each of its friction models (fewer scenes for exact Coulomb,
    the costliest)."""
    r = run("random", f"solver:{contact}")
    assert r["dtype"] == "float32" and len(r["seeds"]) == (EXACT_SCENES if contact == "cone/exact" else OTHER_MODEL_SCENES)
    _check_healthy(r)


def test_random_scenes_contact_volume():
    """The same checks for the contact-volume model on scenes of boxes and hulls (every
    polyhedral pair kind: plane, box-box, box-hull, hull-hull volumes)."""
    r = run("random", "polytopes:volume")
    assert r["dtype"] == "float32" and len(r["seeds"]) == VOLUME_SCENES
    _check_healthy(r)


def test_overlapping_starts_separate_at_the_capped_speed():
    """A box started half inside the floor and a sphere half inside a box are pushed
    apart at no more than ``max_depenetration_speed`` (0.5 m/s): the momentum-level
    correction alone would push a 5 cm penetration out at 5 cm / dt (25 m/s here)."""
    r = run("overlap")
    assert r["dtype"] == "float32" and not r["nonfinite"]
    assert r["depth_first"] > 0.04  # they did start deep
    assert r["speed_max"] <= r["cap"] + 0.05
    assert r["depth_last"] < 1e-3  # apart after 0.8 s


def test_spinning_body_keeps_its_energy_bounded():
    """A 0.1 kg capsule tumbling at 240 rad/s (a light body knocked about in a random
    scene reached this) at dt = 2 ms, no gravity, no contact: with the gyroscopic torque
    taken at the step's end (the default) its energy never rises and it stays finite;
    taken explicitly, as MuJoCo's Euler does, the energy grows until it is NaN."""
    r = run("spin")
    implicit, explicit = r["implicit"], r["explicit"]
    assert implicit["finite"] and implicit["e_max"] <= implicit["e0"] * (1 + 1e-5)
    assert not (explicit["finite"] and explicit["e_max"] <= 1.5 * explicit["e0"])
