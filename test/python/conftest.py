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

FIXTURE_DIRS = [pathlib.Path(os.environ["GENIE_FIXTURE_DIR"])] if os.environ.get("GENIE_FIXTURE_DIR") else []
FIXTURE_DIRS += [BIN_DIR.parent / "fixtures", ROOT / "build" / "fixtures"]


def fixture(name):
    """The generated fixture model `name`.gguf (ctest makes them), or a visible skip."""
    for d in FIXTURE_DIRS:
        p = d / f"{name}.gguf"
        if p.exists():
            return p
    pytest.skip(f"fixture model {name}.gguf not found in {FIXTURE_DIRS} (ctest generates it: scripts/make-fixtures)")


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
