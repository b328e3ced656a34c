"""Model loaders (MJCF and URDF through MuJoCo's compiler)."""

from jaxsim.io.mjcf import from_mjmodel, load_mjcf, load_urdf

__all__ = ["load_mjcf", "load_urdf", "from_mjmodel"]
