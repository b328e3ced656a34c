"""MkDocs hook: tables generated at build time.

Placeholders in the pages (HTML comments, so a page read as plain Markdown still
makes sense) are replaced by tables built from the code and the measurements:

  ``<!-- params: MODEL -->``
      the parameters of contact model MODEL, from the ``param()`` metadata of
      ``dataclasses.fields(jaxsim.contact.get(MODEL).params)``;
  ``<!-- models -->``
      one line per registered contact model (``jaxsim.contact.BUILTIN``);
  ``<!-- results: FILE -->``
      a benchmark table from ``experiments/results/FILE`` (``bench_step*.json``,
      ``bench_dynamics.json``, ``bench_grad.json``, ``bench_collision.json``,
      ``bench_qp*.json``), dated by the run's own ``machine.date``.

The options page keeps its table as text (``tests/test_options.py`` compares it
with ``jaxsim.options.markdown_table()``); the build checks it too, so a stale
table fails ``mkdocs build --strict``.

Any placeholder that cannot be rendered logs a warning: under ``--strict`` the
build fails instead of publishing a page with a hole in it.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import pathlib
import re
import sys

log = logging.getLogger("mkdocs.hooks.jaxsim")

ROOT = pathlib.Path(__file__).resolve().parent.parent
RESULTS = ROOT / "experiments" / "results"
if str(ROOT) not in sys.path:  # the package of this checkout, installed or not
    sys.path.insert(0, str(ROOT))

PLACEHOLDER = re.compile(r"<!--\s*(params|results|models)\s*(?::\s*([^>]*?))?\s*-->")
OPTIONS_START, OPTIONS_END = "<!-- options-table:start -->\n", "<!-- options-table:end -->"

# one line per model for the overview table (what it is); the parameters come from the code
MODEL_SUMMARY = {
    "relaxed": "relaxed point contacts with momentum-level penetration correction (the default)",
    "rigid": "the same point contacts with no relaxation and no position correction",
    "penalty": "every pair a spring-damper with regularized friction; joint limits as rigid rows",
    "volume": "one wrench per intersection volume of two polyhedra, with a centre of pressure",
    "springhead": "constraints at the contact polygon's corners, restitution above an impact speed",
    "cone": "rigid contact with a choice of friction law: exact Coulomb, Anitescu-Tasora or Nakaoka",
}

# scenes recorded under a name that later changed meaning
RENAMED_SCENES = {
    "bench_step_springhead.json": {"boxes8:springhead": "boxes8:springhead/qp",
                                   "humanoid:springhead": "humanoid:springhead/qp"},
}

UNITS = ("s", "m", "m/s", "1/s", "N/m", "N s/m")


def _value(x) -> str:
    if isinstance(x, str):
        return f'`"{x}"`'
    if isinstance(x, bool):
        return f"`{str(x).lower()}`"
    if isinstance(x, float):
        return f"`{x:g}`"
    return f"`{x}`"


def _units_and_meaning(doc: str) -> tuple[str, str]:
    head, sep, rest = doc.partition(", ")
    if sep and (head in UNITS or head.startswith("m/s (")):
        return head, rest
    return "", doc


def params_table(model: str) -> str:
    import jaxsim.contact

    if model not in jaxsim.contact.MODELS:
        raise ValueError(f"no contact model {model!r}; registered: {sorted(jaxsim.contact.MODELS)}")
    fields = dataclasses.fields(jaxsim.contact.get(model).params)
    if not fields:
        return (f"The `{model}` model has no parameters of its own: the scene options "
                "([Options](../options.md)) are all it takes.\n")
    rows = ["| parameter | units | default | allowed | kind | meaning |", "|---|---|---|---|---|---|"]
    for f in fields:
        meta = f.metadata
        units, meaning = _units_and_meaning(meta.get("doc", ""))
        if meta.get("choices"):
            allowed = ", ".join(_value(c) for c in meta["choices"])
        elif meta.get("minimum") is not None:
            allowed = f">= {meta['minimum']:g}"
        else:
            allowed = "any finite"
        kind = "static" if meta.get("static") else "array"
        default = meta.get("default", f.default)
        rows.append(f"| `{f.name}` | {units} | {_value(default)} | {allowed} | {kind} | {meaning} |")
    note = ("\n*Generated from the model's `params` declaration. \"array\" parameters are "
            "`Model` leaves: they can differ across a batch of models and be differentiated; "
            "\"static\" ones are fixed when the step is compiled.*\n")
    return "\n".join(rows) + "\n" + note


def models_table() -> str:
    import jaxsim.contact

    rows = ["| `contact=` | what it is | parameters |", "|---|---|---|"]
    for name in jaxsim.contact.BUILTIN:
        if name not in MODEL_SUMMARY:
            raise ValueError(f"contact model {name!r} has no summary in docs/hooks.py MODEL_SUMMARY")
        names = [f.name for f in dataclasses.fields(jaxsim.contact.get(name).params)]
        params = ", ".join(f"`{n}`" for n in names) or "none"
        rows.append(f"| [`{name}`]({name}.md) | {MODEL_SUMMARY[name]} | {params} |")
    return "\n".join(rows) + "\n"


# ---------------------------------------------------------------- benchmark tables

def _n(x, digits=3) -> str:
    """A rate or ratio for a table: thousands separated, about ``digits`` significant."""
    if x is None:
        return ""
    x = float(x)
    if x >= 1000:
        return f"{x:,.0f}"
    if x >= 100:
        return f"{x:.0f}"
    return f"{x:.{digits}g}"


def _ratio(x) -> str:
    if x is None:
        return ""
    x = float(x)
    return f"{x:.1f}" if x >= 10 else f"{x:.2f}" if x >= 0.1 else f"{x:.2g}"


def _caption(data: dict, path: pathlib.Path, extra: str = "") -> str:
    m = data.get("machine", {})
    date = m.get("date", "")[:10]
    if not date:
        raise ValueError(f"{path.name} records no machine.date")
    kinds = sorted(set(d.split(":")[0] for d in m.get("jax_devices") or []))
    if kinds in ([], ["cpu"]):
        where = f"a {m['cpu_count']}-core CPU" if m.get("cpu_count") else "a CPU"
    else:
        where = ", ".join(m.get("jax_devices"))
    versions = ", ".join(f"{name} {m[key]}" for key, name in (("jax", "jax"), ("mujoco_mjx", "MJX")) if m.get(key))
    text = f"Measured {date} on {where}" + (f" ({versions})" if versions else "")
    if extra:
        text += f"; {extra}"
    return f"\n*{text}; `experiments/results/{path.name}`.*\n"


def _step_table(data: dict, path: pathlib.Path) -> str:
    rename = RENAMED_SCENES.get(path.name, {})
    results = data["results"]
    unchunked = any("jaxsim_unchunked_steps_per_s" in r for r in results)
    has_c = any(r.get("mujoco_c") for r in results)
    has_it = bool(data.get("iterations"))
    has_rounds = any("jaxsim_over_mjx_rounds" in r for r in results)
    head = ["scene", "batch", "jaxsim steps/s"] + (["jaxsim, one vmap"] if unchunked else []) + \
        ["MJX steps/s", "jaxsim / MJX"] + (["jaxsim / MJX, median of alternating rounds"] if has_rounds else []) + \
        (["MuJoCo C steps/s"] if has_c else []) + \
        (["jaxsim iterations / step (mean / max)"] if has_it else [])
    rows = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    seen = set()
    for r in results:
        scene = r["scene"]
        mjx = r.get("mjx") or {}
        c = r.get("mujoco_c") or {}
        it = ""
        if scene not in seen:
            seen.add(scene)
            i = ((data.get("iterations") or {}).get(scene) or {}).get("jaxsim", {}).get("iterations")
            if i:
                it = f"{i['mean']:.3g} / {i['max']}"
        cells = [f"{rename.get(scene, scene)}", str(r["batch"]), _n(r["jaxsim"].get("steps_per_s"))]
        if unchunked:
            cells.append(_n(r.get("jaxsim_unchunked_steps_per_s")))
        cells += [_n(mjx.get("steps_per_s")) or "n/a", _ratio(r.get("jaxsim_over_mjx"))]
        if has_rounds:
            cells.append(_ratio(r.get("jaxsim_over_mjx_rounds")))
        if has_c:
            cells.append(_n(c.get("steps_per_s")))
        if has_it:
            cells.append(it)
        rows.append("| " + " | ".join(cells) + " |")
    args = data.get("args", {})
    extra = f"float32, {args.get('steps', 10)} steps per timed call"
    if has_rounds:
        extra += f"; {args.get('rounds')} alternating rounds of at least {args.get('min_time')} s per side"
    if args.get("iter_steps"):
        extra += f"; iterations over {args['iter_steps']} steps x {args.get('iter_batch', 8)} envs"
    return "\n".join(rows) + "\n" + _caption(data, path, extra)


def _dynamics_table(data: dict, path: pathlib.Path) -> str:
    rows = ["| model | batch | jaxsim CRBA evals/s | jaxsim ABA evals/s | MJX evals/s | CRBA / MJX | ABA / MJX |",
            "|---|---:|---:|---:|---:|---:|---:|"]
    for r in data["results"]:
        rows.append(f"| {r['model']} | {r['batch']} | {_n(r['crba']['evals_per_s'])} | "
                    f"{_n(r['aba']['evals_per_s'])} | {_n(r['mjx']['evals_per_s'])} | "
                    f"{_ratio(r['crba_over_mjx'])} | {_ratio(r['aba_over_mjx'])} |")
    return "\n".join(rows) + "\n" + _caption(data, path, "float32, constraints disabled on both sides")


def _grad_table(data: dict, path: pathlib.Path) -> str:
    rows = ["| scene | batch | jaxsim forward ms | jaxsim grad ms | grad / forward | MJX forward ms | "
            "MJX grad ms | grad / forward | jaxsim grad / MJX grad |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in data["rows"]:
        j, m = r["jaxsim"], r["mjx"]
        rows.append(f"| {r['scene']} | {r['batch']} | {_n(1e3 * j['forward']['sec_per_call'])} | "
                    f"{_n(1e3 * j['grad']['sec_per_call'])} | {_ratio(j['grad_over_forward'])} | "
                    f"{_n(1e3 * m['forward']['sec_per_call'])} | {_n(1e3 * m['grad']['sec_per_call'])} | "
                    f"{_ratio(m['grad_over_forward'])} | {_ratio(r['jaxsim_grad_over_mjx_grad'])} |")
    steps = data.get("args", {}).get("steps", 100)
    return "\n".join(rows) + "\n" + _caption(data, path, f"float32, {steps}-step rollouts")


def _collision_table(data: dict, path: pathlib.Path) -> str:
    rows = ["| scene | batch | jaxsim evals/s | MJX evals/s | jaxsim / MJX |", "|---|---:|---:|---:|---:|"]
    for r in data["results"]:
        mjx = r.get("mjx") or {}
        ratio = r.get("jaxsim_over_mjx")
        rows.append(f"| {r['scene']} | {r['batch']} | {_n(r['jaxsim']['evals_per_s'])} | "
                    f"{_n(mjx.get('evals_per_s')) or 'n/a'} | {_ratio(ratio)} |")
    return "\n".join(rows) + "\n" + _caption(data, path, "float32, kinematics + collision per env")


def _qp_table(data: dict, path: pathlib.Path) -> str:
    rows = ["| scene | problems | n | iterations mean / p99 / max | natural-map residual median / p99 / max | "
            "objective gap max |", "|---|---:|---:|---:|---:|---:|"]
    for scene, r in data["scenes"].items():
        it, res = r["iterations"], r["natural_map_residual"]
        rows.append(f"| {scene} | {r['problems']} | {r['n']} | {it['mean']:.1f} / {it['p99']:.0f} / {it['max']} | "
                    f"{res['median']:.1e} / {res['p99']:.1e} / {res['max']:.1e} | "
                    f"{r['objective_gap']['max']:.1e} |")
    return "\n".join(rows) + "\n" + _caption(data, path, "float32 problems and solves")


def results_table(arg: str) -> str:
    name = arg.strip()
    path = RESULTS / name
    if not path.is_file():
        raise FileNotFoundError(f"no {path.relative_to(ROOT)}")
    data = json.loads(path.read_text())
    if name.startswith("bench_step"):
        return _step_table(data, path)
    if name.startswith("bench_dynamics"):
        return _dynamics_table(data, path)
    if name.startswith("bench_grad"):
        return _grad_table(data, path)
    if name.startswith("bench_collision"):
        return _collision_table(data, path)
    if name.startswith("bench_qp"):
        return _qp_table(data, path)
    raise ValueError(f"no table layout for {name}")


RENDER = {"params": params_table, "results": results_table, "models": lambda arg: models_table()}


def _check_options_table(markdown: str, src: str) -> None:
    from jaxsim.options import markdown_table

    if OPTIONS_START not in markdown or OPTIONS_END not in markdown:
        log.warning(f"{src}: the option table's markers are missing")
        return
    table = markdown[markdown.index(OPTIONS_START) + len(OPTIONS_START):markdown.index(OPTIONS_END)]
    if table != markdown_table():
        log.warning(f"{src}: the option table is stale: paste the output of `python -m jaxsim.options`")


# Rendered pages describe the software: a page that names the project's internal
# documents or its source papers by internal number fails the build (--strict).
INTERNAL = re.compile(r"\bSPEC\b|\b[Ss]eed \d{3}\b|\bthe seed's\b|SPEC\.md|DESIGN\.md|\.\./shared/")


def on_page_content(html: str, page, config, files) -> str:
    text = re.sub(r"<[^>]+>", "", html)
    for m in INTERNAL.finditer(text):
        context = " ".join(text[max(0, m.start() - 60):m.end() + 40].split())
        log.warning(f"{page.file.src_uri}: refers to project internals: ...{context}...")
    return html


def on_page_markdown(markdown: str, page, config, files) -> str:
    src = page.file.src_uri

    def replace(m: re.Match) -> str:
        kind, arg = m.group(1), (m.group(2) or "")
        try:
            return RENDER[kind](arg)
        except Exception as e:  # noqa: BLE001 - reported as a build warning
            log.warning(f"{src}: cannot render {m.group(0)}: {type(e).__name__}: {e}")
            return f"*(table not available: {e})*"

    if src == "options.md":
        _check_options_table(markdown, src)
    return PLACEHOLDER.sub(replace, markdown)
