"""Shared by every test folder: how the tests are spread over the machine's cores."""

import shutil


def pytest_xdist_auto_num_workers(config):
    """pyproject's addopts spread the tests over every core (-n auto); where an NVIDIA driver is installed
    (nvidia-smi), the GPU tests time the GPU, so every test runs in one process, one after another."""
    return 0 if shutil.which("nvidia-smi") else None
