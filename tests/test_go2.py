"""A real robot standing: the Unitree Go2
from example-robot-data, its 12 joints servoed with implicit PD at dt = 10 ms, stands
for 4 s on a floor plane and on a patch of random bumps (a height field), in one
batched float32 rollout (``experiments/go2_stand.py`` prints the same figures over
10 s).

What "stands" means here, over the last 2 s: every value finite; the base at least
0.25 m up (it stands at 0.32 m on the plane; lying, it is under 0.15 m); it moves less
than 4 mm, 2 mm/s (no walking off or sliding down); it tilts less than 10 degrees; every
joint within 0.2 rad of its target (the servos hold the pose against gravity);
no contact deeper than 5 mm."""

import numpy as np
import pytest

from jaxsim import ModelError, robots
from jaxsim.robots import go2_stand, standing_figures


@pytest.mark.benchmark  # an end-to-end run (13 s); the default suite checks the Go2's dynamics against MuJoCo
def test_go2_stands_on_a_plane_and_on_bumps_with_implicit_pd():
    traj, target = go2_stand("relaxed", dt=0.01, seconds=4.0)
    figures = {ground: standing_figures(traj, target, g) for g, ground in enumerate(("plane", "hfield"))}
    for ground, f in figures.items():
        print(ground, {k: round(v, 5) if isinstance(v, float) else v for k, v in f.items()})
        assert f["finite"], ground
        assert f["base_z"] > 0.25, (ground, f["base_z"])
        assert f["moved_last_half_m"] < 0.004, (ground, f["moved_last_half_m"])
        assert f["tilt_deg"] < 10.0, (ground, f["tilt_deg"])
        assert f["servo_error_rad"] < 0.2, (ground, f["servo_error_rad"])
        assert f["depth_max_m"] < 5e-3, (ground, f["depth_max_m"])
    # the plane robot stands at the height its legs give: hip-to-foot of the standing
    # pose (thigh and calf 0.213 m, at 0.8 and -0.7 rad from vertical) plus the foot radius
    z_plane = figures["plane"]["base_z"]
    legs = 0.213 * (np.cos(0.8) + np.cos(0.7)) + 0.022
    assert abs(z_plane - legs) < 0.02, (z_plane, legs)


def test_a_missing_robot_file_is_named():
    with pytest.raises(ModelError, match="example-robot-data has no 'nope/robot.urdf'"):
        robots.robot_file("nope/robot.urdf")
