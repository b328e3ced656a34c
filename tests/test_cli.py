"""The README's main command (``python -m jaxsim``): a short run of each built-in
contact scene, and bad input rejected with a one-line error."""

import pytest

from jaxsim.__main__ import main


@pytest.mark.parametrize("scene", ["cube", "pendulum"])
def test_demo_runs_and_reports(scene, capsys):
    assert main(["--scene", scene, "--duration", "0.6"]) == 0
    out = capsys.readouterr().out
    for line in ("steps/s", "max penetration", "contact QP", "non-finite values: none"):
        assert line in out


@pytest.mark.parametrize("args", [["--duration", "-1"], ["--dt", "0"], ["--scene", "nope"]])
def test_bad_arguments_exit_nonzero(args, capsys):
    with pytest.raises(SystemExit) as e:
        main(args)
    assert e.value.code != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("jaxsim: error:")
