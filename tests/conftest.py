"""Shared test setup.

- A hypothesis profile, loaded by default: few examples (every example of an op test runs a full
  gradient check, O(elements) forward passes), no deadline (the first call of a numba kernel
  compiles it), and derandomized so that CI runs are reproducible. Choose another profile with
  HYPOTHESIS_PROFILE=dev (faster) or HYPOTHESIS_PROFILE=thorough (more examples, random).
- An autouse fixture that seeds minigrad's generator and restores the global state a test may
  change (backend, and the main thread's grad mode and anomaly mode), so one failing test cannot
  leak into the next.
"""
import os

import pytest
from hypothesis import HealthCheck, settings

import minigrad
from minigrad import autograd

settings.register_profile(
    "ci", max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=200, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(autouse=True)
def _isolated_global_state():
    backend = minigrad.get_backend()
    grad_enabled, anomaly = autograd.is_grad_enabled(), autograd.is_anomaly_enabled()
    minigrad.manual_seed(1234)
    yield
    if minigrad.get_backend() != backend:
        minigrad.set_backend(backend)
    autograd._modes.grad_enabled, autograd._modes.anomaly_enabled = grad_enabled, anomaly
