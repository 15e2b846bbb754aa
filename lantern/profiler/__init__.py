"""lantern.profiler: per-op timings in PyTorch's `profile()` / `key_averages().table()` form.

Every dispatched op is timed (self time and total time including the ops it calls), backward nodes and
`record_function` ranges too, and the table reads as torch's does:

>>> import lantern
>>> from lantern.profiler import profile, record_function, ProfilerActivity
>>> a = lantern.ones(4, 4, requires_grad=True)
>>> with profile(activities=[ProfilerActivity.CPU]) as prof:
...     with record_function("forward"):
...         loss = (a * a).sum()
...     loss.backward()
>>> print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=3))  # doctest: +ELLIPSIS
-----------...  ------------  ------------  ------------  ------------  ------------  ------------
...Name    Self CPU %      Self CPU   CPU total %     CPU total  CPU time avg    # of Calls
-----------...  ------------  ------------  ------------  ------------  ------------  ------------
...
Self CPU time total: ...
<BLANKLINE>
"""
from .events import EventList, FunctionEvent, FunctionEventAvg
from .profile import ProfilerActivity, profile, record_function, supported_activities

__all__ = ["profile", "record_function", "ProfilerActivity", "supported_activities", "EventList",
           "FunctionEvent", "FunctionEventAvg"]
