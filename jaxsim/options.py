"""The keyword options that build a Model, by name.

``ModelBuilder``'s scene-wide options (``timestep``, ``gravity``, ``solver_iterations``,
``contact``, ...) and the parameters of the selected contact model (the fields of
``jaxsim.contact.get(name).params``: ``contact_rate``, ``contact_relaxation``,
``solver``, ...) are keyword options of the builder, of the loaders
(``load_mjcf(path, **options)``, ``load_urdf``) and of the built-in scenes. This module
lists them, read from the builder's signature and the models' ``params`` so that a new
or renamed option is known everywhere at once, checks names against them, and turns
text into their values: the command line's ``--set KEY=VALUE`` and the MJCF custom
elements ``<text name="jaxsim:KEY" .../>`` / ``<numeric name="jaxsim:KEY" .../>``.

The type of a value follows the option's default: a boolean (``true`` / ``false``), an
integer, a finite number, a vector of finite numbers (``0,0,-9.81``) or a string
(checked against the option's choices where it declares them). Former names of
options (``jaxsim.names``) are known as the options they now name.
"""

from __future__ import annotations

import dataclasses
import inspect
import math

import numpy as np

from jaxsim import contact as contact_models
from jaxsim.builder import ModelBuilder, ModelError
from jaxsim.names import current_name

_TRUE, _FALSE = ("true", "yes", "on", "1"), ("false", "no", "off", "0")


def scene_options() -> dict:
    """``ModelBuilder``'s scene-wide keyword options and their defaults."""
    params = inspect.signature(ModelBuilder.__init__).parameters.values()
    return {p.name: p.default for p in params if p.kind == p.KEYWORD_ONLY}


def default_contact() -> str:
    """The contact model a Model gets when none is named."""
    return scene_options()["contact"]


def contact_params(contact: str) -> dict:
    """The parameters of contact model ``contact``: name -> ``dataclasses.Field``.

    Raises:
      ModelError: ``contact`` names no registered model.
    """
    if contact not in contact_models.MODELS:
        raise ModelError(f"contact must name a contact model, one of {sorted(contact_models.MODELS)}; "
                         f"got {contact!r}")
    return {f.name: f for f in dataclasses.fields(contact_models.get(contact).params)}


def all_contact_params() -> dict:
    """Every registered model's parameters: name -> (field, names of the models having it)."""
    out: dict = {}
    for model in sorted(contact_models.MODELS):
        for name, f in contact_params(model).items():
            out.setdefault(name, (f, []))[1].append(model)
    return out


def allowed(contact: str | None) -> str:
    """The allowed option names, for error messages: the scene options and the
    parameters of contact model ``contact`` (None: of every model)."""
    scene = ", ".join(scene_options())
    if contact is None:
        params = ", ".join(sorted(all_contact_params()))
        return f"scene options: {scene}; contact-model parameters (each model has its own): {params}"
    params = ", ".join(contact_params(contact)) or "none"
    return f"scene options: {scene}; parameters of contact model {contact!r}: {params}"


def check_names(names, contact: str) -> None:
    """Raise ``ModelError`` naming the first of ``names`` that is neither a scene
    option nor a parameter of contact model ``contact`` (nor a former name of one),
    and the allowed names."""
    known = set(scene_options()) | set(contact_params(contact))
    for name in names:
        if current_name(name) not in known:
            raise ModelError(f"unknown option {name!r}; {allowed(contact)}")


def _spec(key: str, contact: str | None):
    """(default, choices) of option ``key``: a scene option, else a parameter of
    ``contact`` (None: of any model; its choices are then left to the model's check)."""
    scene, now = scene_options(), current_name(key)
    if now in scene:
        return scene[now], (tuple(sorted(contact_models.MODELS)) if now == "contact" else None)
    if contact is None:
        f = all_contact_params().get(now, (None,))[0]
        if f is not None:
            return f.default, None
    else:
        f = contact_params(contact).get(now)
    if f is None:
        raise ModelError(f"unknown option {key!r}; {allowed(contact)}")
    return f.default, f.metadata.get("choices")


