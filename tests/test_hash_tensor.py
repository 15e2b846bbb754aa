"""torch.hash_tensor (lantern/ops/hash_tensor.py) and the uint64 tensors it returns, against torch: the XOR of the
elements' 64-bit patterns over all or some dims, for every dtype kind, with torch's errors."""
import numpy as np
import pytest
from oracle import check, raises_like

VALUES = np.array([[1.5, -2.0, 0.0], [-0.0, np.nan, 3.25]])


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int8, np.uint8, np.bool_])
@pytest.mark.parametrize("kwargs", [{}, {"dim": 0}, {"dim": -1, "keepdim": True}, {"dim": (0, 1)}])
def test_hash_tensor_matches_torch(dtype, kwargs):
    values = np.nan_to_num(VALUES, nan=7.0) if np.dtype(dtype).kind != "f" else VALUES
    check(lambda m, x: (m.hash_tensor(x, **kwargs), x.hash_tensor(**kwargs)), values.astype(dtype))


def test_hash_tensor_of_a_view_and_into_out():
    check(lambda m, x: m.hash_tensor(x.t(), 1, out=m.empty(3, dtype=m.uint64)), VALUES)


@pytest.mark.parametrize("case", [
    lambda m, x: m.hash_tensor(x.to(m.complex64)),                             # no complex kernel
    lambda m, x: m.hash_tensor(x, mode=1),                                    # the only mode is 0
    lambda m, x: m.hash_tensor(x[:0]),                                        # empty, no dim
    lambda m, x: m.hash_tensor(x[:0], 0),                                     # an empty dim
    lambda m, x: m.hash_tensor(x, out=m.empty((), dtype=m.int64)),            # out must be uint64
    lambda m, x: m.promote_types(m.uint64, m.int64),
])
def test_hash_tensor_errors(case):
    raises_like(case, VALUES)
