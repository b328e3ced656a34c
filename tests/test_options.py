"""Option names: the documentation's option table (``docs/pages/options.md``) is the
generated one, every scene option is documented, the former names are listed there,
and they still work with a ``DeprecationWarning`` naming the new one (builder,
scenes, loaders)."""

import pathlib

import jax.numpy as jnp
import pytest

from jaxsim import ModelBuilder, scenes
from jaxsim.names import RENAMED
from jaxsim.options import SCENE_OPTIONS, markdown_table, scene_options

OPTIONS_PAGE = pathlib.Path(__file__).parent.parent / "docs" / "pages" / "options.md"


def test_options_page_table_is_generated_and_current():
    text = OPTIONS_PAGE.read_text()
    start, end = "<!-- options-table:start -->\n", "<!-- options-table:end -->"
    table = text[text.index(start) + len(start):text.index(end)]
    assert table == markdown_table(), "docs/pages/options.md's option table is stale: paste `python -m jaxsim.options`"
    assert set(SCENE_OPTIONS) == set(scene_options())
    for former, current in RENAMED.items():  # the options page names each former name and its successor
        assert f"| `{former}` | `{current}` |" in text, f"docs/pages/options.md does not list the former name {former!r}"


@pytest.mark.parametrize("former, value, read", [
    ("contact_stiffness", 500.0, lambda m: float(m.contact_params.contact_rate)),
    ("constraints", False, lambda m: m.opt.constraint),
    ("penalty_slip_speed", 0.02, lambda m: float(m.opt.slip_speed)),
])
def test_former_builder_names_warn_and_work(former, value, read):
    with pytest.warns(DeprecationWarning, match=f"'{former}' is deprecated, use '{RENAMED[former]}'"):
        model = scenes.cube(dtype=jnp.float64, **{former: value})
    assert read(model) == pytest.approx(value)


def test_former_model_parameter_names_warn_and_work():
    with pytest.warns(DeprecationWarning, match="'friction_model' is deprecated, use 'solver'"):
        b = ModelBuilder(contact="cone", friction_model="nakaoka", iterations=7)
    assert b.contact_params == {"solver": "nakaoka", "sweeps": 7}
    with pytest.warns(DeprecationWarning, match="'friction_threshold' is deprecated, use 'slip_speed'"):
        b = ModelBuilder(contact="springhead", friction_threshold=0.03, pgs_sweeps=4)
    assert b.stage_params["slip_speed"] == 0.03 and b.contact_params == {"sweeps": 4}
    with pytest.warns(DeprecationWarning, match="'implicit' is deprecated, use 'implicit_pd'"):
        model = scenes.quadruped(implicit=False, dtype=jnp.float64)
    assert not any(model.topo.actuator_implicit)
    with pytest.raises(ValueError, match="'pgs_sweeps' is the former name of 'sweeps'; give only 'sweeps'"):
        ModelBuilder(contact="springhead", pgs_sweeps=4, sweeps=5)


def test_add_pair_former_names_warn_and_work():
    b = ModelBuilder()
    b.add_geom("world", "plane", name="floor")
    b.add_body("ball", pos=(0, 0, 0.1), mass=1.0)
    b.add_joint("ball", "free")
    b.add_geom("ball", "sphere", (0.05,), name="ball")
    with pytest.warns(DeprecationWarning, match="'stiffness' is deprecated, use 'penalty_stiffness'"):
        b.add_pair("floor", "ball", mode="penalty", stiffness=2e5, penalty_damping=50.0)
    model = b.build(jnp.float64)
    assert float(model.pair_penalty_stiffness[0]) == 2e5 and float(model.pair_penalty_damping[0]) == 50.0
    assert model.topo.pair_penalty_stiffness_id == model.topo.pair_penalty_damping_id == (0,)


def test_fluid_forces_can_be_switched_on_without_a_medium():
    """``fluid=True`` keeps the medium's fields live at zero density, so a batch of
    Models can vary it from zero; by default a model without a medium skips them."""
    assert ModelBuilder(fluid=True).build().opt.fluid
    assert not ModelBuilder().build().opt.fluid and ModelBuilder(density=1.2).build().opt.fluid
