"""The sandbox tests skip themselves where bubblewrap cannot start. Where it is expected (CI installs it
and says so in GRADER_EXPECT_BUBBLEWRAP), that is a failure, not 27 quiet skips."""
import os
import shutil

import pytest

from grader.judge.launchers import bubblewrap_works


def test_bubblewrap_starts_where_it_is_expected():
    if os.environ.get("GRADER_EXPECT_BUBBLEWRAP") != "1":
        pytest.skip("bubblewrap is not expected here (.ci/run sets GRADER_EXPECT_BUBBLEWRAP=1 once it installs it)")
    assert shutil.which("bwrap"), "GRADER_EXPECT_BUBBLEWRAP=1, but there is no bwrap on PATH"
    assert bubblewrap_works(), "bwrap is installed but cannot start a sandbox: every sandbox test would skip"
