"""grader/instructor/notebook_handout.py: the learner's notebook of a lab, as py:percent text."""
import ast

import pytest

from grader.instructor import notebook_handout
from grader.readers.manifest import find_lab


@pytest.mark.parametrize("url", ["", "https://example.edu/lab2-handout.zip?sig=a%2Fb&x=1",
                                 'https://example.edu/a"b\\c.zip', "https://exämple.edu/lab2.zip"])
def test_the_install_cell_holds_the_link_as_given(url):
    notebook = notebook_handout.notebook(find_lab("lab2"), url)
    install = next(cell.source for cell in notebook.cells if "HANDOUT =" in cell.source)
    assign = next(s for s in ast.parse(install).body if isinstance(s, ast.Assign) and s.targets[0].id == "HANDOUT")
    assert ast.literal_eval(assign.value) == url
