"""Where minigrad follows PyTorch's rules on inputs that numpy would take differently: a clip with
no bound, float32 meeting float64, an integer index and an index array separated by a slice."""
import numpy as np
import pytest

import minigrad as mg


# ============================================================================ clip / clamp
@pytest.mark.parametrize("call", [lambda x: x.clip(None, None), lambda x: x.clamp(), lambda x: mg.clip(x),
                                  lambda x: mg.clamp(x, None, None), lambda x: x.clamp_(None, None)],
                         ids=["clip", "clamp", "mg.clip", "mg.clamp", "clamp_"])
def test_a_clip_with_neither_bound_raises_as_in_pytorch(call):
    x = mg.tensor([-2.0, 0.5, 3.0])
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max' must not be None"):
        call(x)
    np.testing.assert_array_equal(x.numpy(), [-2.0, 0.5, 3.0])  # clamp_ changed nothing


def test_a_clip_with_one_bound_still_works():
    x = mg.tensor([-2.0, 0.5, 3.0])
    np.testing.assert_array_equal(x.clip(None, 1.0).numpy(), [-2.0, 0.5, 1.0])
    np.testing.assert_array_equal(x.clamp(min=0.0).numpy(), [0.0, 0.5, 3.0])
