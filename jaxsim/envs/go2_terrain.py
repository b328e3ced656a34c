"""Go2 on rough terrain: the Unitree Go2 (``jaxsim.robots.go2_standing``: 12 joints,
each a position servo of 60 N m/rad solved implicitly with the contacts, the URDF's
effort limits) walking forward over a 2 x 2 m patch of random bumps (a height field,
up to 5 cm on 5 cm cells, raised 5 cm, centred at x = ``GO2_TERRAIN_X``) or on the
plane. The counterpart is MuJoCo Playground's ``Go1JoystickRoughTerrain`` / legged_gym's
rough-terrain Go2 walk, with the reward of Brax's ``ant`` (run forward, stay up)
instead of velocity tracking.

- Action (12) in [-1, 1]: servo target offsets from Unitree's standing pose (hip 0,
  thigh 0.8, calf -1.5 rad), ``action_scale`` rad at full action (default 0.25, the
  action scale of Unitree's ``unitree_rl_gym`` Go2 walk).
- Observation (46 = 10 + 3 x 12): trunk height, gravity in the trunk frame (3), joint
  positions relative to standing (12), trunk linear and angular velocity in the trunk
  frame (3 + 3), joint velocities (12), last action (12); with ``gait_period`` set, a
  gait clock (2) and with ``heading_observation`` the walking direction (3) last;
  ``jaxsim.envs.locomotion``.
- Reward: trunk x velocity (m/s) ``- 0.04 sum(action^2)`` (a full action on every servo
  costs 0.48, about half the healthy reward) ``+ 1`` per step that does not end fallen.
- Termination: the trunk below ``min_height`` (``MIN_HEIGHT`` on the plane, plus
  ``TERRAIN_RISE`` when starting on the patch) or tilted past 60 deg, or a non-finite
  state.
- Reset: the standing pose at the patch's centre (``on_terrain``, default) or at the
  origin of the plane, joints turned by up to 0.05 rad, velocities of std 0.05, the
  trunk moved vertically until the lowest foot touches the ground (trunk at 0.33-0.34
  m on the plane, 0.42-0.43 m on the patch); the soft servos then give, and it
  stands at 0.322 m (0.390 m on the patch).
- dt = 20 ms: 2 simulator steps of 10 ms (the 50 Hz policy rate of Unitree's and
  Playground's Go2 tasks; ``go2_stand``'s step).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxsim.envs.locomotion import LeggedWalk, split_shaping_options

# m, trunk height below which the robot has fallen. Measured (float32, zero action
# unless said, 2 s): standing on the plane 0.322 (0.390 on the patch); the deepest
# full-action crouch (thigh +1, calf -1) 0.277 (0.349 on the patch); collapsed on its
# belly (servos weakened to kp = 2) 0.101 (0.169 on the patch); lying on its side
# 0.158, on its back 0.072 (these the tilt test catches too).
MIN_HEIGHT = 0.2
TERRAIN_RISE = 0.05  # m, the patch's lowest ground above the plane (bumps reach 0.10)


class Go2Terrain(LeggedWalk):
    """Walk the Go2 forward (+x) over bumps without falling (module docstring)."""

    def __init__(self, timestep: float = 0.01, n_frames: int = 2, on_terrain: bool = True, dtype=jnp.float32,
                 action_scale: float = 0.25, forward_reward_weight: float = 1.0, ctrl_cost_weight: float = 0.04,
                 healthy_reward: float = 1.0, min_height: float | None = None, max_tilt_deg: float = 60.0,
                 joint_noise: float = 0.05, velocity_noise: float = 0.05, **options):
        """Args:
          timestep: s, the simulator step.
          n_frames: simulator steps per env step.
          on_terrain: start on the bump patch (x = ``GO2_TERRAIN_X``), else on the
            plane at the origin (the patch is in the model either way, 2 m ahead).
          dtype: the model's float dtype.
          action_scale: rad, the servo target offset of a full action.
          forward_reward_weight: reward per m/s of the trunk's x velocity.
          ctrl_cost_weight: cost per unit of ``sum(action^2)``.
          healthy_reward: reward per env step that does not end fallen.
          min_height: m, trunk height below which the robot has fallen; None:
            ``MIN_HEIGHT``, plus ``TERRAIN_RISE`` with ``on_terrain``.
          max_tilt_deg: deg, trunk tilt beyond which the robot has fallen.
          joint_noise: rad, half width of the reset's joint offsets.
          velocity_noise: std of the reset's velocities (m/s, rad/s).
          **options: the optional observation blocks and reward shapes of
            ``jaxsim.envs.locomotion.LeggedWalk`` (``SHAPING_OPTIONS`` there; all off
            by default), and ``jaxsim.robots.go2_standing`` options (``kp``, ``kv``,
            ``max_contacts``, ``max_hull_vertices``, ``contact``, ...).
        """
        from jaxsim import robots
        shaping, options = split_shaping_options(options)
        sys, target = robots.go2_standing(timestep, terrain=True, dtype=dtype, **options)
        q = np.array(sys.qpos0)
        q[7:] = target  # the 12 hinges, in actuator order
        # any height: reset lowers the robot onto the ground
        q[:3] = [robots.GO2_TERRAIN_X, 0.0, 0.5] if on_terrain else [0.0, 0.0, 0.42]
        if min_height is None:
            min_height = MIN_HEIGHT + (TERRAIN_RISE if on_terrain else 0.0)
        super().__init__(sys, n_frames, q, target, action_scale=action_scale,
                         forward_reward_weight=forward_reward_weight, ctrl_cost_weight=ctrl_cost_weight,
                         healthy_reward=healthy_reward, min_height=min_height, max_tilt_deg=max_tilt_deg,
                         joint_noise=joint_noise, velocity_noise=velocity_noise, **shaping)
