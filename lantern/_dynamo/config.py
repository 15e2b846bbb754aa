"""torch._dynamo.config: the switches programs set. lantern's capture (lantern._dynamo.eval_frame) reads
`suppress_errors` (a capture error falls back to eager instead of raising) and `cache_size_limit` (specialisations
kept per compiled function before it runs eagerly for new ones); the others are accepted and have no effect.

>>> import lantern._dynamo
>>> lantern._dynamo.config.suppress_errors
False
"""
suppress_errors = False
cache_size_limit = 8
recompile_limit = 8
accumulated_cache_size_limit = 256
verbose = False
capture_scalar_outputs = False
capture_dynamic_output_shape_ops = False
optimize_ddp = True
automatic_dynamic_shapes = True
assume_static_by_default = True
