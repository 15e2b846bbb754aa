"""The other spellings PyTorch's argument parser accepts for a keyword, applied once for every binding.

PyTorch's python_arg_parser takes NumPy's names for two parameters, `axis=` for `dim=` and `keepdims=` for
`keepdim=`, and lets a size given as separate ints (`view(2, 3)`, `zeros(2, 3)`) also be given by its keyword
(`view(size=(2, 3))`, `zeros(size=(2, 3))`). The generated bindings (lantern.ops.binding), the composite wrappers
(lantern.ops.registry) and the hand-written Tensor methods all resolve these spellings here, when a call brings a
keyword its signature does not have.

>>> t = lantern.arange(6.).view(2, 3)
>>> t.sum(axis=1, keepdims=True).tolist(), lantern.zeros(size=(1, 2)).shape, t.view(size=(3, 2)).shape
([[3.0], [12.0]], lantern.Size([1, 2]), lantern.Size([3, 2]))
"""
import functools
import inspect

from ..core import torch_function
from . import generated

# NumPy's name -> PyTorch's parameter, as python_arg_parser's numpy_compatibility_arg_names has them.
NUMPY_NAMES = {"axis": "dim", "keepdims": "keepdim"}


def plan(names, varargs=None):
    """The parameters of a signature that another spelling can reach: a tuple of names (empty: nothing to do)."""
    return tuple(n for n in names if n in NUMPY_NAMES.values()) + ((varargs,) if varargs else ())


def resolve(fn_name, extra, targets, values, varargs=None):
    """`values` of the parameters `targets`, updated from the extra keywords of a call; a keyword that is no
    spelling of theirs, or one given twice, is Python's TypeError."""
    values = list(values)
    for keyword, value in extra.items():
        target = keyword if keyword == varargs else NUMPY_NAMES.get(keyword)
        if target is None or target not in targets:
            raise TypeError(f"{fn_name}() got an unexpected keyword argument '{keyword}'")
        i = targets.index(target)
        if target == varargs:
            if values[i]:
                raise TypeError(f"{fn_name}() got multiple values for argument '{target}'")
            values[i] = (value,)
        else:
            values[i] = value
    return values


def binding_lines(fn_name, targets, varargs, indent="    "):
    """Source lines for a generated function with `**_aliases` in its signature: rebind `targets` from it."""
    if not targets:
        return []
    names = ", ".join(targets) + ("," if len(targets) == 1 else "")
    return [f"{indent}if _aliases:",
            f"{indent}    {names} = _resolve_aliases({fn_name!r}, _aliases, {targets!r}, ({names}), {varargs!r})"]


class _Required:
    def __repr__(self):
        return "<required>"


REQUIRED = _Required()  # the default of a required parameter that another spelling may fill (`dim`, for axis=)


def placeholder_lines(fn_name, names, indent="    "):
    """Source lines checking that every parameter in `names` (defaulted to REQUIRED) was given after all."""
    if not names:
        return []
    test = " or ".join(f"{n} is _REQUIRED" for n in names)
    values = ", ".join(names) + ("," if len(names) == 1 else "")
    return [f"{indent}if {test}:", f"{indent}    _missing({fn_name!r}, {tuple(names)!r}, ({values}))"]


def missing(fn_name, names, values):
    """Python's TypeError for required arguments a call left out."""
    left = [n for n, v in zip(names, values) if v is REQUIRED]
    raise TypeError(f"{fn_name}() missing {len(left)} required positional argument{'s' if len(left) > 1 else ''}: "
                    + " and ".join(f"'{n}'" for n in left))


def torch_function_lines(public, calls, indent="    "):
    """Source lines of the `__torch_function__` check in a generated wrapper (which is the public function, as
    lantern.core.overridable's check is for a hand-written one), given the source of the call it makes (`x`,
    `*xs`, `k=k`, `**kw`); the wrapper's namespace must hold lantern.core.torch_function."""
    positional = [c for c in calls if "=" not in c and not c.startswith("**")]
    keywords = [f"{c.split('=')[0]!r}: {c.split('=')[0]}" if "=" in c else c for c in calls if c not in positional]
    args, kwargs = f"({', '.join(positional)}{',' if positional else ''})", f"{{{', '.join(keywords)}}}"
    return [f"{indent}if torch_function.ACTIVE[0] and torch_function.has_torch_function("
            f"_relevant := (*{args}, *{kwargs}.values())):",
            f"{indent}    return torch_function.handle_torch_function({public}, _relevant, {args}, {kwargs} or None)"]


def _parameter_parts(params, targets):
    """The generated wrapper's parameter list, the call it makes, its defaults, and the required parameters that
    another spelling may fill (defaulted to REQUIRED)."""
    kinds = inspect.Parameter
    heads, calls, defaults, placeholders = [], [], [], []
    for p in params:
        if p.kind is kinds.VAR_POSITIONAL:
            heads.append(f"*{p.name}")
            calls.append(f"*{p.name}")
            continue
        if p.kind is kinds.KEYWORD_ONLY and not any(h.startswith("*") for h in heads):
            heads.append("*")
        default = p.default
        if default is p.empty and p.kind is kinds.POSITIONAL_OR_KEYWORD and (placeholders or p.name in targets):
            placeholders.append(p.name)
            default = REQUIRED
        heads.append(p.name if default is p.empty else f"{p.name}=_d[{len(defaults)}]")
        if default is not p.empty:
            defaults.append(default)
        calls.append(f"{p.name}={p.name}" if p.kind is kinds.KEYWORD_ONLY else p.name)
    return heads, calls, defaults, placeholders


def with_keyword_aliases(fn):
    """`fn` (a hand-written method or function) taking the other spellings too: a wrapper generated with fn's own
    parameters plus `**_aliases`, so a call without them costs one plain call; fn itself if no parameter of it can
    be spelled otherwise."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return fn
    kinds = inspect.Parameter
    if any(p.kind is kinds.VAR_KEYWORD or p.name.startswith("_") for p in params):
        return fn
    varargs = next((p.name for p in params if p.kind is kinds.VAR_POSITIONAL), None)
    targets = plan([p.name for p in params if p.kind in (kinds.POSITIONAL_OR_KEYWORD, kinds.KEYWORD_ONLY)], varargs)
    if not targets:
        return fn
    heads, calls, defaults, placeholders = _parameter_parts(params, targets)
    lines = [f"def {fn.__name__}({', '.join(heads + ['**_aliases'])}):",
             *binding_lines(fn.__name__, targets, varargs), *placeholder_lines(fn.__name__, placeholders),
             *torch_function_lines(fn.__name__, calls),
             f"    return _fn({', '.join(calls)})"]
    space = {"_fn": fn, "_d": defaults, "_resolve_aliases": resolve, "_REQUIRED": REQUIRED, "_missing": missing,
             "torch_function": torch_function}
    wrapper = generated.in_memory(f"keyword aliases {fn.__qualname__}", fn.__name__, "\n".join(lines) + "\n", space)
    wrapper = functools.update_wrapper(wrapper, fn)
    wrapper.overridable = True  # lantern.core.overridable.is_overridable
    return wrapper
