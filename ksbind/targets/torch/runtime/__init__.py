"""Runtime support for torch-target modules: each binding a function over its ops.

A torch-target build is the op library ``NAME_torchops.so`` (stable-ABI torch ops, one per
binding and vjp: ksbind/targets/torch/target.py) and the generated ``NAME.py``, which
calls :func:`install_stable` with a table of its bindings. That loads the library
(``load_library``: once per process, refusing a torch older than the library needs) and
gives each op, in Python, a fake kernel, autograd from its vjp op and a batching rule, and
puts in the module, for each binding, a function that flattens its arguments into the op's
leaves and re-nests the op's results (see install_stable).

torch.library's generated autograd has no ``setup_context``, so calls holding torch.func's
tensors go to a ``torch.autograd.Function`` over the same ops instead
(``autograd_function``; ``forward_function`` for a binding without a vjp), which has one and
a vmap rule (``vmap_rule``), so torch.func.grad, vjp, jacrev and torch.vmap work.

The package, by concern: ``loading`` (the op library and ``install_stable``), ``calls`` (a
binding's arguments to its ops and back, errors, registrations), ``autograd`` (the
autograd.Function, vjp and jvp), ``vmap`` (batching rules, fake kernels), ``packing``
(packed bindings), ``support`` (the support functions, generated from ksbind/support.py),
``contract`` (the records a wrapper hands the runtime) and ``trees`` (nested values as
leaves), each importing only those before it.
It imports torch and nothing of ksbind's: a standalone build copies the package beside its
module (``NAME_ksbind_runtime/``), so a wheel needs no ksbind. This ``__init__`` imports only
``contract`` (typing alone) and the rest on first use (PEP 562), so codegen imports the records
it writes without torch.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# The records a wrapper's BINDINGS table is written as (``_runtime.BindingRecord(...)``).
from .contract import BindingRecord, LeafRecord, PackRecord, ResultRecord

if TYPE_CHECKING:
    from .autograd import autograd_function, forward_function
    from .calls import _eager_entry as _eager_entry  # tests and benchmarks read these two
    from .loading import _libraries as _libraries
    from .loading import install_stable, load_library, torch_needed
    from .trees import flatten, unflatten
    from .vmap import vmap_rule

#: Each name defined by a module that imports torch -> that module (imported on first use).
_LAZY = {"autograd_function": "autograd", "forward_function": "autograd", "_eager_entry": "calls",
         "_libraries": "loading", "install_stable": "loading", "load_library": "loading", "torch_needed": "loading",
         "flatten": "trees", "unflatten": "trees", "vmap_rule": "vmap"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


__all__ = ["BindingRecord", "LeafRecord", "ResultRecord", "PackRecord", "autograd_function", "forward_function",
           "vmap_rule", "install_stable", "load_library", "torch_needed", "flatten", "unflatten"]
