"""The import hook behind `python -m lantern.compat`: `torch` and `torch.<sub>` resolve to lantern's modules.

A sys.meta_path finder answers for `torch...` (and `torchvision...`) names. Each one gets a module proxy named as
the program wrote it (`torch.nn`) that reads and writes through to the lantern module (`lantern.nn`). What lantern
lacks fails with an error naming it: an import raises ModuleNotFoundError, a missing attribute AttributeError.

>>> finder = TorchAliasFinder()
>>> finder.lantern_name("torch.nn.functional"), finder.lantern_name("torchvision.transforms")
('lantern.nn.functional', 'lantern.vision.transforms')
>>> proxy = finder.proxy("torch", importlib.import_module("lantern"))
>>> proxy.float32, proxy.nn.__name__
(lantern.float32, 'torch.nn')
>>> proxy.some_function
Traceback (most recent call last):
AttributeError: module 'torch' has no attribute 'some_function' (lantern does not implement torch.some_function)
"""
import importlib
import importlib.abc
import importlib.util
import types

# torch-side prefix -> lantern-side prefix, longest first; a name matches a prefix exactly or at a dot.
RENAMES = (
    ("torch.autograd.anomaly_mode", "lantern.autograd.anomaly"),  # the same module under a shorter file name
    ("torchvision.transforms", "lantern.vision.transforms"),
    ("torchvision", "lantern.vision"),
    ("torch", "lantern"),
    ("functorch", "lantern.functorch"),  # the package torch ships beside torch.func
)


_own = types.ModuleType.__dict__["__dict__"].__get__  # a module's real namespace, under ModuleProxy.__dict__


class ModuleProxy(types.ModuleType):
    """A module named as the program imported it (`torch.nn`) whose attributes are those of a lantern module."""

    def __init__(self, name, target, finder):
        super().__init__(name, target.__doc__)
        _own(self)["_lantern_module"] = target
        _own(self)["_finder"] = finder

    def __getattr__(self, attr):
        target = _own(self)["_lantern_module"]
        try:
            value = getattr(target, attr)
        except AttributeError:
            if attr == "__all__":  # `from torch import *` on a module without __all__: its public names
                return [name for name in vars(target) if not name.startswith("_")]
            if attr.startswith("__"):
                raise
            value = _try_import(f"{target.__name__}.{attr}")
            if value is None:
                raise AttributeError(f"module '{self.__name__}' has no attribute '{attr}' (lantern does not "
                                     f"implement {self.__name__}.{attr})") from None
        if isinstance(value, types.ModuleType) and value.__name__.startswith("lantern"):
            return _own(self)["_finder"].proxy(f"{self.__name__}.{attr}", value)
        return value

    def __setattr__(self, attr, value):
        # Import bookkeeping (__spec__, __loader__, child modules) stays on the proxy; a program's settings go
        # through to lantern, as they would reach torch.
        if isinstance(value, ModuleProxy):
            # The import system names a freshly imported submodule on its parent. Where the lantern package's
            # attribute of that name is something else (torch.multiprocessing.spawn, the function, over its
            # module), that attribute stays visible, as in torch, which imported the submodule first.
            submodule = _own(value)["_lantern_module"]
            if getattr(_own(self)["_lantern_module"], attr, submodule) is submodule:
                _own(self)[attr] = value
        elif attr.startswith("__") and attr.endswith("__"):
            _own(self)[attr] = value
        else:
            setattr(_own(self)["_lantern_module"], attr, value)

    def __delattr__(self, attr):
        if attr in _own(self):
            del _own(self)[attr]
        else:
            delattr(_own(self)["_lantern_module"], attr)

    @property
    def __dict__(self):
        """The namespace as torch's module has it, for programs that look names up there (imagenet's
        `models.__dict__[args.arch]`): lantern's names, lantern modules as their proxies, under the proxy's own
        (its name, import bookkeeping). A snapshot: set attributes on the module, not in this dict."""
        own = _own(self)
        names = {attr: self.__getattr__(attr) if isinstance(value, types.ModuleType) else value
                 for attr, value in vars(own["_lantern_module"]).items()}
        names.update((attr, value) for attr, value in own.items() if attr not in ("_lantern_module", "_finder"))
        return names

    def __dir__(self):
        return dir(_own(self)["_lantern_module"])

    def __repr__(self):
        return f"<module '{self.__name__}' (lantern's {_own(self)['_lantern_module'].__name__})>"


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, finder, target):
        self.finder, self.target = finder, target

    def create_module(self, spec):
        return self.finder.proxy(spec.name, self.target)

    def exec_module(self, module):
        pass


class TorchAliasFinder(importlib.abc.MetaPathFinder):
    """Finds `torch...` imports in lantern; one proxy per aliased name."""

    def __init__(self):
        self.proxies = {}

    @staticmethod
    def lantern_name(fullname):
        for torch_prefix, lantern_prefix in RENAMES:
            if fullname == torch_prefix or fullname.startswith(torch_prefix + "."):
                return lantern_prefix + fullname[len(torch_prefix):]
        return None

    def find_spec(self, fullname, path=None, target=None):
        lantern_name = self.lantern_name(fullname)
        if lantern_name is None:
            return None
        module = _try_import(lantern_name)
        if module is None:
            raise ModuleNotFoundError(f"lantern does not implement {fullname} (imported as {fullname} by this "
                                      f"program; there is no {lantern_name})", name=fullname)
        return importlib.util.spec_from_loader(fullname, _AliasLoader(self, module),
                                               is_package=hasattr(module, "__path__"))

    def proxy(self, name, target):
        proxy = self.proxies.get(name)
        if proxy is None:
            proxy = self.proxies[name] = ModuleProxy(name, target, self)
        return proxy


def _try_import(name):
    """The lantern module called `name`, or None if lantern has no such module (other import errors propagate)."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name is None or not (name == e.name or name.startswith(e.name + ".")):
            raise  # something inside lantern failed to import: not ours to hide
    parent, _, child = name.rpartition(".")
    if parent:  # a module held as an attribute but not importable by that path (lantern.cuda)
        value = getattr(_try_import(parent), child, None)
        if isinstance(value, types.ModuleType):
            return value
    return None
