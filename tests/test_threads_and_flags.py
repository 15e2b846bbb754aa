"""set_num_threads / get_num_threads (the BLAS thread limit) and the accepted torch.backends flags."""
import pytest
from threadpoolctl import ThreadpoolController

import lantern
from oracle import raises_like


def test_set_num_threads_limits_every_blas_library():
    before = lantern.get_num_threads()
    try:
        lantern.set_num_threads(1)
        assert lantern.get_num_threads() == 1
        assert {lib.num_threads for lib in ThreadpoolController().select(user_api="blas").lib_controllers} == {1}
    finally:
        lantern.set_num_threads(before)
    assert lantern.get_num_threads() == before


@pytest.mark.parametrize("bad", [0, -1, 1.5, "2"])
def test_bad_thread_counts_raise_like_torch(bad):
    torch_message, lantern_message = raises_like(lambda m: m.set_num_threads(bad))
    assert torch_message == lantern_message


def test_backend_flags_are_accepted():
    import lantern.backends.cudnn as cudnn
    import lantern.backends.mps as mps
    cudnn.benchmark = True
    assert cudnn.benchmark and not cudnn.is_available()
    assert not mps.is_available()
