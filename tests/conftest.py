"""Shared fixtures: float64 everywhere (reference tests need it), model file lists."""

import os

import jax
import pytest

jax.config.update("jax_enable_x64", True)


def gymnasium_dir():
    gymnasium = pytest.importorskip("gymnasium")
    return os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets")


def dm_control_dir():
    dm_control = pytest.importorskip("dm_control")
    return os.path.join(os.path.dirname(dm_control.__file__), "suite")


def reference_model_files():
    """(id, path) of every MJCF model shipped with gymnasium and dm_control's suite."""
    out = []
    for prefix, folder in (("gym", gymnasium_dir()), ("dmc", dm_control_dir())):
        for f in sorted(os.listdir(folder)):
            if f.endswith(".xml"):
                out.append((f"{prefix}/{f[:-4]}", os.path.join(folder, f)))
    return out


def example_robot_data_dir():
    """example-robot-data's ``robots`` folder (its URDFs use ``package://`` URIs)."""
    from jaxsim.robots import robot_file

    return robot_file("").rstrip(os.sep)


URDF_ROBOTS = {  # id: (path under example_robot_data_dir(), compile_urdf options)
    "urdf/solo12": ("solo_description/robots/solo12.urdf", {"floating_base": True}),
    "urdf/go2": ("go2_description/urdf/go2.urdf", {"floating_base": True}),
    "urdf/panda": ("panda_description/urdf/panda.urdf", {}),
}
