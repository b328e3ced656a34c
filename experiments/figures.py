"""The pictures of the documentation's viewer page (docs/pages/viewer.md): gymnasium's
humanoid falling for 2 s (float32), its viewer file rendered in headless Chromium at
the landing, and the contact plots.

    python experiments/figures.py   # writes docs/pages/images/viewer_humanoid.png,
                                    # plots_humanoid.png and /tmp/humanoid_fall.html
"""

import os

import gymnasium
import jax
import jax.numpy as jnp
import matplotlib
import numpy as np

matplotlib.use("Agg")

import jaxsim  # noqa: E402
from jaxsim import viz  # noqa: E402
from jaxsim.io import load_mjcf  # noqa: E402
from jaxsim.viz import browser  # noqa: E402

OUT = os.path.join(os.path.dirname(__file__), os.pardir, "docs", "pages", "images")


def main():
    path = os.path.join(os.path.dirname(gymnasium.__file__), "envs/mujoco/assets/humanoid.xml")
    model = load_mjcf(path, max_contacts=16)
    steps = int(round(2.0 / float(model.opt.timestep)))
    s0 = jaxsim.make_state(model, v=jnp.zeros(model.nv, model.dtype).at[4].set(2.0))  # tips forwards
    _, traj = jax.jit(jaxsim.rollout)(model, s0, jnp.zeros((steps, model.nu), model.dtype))

    fig = viz.animate(model, traj, contacts=True, forces=True, title="gymnasium humanoid, 2 s, jaxsim")
    html = viz.save_html(fig, os.path.join("/tmp", "humanoid_fall.html"))
    # the frame with the largest total contact force: the landing, arrows visible
    shown = viz.viewer._frames(traj, None, 30, 600)[0]  # the steps the 30 fps frames show
    frame = int(np.argmax(np.abs(np.asarray(traj.contact.force_w)[shown, :, 2]).sum(1)))
    out = browser.render(html, os.path.join(OUT, "viewer_humanoid.png"), frame=frame, width=900, height=620)
    print("viewer:", html, f"{os.path.getsize(html) / 1e6:.1f} MB, console errors: {out['errors']}")

    figure = viz.plot_summary(model, traj)
    figure.savefig(os.path.join(OUT, "plots_humanoid.png"), dpi=90, bbox_inches="tight")
    print("wrote", os.path.join(OUT, "viewer_humanoid.png"), "and", os.path.join(OUT, "plots_humanoid.png"))


if __name__ == "__main__":
    main()