def _number(key: str, text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise ModelError(f"{key} must be a number, got {text!r}") from None
    if not math.isfinite(x):
        raise ModelError(f"{key} must be a finite number, got {text!r}")
    return x


def parse(key: str, text: str, contact: str | None = None):
    """The value of option ``key`` written as text, typed by the option's default.

    Args:
      key: a scene option or a parameter of contact model ``contact``.
      text: ``true`` / ``false`` for a boolean option; an integer; a number; numbers
        separated by commas (or spaces) for a vector (``0,0,-9.81``); a name for a
        string option (one of its choices where it has them).
      contact: the contact model whose parameters are known; None: any model's.

    Raises:
      ModelError: an unknown ``key`` (naming the allowed ones) or a value of the wrong
        type (naming the expected one).
    """
    default, choices = _spec(key, contact)
    t = text.strip()
    if isinstance(default, bool):
        if t.lower() in _TRUE + _FALSE:
            return t.lower() in _TRUE
        raise ModelError(f"{key} must be true or false, got {text!r}")
    if isinstance(default, str):
        if choices is not None and t not in choices:
            raise ModelError(f"{key} must be one of {list(choices)}, got {text!r}")
        return t
    if isinstance(default, (int, np.integer)):
        try:
            return int(t)
        except ValueError:
            x = _number(key, t)
            if not x.is_integer():
                raise ModelError(f"{key} must be an integer, got {text!r}") from None
            return int(x)
    if np.ndim(default) == 1:
        parts = t.replace(",", " ").split()
        if len(parts) != len(default):
            raise ModelError(f"{key} must be {len(default)} numbers separated by commas, got {text!r}")
        return tuple(_number(key, p) for p in parts)
    return _number(key, t)


def from_numbers(key: str, data, contact: str | None = None):
    """The value of option ``key`` from an array of numbers (an MJCF custom numeric),
    typed by the option's default as in :func:`parse`: one number for a scalar (0 or
    1 for a boolean, integral for an integer), as many as the vector for a vector.

    Raises:
      ModelError: an unknown ``key``, a string option, or the wrong count or kind of
        numbers.
    """
    default, _ = _spec(key, contact)
    a = np.asarray(data, np.float64).reshape(-1)
    if isinstance(default, str):
        raise ModelError(f"{key} is a name, not a number")
    if not np.all(np.isfinite(a)):
        raise ModelError(f"{key} must be finite, got {a.tolist()}")
    if np.ndim(default) == 1:
        if a.size != len(default):
            raise ModelError(f"{key} must be {len(default)} numbers, got {a.tolist()}")
        return tuple(float(x) for x in a)
    if a.size != 1:
        raise ModelError(f"{key} must be one number, got {a.tolist()}")
    x = float(a[0])
    if isinstance(default, bool):
        if x not in (0.0, 1.0):
            raise ModelError(f"{key} must be 0 or 1 (false or true), got {x:g}")
        return x == 1.0
    if isinstance(default, (int, np.integer)):
        if not x.is_integer():
            raise ModelError(f"{key} must be an integer, got {x:g}")
        return int(x)
    return x


def _value(default) -> str:
    if isinstance(default, str):
        return f"`{default!r}`".replace("'", '"')
    if isinstance(default, bool):
        return f"`{str(default).lower()}`"
    if np.ndim(default):
        return "`" + ", ".join(f"{x:g}" for x in default) + "`"
    return f"`{default:g}`" if isinstance(default, float) else f"`{default}`"


def _units_and_meaning(doc: str) -> tuple[str, str]:
    """A contact-model parameter's doc, ``"units, meaning"`` where it starts with its
    units (``param``'s convention), split in two."""
    head, sep, rest = doc.partition(", ")
    if sep and (head in ("s", "m", "m/s", "1/s", "N/m", "N s/m") or head.startswith("m/s (")):
        return head, rest
    return "", doc


def markdown_table() -> str:
    """Every option with its units, default and meaning, as Markdown: the scene-wide
    options of ``ModelBuilder`` (``jaxsim.builder.SCENE_OPTIONS``), then each contact
    model that ships with jaxsim (the ``param`` metadata of its ``params``). The README's
    option table is this text (``python -m jaxsim.options`` prints it)."""
    from jaxsim.builder import SCENE_OPTIONS

    rows = ["| option | applies to | units | default | meaning |", "|---|---|---|---|---|"]
    for name, default in scene_options().items():
        units, meaning = SCENE_OPTIONS[name]
        rows.append(f"| `{name}` | scene | {units} | {_value(default)} | {meaning} |")
    for model in contact_models.BUILTIN:
        for name, f in contact_params(model).items():
            units, meaning = _units_and_meaning(f.metadata["doc"])
            rows.append(f"| `{name}` | `{model}` | {units} | {_value(f.default)} | {meaning} |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(markdown_table(), end="")
