"""Quadruped walk: jaxsim's implicit-PD horse-like quadruped (``jaxsim.quadruped``: 23
bodies, 14 ball joints and 8 hinges, 50 position servos) walking forward on a floor at
implicit PD's large time step. The robot is jaxsim's own (``jaxsim/assets/quadruped.xml``
is the same robot for MuJoCo; no MuJoCo or Brax task uses it); the task is that of
Brax's ``ant`` and the DeepMind Control Suite's ``quadruped-walk`` (go forward, stay
up), with the servo-target actions of MuJoCo Playground's legged-robot tasks.

- Action (50) in [-1, 1]: servo target offsets from the standing pose (all targets 0,
  legs straight down), ``action_scale`` rad at full action (default 0.3: three times the
  upper-leg swing of ``quadruped.gait_ctrl``'s walk, 0.1 rad, so a policy can find
  longer strides; the range is not a safe one: every servo held at +1, or every one
  at -1, throws the robot over within 2 s).
- Observation (160 = 10 + 3 x 50): trunk height, gravity in the trunk frame (3), servo
  positions relative to standing (50), trunk linear and angular velocity in the trunk
  frame (3 + 3), servo velocities (50), last action (50); with ``gait_period`` set, a
  gait clock (2) and with ``heading_observation`` the walking direction (3) last;
  ``jaxsim.envs.locomotion``.
- Reward: trunk x velocity (m/s) ``- 0.01 sum(action^2)`` (a full action on every servo
  costs 0.5, half the healthy reward) ``+ 1`` per step that does not end fallen.
- Termination: the trunk (the front trunk box, the root body) below ``MIN_HEIGHT`` =
  0.5 m or tilted past 60 deg, or a non-finite state.
- Reset: the standing pose, servo joints turned by up to 0.05 rad, velocities of std
  0.05, the trunk moved vertically until the lowest hoof touches the floor (0.85 m
  without noise, up to 0.87 m with it: turning the trunk's middle joint lowers a rear
  hoof); it stands at 0.849 m.
- dt = 50 ms (one implicit-PD step; the robot stands and walks there, explicit PD
  diverges: ``tests/test_quadruped.py``).
"""

from __future__ import annotations

import jax.numpy as jnp

from jaxsim.envs.locomotion import LeggedWalk, split_shaping_options

# m, trunk centre height below which the robot has fallen. Measured (float32, dt = 50
# ms, 2 s): standing at zero action 0.849; knees bent at full action (lower legs +1,
# cannons and upper legs' y servos -1) 0.810; lying on its side 0.167, on its back
# 0.299 (the neck props it up), both also past the tilt limit.
MIN_HEIGHT = 0.5


class QuadrupedWalk(LeggedWalk):
    """Walk the implicit-PD quadruped forward (+x) without falling (module docstring)."""

    def __init__(self, timestep: float = 0.05, dtype=jnp.float32, action_scale: float = 0.3,
                 forward_reward_weight: float = 1.0, ctrl_cost_weight: float = 0.01, healthy_reward: float = 1.0,
                 min_height: float = MIN_HEIGHT, max_tilt_deg: float = 60.0, joint_noise: float = 0.05,
                 velocity_noise: float = 0.05, **options):
        """Args:
          timestep: s, the simulator step and the env step (n_frames = 1).
          dtype: the model's float dtype.
          action_scale: rad, the servo target offset of a full action.
          forward_reward_weight: reward per m/s of the trunk's x velocity.
          ctrl_cost_weight: cost per unit of ``sum(action^2)``.
          healthy_reward: reward per step that does not end fallen.
          min_height: m, trunk height below which the robot has fallen.
          max_tilt_deg: deg, trunk tilt beyond which the robot has fallen.
          joint_noise: rad, half width of the reset's joint offsets.
          velocity_noise: std of the reset's velocities (m/s, rad/s).
          **options: the optional observation blocks and reward shapes of
            ``jaxsim.envs.locomotion.LeggedWalk`` (``SHAPING_OPTIONS`` there; all off
            by default), and ``jaxsim.quadruped.build`` / ModelBuilder options
            (``contact``, ``implicit_pd``, ...).
        """
        from jaxsim import quadruped
        shaping, options = split_shaping_options(options)
        sys = quadruped.build(timestep, dtype=dtype, **options)
        # built standing: legs straight down, every servo target 0 (jaxsim.quadruped)
        super().__init__(sys, 1, sys.qpos0, jnp.zeros((sys.nu,), dtype), action_scale=action_scale,
                         forward_reward_weight=forward_reward_weight, ctrl_cost_weight=ctrl_cost_weight,
                         healthy_reward=healthy_reward, min_height=min_height, max_tilt_deg=max_tilt_deg,
                         joint_noise=joint_noise, velocity_noise=velocity_noise, **shaping)
