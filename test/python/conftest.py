import os
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
TESTDATA = (ROOT.parent / "shared" / "testdata").resolve()
BIN_DIR = pathlib.Path(os.environ.get("GENIE_BIN_DIR", ROOT / "build" / "bin"))
PYTHON_DIR = pathlib.Path(os.environ.get("GENIE_PYTHON_DIR", ROOT / "build" / "python"))

sys.path.insert(0, str(PYTHON_DIR))
sys.path.insert(0, str(pathlib.Path(__file__).parent))


@pytest.fixture(scope="session")
def testdata():
    return TESTDATA


@pytest.fixture(scope="session")
def genie_cli():
    exe = BIN_DIR / "genie-cli"
    if not exe.exists():
        pytest.skip(f"genie-cli is not built ({exe} missing): run scripts/build")
    return exe


@pytest.fixture(scope="session")
def genie_module():
    try:
        import genie  # noqa: F401
    except ImportError as exc:
        pytest.skip(f"the genie Python module is not built in {PYTHON_DIR}: {exc}")
    return sys.modules["genie"]
