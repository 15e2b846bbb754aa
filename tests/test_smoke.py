import numpy as np

from oracle import check, noncontig


def test_add_noncontiguous():
    a = noncontig(np.arange(12, dtype=np.float32).reshape(3, 4))
    check(lambda m, x: x + x * 2, a)


def test_promotion_int_float():
    check(lambda m, x: x / 2, np.arange(4, dtype=np.int32))


def test_mm_shape_error():
    check(lambda m, x, y: m.mm(x, y), np.ones((2, 3), np.float32), np.ones((4, 5), np.float32))
