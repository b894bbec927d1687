"""pytest setup: the tegula package from the build tree (PYTHONPATH=build/python,
as scripts/test.sh sets it), fresh random inputs each run (seed printed)."""
import os
import random

import numpy as np
import pytest


def pytest_report_header(config):
    import tegula
    ok, why = tegula.gpu_available()
    return [f"tegula from {os.path.dirname(tegula.__file__)}",
            f"GPU: {'available' if ok else 'none (' + why.split(';')[0] + ')'}"]


@pytest.fixture
def rng():
    seed = random.SystemRandom().randrange(2**32)
    print(f"[tegula test] random seed {seed}")
    return np.random.default_rng(seed)


def pytest_collection_modifyitems(config, items):
    import tegula
    ok, why = tegula.gpu_available()
    if not ok:
        skip = pytest.mark.skip(reason=f"no GPU: {why}")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA driver and device")
