"""Open a viewer file in headless Chromium: console errors and a screenshot.

Used by the tests and by ``jaxsim`` users who want a PNG of a viewer file without a
screen. Needs Python's ``playwright`` package and a Chromium binary (Debian's
``chromium``; Playwright's own browser download is not needed).
"""

from __future__ import annotations

import os
import shutil

# flags for a root, screenless, offline machine: no sandbox, software WebGL
# (SwiftShader: Chromium only falls back to it when told), no background requests
CHROMIUM_FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--use-angle=swiftshader",
                  "--enable-unsafe-swiftshader", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync")

# plotly.js + WebGL without a GPU log these performance hints; they are not errors
_BENIGN = ("GPU stall due to ReadPixels", "willReadFrequently")


def find_chromium() -> str | None:
    """Path of a Chromium/Chrome binary (``$CHROMIUM`` first), or None."""
    for name in (os.environ.get("CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and (path := shutil.which(name)):
            return path
    return None


def render(path, png: str | None = None, *, frame: int | str | None = None, play_s: float = 0.0,
           width: int = 1000, height: int = 700, chromium: str | None = None) -> dict:
    """Load the viewer file ``path``, optionally jump to ``frame`` or press Play for
    ``play_s`` seconds, and screenshot the page.

    Returns:
      dict with ``errors`` (console errors and uncaught exceptions, list of str),
      ``png`` (screenshot bytes), ``scene_box`` (x, y, w, h) px of the 3-D scene on
      the screenshot, and ``slider`` (the slider's active step after all that).
    """
    from playwright.sync_api import sync_playwright

    chromium = chromium or find_chromium()
    if chromium is None:
        raise FileNotFoundError("no Chromium found: apt-get install chromium (or set $CHROMIUM)")
    errors = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=list(CHROMIUM_FLAGS), headless=True)
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.on("console", lambda m: m.type == "error" and not any(b in m.text for b in _BENIGN)
                    and errors.append(m.text))
            page.on("pageerror", lambda e: errors.append(f"uncaught: {e}"))
            page.goto("file://" + os.path.abspath(os.fspath(path)))
            page.wait_for_selector(".js-plotly-plot .gl-container canvas", timeout=60_000)
            gd = "document.querySelector('.js-plotly-plot')"
            if frame is not None:
                page.evaluate(f"Plotly.animate({gd}, [{str(frame)!r}], {{mode: 'immediate', "
                              "frame: {duration: 0, redraw: true}, transition: {duration: 0}})")
            if play_s > 0:
                page.get_by_text("Play", exact=True).click()
                page.wait_for_timeout(int(1000 * play_s))
            page.wait_for_timeout(1500)  # let WebGL draw
            box = page.locator(".js-plotly-plot .gl-container canvas").first.bounding_box()
            shot = page.screenshot(path=png)
            slider = page.evaluate(f"({gd})._fullLayout.sliders[0].active")
        finally:
            browser.close()
    return dict(errors=errors, png=shot, slider=slider,
                scene_box=tuple(int(round(box[k])) for k in ("x", "y", "width", "height")))
