"""URDF loading: ``package://`` mesh URIs resolved, then MuJoCo's URDF importer.

MuJoCo's importer knows nothing of ROS packages and, by default, keeps only a mesh's
file name (``strippath``). ``resolve_urdf`` rewrites every mesh ``filename`` to an
absolute path and adds a ``<mujoco><compiler .../></mujoco>`` element, so MuJoCo
compiles the file as the robot's authors meant it.

A ``package://NAME/rest`` URI is looked up, first hit wins, in
  1. the ``package_dirs`` argument,
  2. the directories of the ``ROS_PACKAGE_PATH`` environment variable,
  3. the directories above the URDF file,
where a directory ``D`` holds package ``NAME`` if ``D`` itself is the package (its
``package.xml`` names ``NAME``, or ``D`` is called ``NAME``) or ``D/NAME`` is a
directory. ``file://`` URIs and relative paths are taken from the URDF's directory.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET

import numpy as np

from jaxsim.types import ModelError

ROS_PATH_VARIABLE = "ROS_PACKAGE_PATH"


def _package_name(directory: str) -> str | None:
    """The ``<name>`` of ``directory/package.xml``, or None."""
    manifest = os.path.join(directory, "package.xml")
    if not os.path.isfile(manifest):
        return None
    try:
        name = ET.parse(manifest).getroot().findtext("name")
    except ET.ParseError:
        return None
    return name.strip() if name else None


def _holds(directory: str, name: str) -> str | None:
    """The package ``name``'s directory if ``directory`` is it or contains it."""
    if not os.path.isdir(directory):
        return None
    if _package_name(directory) == name or os.path.basename(os.path.normpath(directory)) == name:
        return directory
    inner = os.path.join(directory, name)
    return inner if os.path.isdir(inner) else None


def search_dirs(urdf_path: str, package_dirs=()) -> list[str]:
    """Where ``package://`` URIs of ``urdf_path`` are looked up, in order."""
    env = [d for d in os.environ.get(ROS_PATH_VARIABLE, "").split(os.pathsep) if d]
    above, d = [], os.path.dirname(os.path.abspath(urdf_path))
    while True:
        above.append(d)
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    return [os.fspath(p) for p in package_dirs] + env + above


def resolve_uri(uri: str, urdf_path: str, package_dirs=()) -> str:
    """Absolute path of a mesh ``filename`` of ``urdf_path`` (module docstring)."""
    base = os.path.dirname(os.path.abspath(urdf_path))
    if uri.startswith("file://"):
        uri = uri[len("file://"):]
    if not uri.startswith("package://"):
        return uri if os.path.isabs(uri) else os.path.normpath(os.path.join(base, uri))
    name, _, rest = uri[len("package://"):].partition("/")
    dirs = search_dirs(urdf_path, package_dirs)
    for d in dirs:
        root = _holds(d, name)
        if root is not None and os.path.exists(os.path.join(root, rest)):
            return os.path.join(root, rest)
    raise ModelError(f"{urdf_path}: cannot resolve {uri!r}: no package {name!r} holding {rest!r} in "
                     f"package_dirs, ${ROS_PATH_VARIABLE} or the directories above the file "
                     f"(searched {len(dirs)}: {dirs[:4]}{' ...' if len(dirs) > 4 else ''})")


def resolve_urdf(path: str, package_dirs=(), balance_inertia: bool = False) -> str:
    """The URDF text of ``path`` with absolute mesh paths and MuJoCo's compiler
    setting ``strippath="false"``; with ``balance_inertia`` every inertia made
    valid (``balance``: MuJoCo's ``balanceinertia`` only fixes the triangle
    inequality, not a tensor with a zero or negative principal moment)."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise ModelError(f"model file not found: {path}")
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        raise ModelError(f"{path}: not valid XML: {e}") from None
    if root.tag != "robot":
        raise ModelError(f"{path}: the root element is <{root.tag}>, a URDF's is <robot>")
    if isinstance(package_dirs, (str, os.PathLike)):
        package_dirs = [package_dirs]
    for mesh in root.iter("mesh"):
        if "filename" in mesh.attrib:
            mesh.set("filename", resolve_uri(mesh.get("filename"), path, package_dirs))
    ext = root.find("mujoco")
    if ext is None:
        ext = ET.SubElement(root, "mujoco")
    compiler = ext.find("compiler")
    if compiler is None:
        compiler = ET.SubElement(ext, "compiler")
    compiler.set("strippath", "false")
    compiler.attrib.pop("meshdir", None)  # paths are absolute now
    if balance_inertia:
        for inertia in root.iter("inertia"):
            balance(inertia)
    return ET.tostring(root, encoding="unicode")


INERTIA_KEYS = ("ixx", "iyy", "izz", "ixy", "ixz", "iyz")


def balance(inertia: ET.Element) -> None:
    """Make one URDF ``<inertia>`` a valid rigid-body inertia in place: principal
    moments below 1e-6 of the largest raised to it (none negative), then the
    triangle inequality restored by raising the two smaller moments equally
    (``a + b >= c``, the rotation kept). A valid inertia is left unchanged."""
    xx, yy, zz, xy, xz, yz = (float(inertia.get(k, "0")) for k in INERTIA_KEYS)
    tensor = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
    moments, axes = np.linalg.eigh(tensor)  # ascending
    if moments[-1] <= 0:
        return  # massless link: MuJoCo fuses or ignores it
    fixed = np.maximum(moments, 1e-6 * moments[-1])
    gap = fixed[2] - fixed[0] - fixed[1]
    if gap > 0:
        fixed[:2] += 0.5 * gap
    if np.allclose(fixed, moments, rtol=1e-12, atol=0.0):
        return
    tensor = (axes * fixed) @ axes.T
    for key, value in zip(INERTIA_KEYS, (tensor[0, 0], tensor[1, 1], tensor[2, 2], tensor[0, 1], tensor[0, 2],
                                         tensor[1, 2])):
        inertia.set(key, repr(float(value)))
