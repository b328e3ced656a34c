"""Every notebook in notebooks/ runs top to bottom without error (nbclient, a fresh
python3 kernel, CPU) in under 5 minutes, and is committed without outputs. The
training notebook trains the cart-pole with Brax's PPO for a small budget (35-40 s on
two cores) and checks that the evaluation reward rose."""

import pathlib
import time

import pytest

nbclient = pytest.importorskip("nbclient")
nbformat = pytest.importorskip("nbformat")

NOTEBOOKS = sorted((pathlib.Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))


def test_the_four_notebooks_are_there_without_outputs():
    assert [p.name for p in NOTEBOOKS] == ["01_quickstart.ipynb", "02_batched_rollouts.ipynb",
                                           "03_gradients.ipynb", "04_training.ipynb"]
    for path in NOTEBOOKS:
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None, path.name


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs(path):
    book = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(book, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(path.parent)}})
    t0 = time.perf_counter()
    client.execute()  # raises CellExecutionError naming the cell on any error
    elapsed = time.perf_counter() - t0
    assert elapsed < 300, f"{path.name} took {elapsed:.0f} s"
    errors = [o for c in book.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors
