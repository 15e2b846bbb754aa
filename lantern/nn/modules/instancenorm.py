"""InstanceNorm1d/2d/3d (torch.nn.modules.instancenorm): normalise each (sample, channel) over its spatial dims.

By default there is no affine and no running statistics (affine=False, track_running_stats=False); the repr and
the buffers are those of BatchNorm's _NormBase. Input without a batch dim is accepted.

>>> import lantern
>>> norm = lantern.nn.InstanceNorm1d(2, affine=True)
>>> norm
InstanceNorm1d(2, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=False)
>>> [round(v, 4) for v in norm(lantern.tensor([[1., 3.], [5., 5.]])).view(-1).tolist()]
[-1.0, 1.0, 0.0, 0.0]
"""

from .. import functional as F
from .batchnorm import _LazyNormBase, _NormBase
from ...core import user_warnings

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d",
           "LazyInstanceNorm3d"]


class _InstanceNorm(_NormBase):
    _spatial = 1

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False, device=None,
                 dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def _check_input_dim(self, input):
        low = self._spatial + 1
        if input.dim() not in (low, low + 1):
            raise ValueError(f"expected {low}D or {low + 1}D input (got {input.dim()}D input)")

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        # unversioned checkpoints may carry running stats that an untracked InstanceNorm has no buffers for
        if local_metadata.get("version", None) is None and not self.track_running_stats:
            stale = [prefix + name for name in ("running_mean", "running_var") if prefix + name in state_dict]
            if stale:
                klass = type(self).__name__
                names = " and ".join(f'"{key}"' for key in stale)
                error_msgs.append(
                    f"Unexpected running stats buffer(s) {names} for {klass} with track_running_stats=False. If "
                    f"state_dict is a checkpoint saved before 0.4.0, this may be expected because {klass} does not "
                    "track running stats by default since 0.4.0. Please remove these keys from state_dict. If the "
                    f"running stats are actually needed, instead set track_running_stats=True in {klass} to enable "
                    f"them. See the documentation of {klass} for details.")
                for key in stale:
                    state_dict.pop(key)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)

    def _apply_instance_norm(self, input):
        return F.instance_norm(input, self.running_mean, self.running_var, self.weight, self.bias,
                               self.training or not self.track_running_stats,
                               self.momentum if self.momentum is not None else 0.0, self.eps)

    def forward(self, input):
        self._check_input_dim(input)
        unbatched = self._spatial + 1
        feature_dim = input.dim() - unbatched
        if input.size(feature_dim) != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={feature_dim} to match num_features "
                                 f"({self.num_features}), but got: {input.size(feature_dim)}.")
            user_warnings.warn(f"input's size at dim={feature_dim} does not match num_features. You can silence this "
                          "warning by not passing in num_features, which is not used because affine=False",
                          stacklevel=2)
        if input.dim() == unbatched:
            return self._apply_instance_norm(input.unsqueeze(0)).squeeze(0)
        return self._apply_instance_norm(input)


class InstanceNorm1d(_InstanceNorm):
    """Instance normalisation over (N, C, L) or (C, L) input."""
    _spatial = 1


class InstanceNorm2d(_InstanceNorm):
    """Instance normalisation over (N, C, H, W) or (C, H, W) input."""
    _spatial = 2


class InstanceNorm3d(_InstanceNorm):
    """Instance normalisation over (N, C, D, H, W) or (C, D, H, W) input."""
    _spatial = 3


class LazyInstanceNorm1d(_LazyNormBase, _InstanceNorm):
    """An InstanceNorm1d whose num_features comes from the first input (affine and tracking on by default, as in
    torch, whose lazy instance norms take _LazyNormBase's defaults)."""
    cls_to_become = InstanceNorm1d
    _spatial = 1


class LazyInstanceNorm2d(LazyInstanceNorm1d):
    """An InstanceNorm2d whose num_features comes from the first input."""
    cls_to_become = InstanceNorm2d
    _spatial = 2


class LazyInstanceNorm3d(LazyInstanceNorm1d):
    """An InstanceNorm3d whose num_features comes from the first input."""
    cls_to_become = InstanceNorm3d
    _spatial = 3
