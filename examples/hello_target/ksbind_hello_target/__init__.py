"""The ``hello`` target: ksbind's ``python`` target (plain floats, ints and nested lists), whose
modules also have ``greeting()``, returning the text a config gives as ``target_options:
{greeting: ...}``.

Everything a target is lives in this one record: its files and their templates (its own
``templates/`` folder first, then ksbind's, which its template extends), how each ks type
crosses (the python target's rule), its build kind (a module on Python's C API), its C++
headers (``include/``, on its modules' include path) and its own config keys (``options``).
The package's ``ksbind.targets`` entry point (pyproject.toml) is how ksbind finds it.
"""
from __future__ import annotations

from pathlib import Path

from ksbind.codegen.targets.record import Target, TargetOption
from ksbind.targets.python import target as python_target

HERE = Path(__file__).parent

TARGET = Target(
    name="hello",
    # The python target's files, with this target's own module template in place of its module.cpp.
    files={**python_target.FILES, "module.cpp": "hello_module.cpp.j2"},
    single_file={**python_target.SINGLE_FILE, "module.cpp": "hello_single_file.cpp.j2"},
    crossing=python_target.crossing,
    extra_context=python_target.extra_context,
    build="python-capi",
    tensors="nested lists",
    entry_headers=("ksbind/python.h",),
    limited_api=python_target.LIMITED_API,
    templates=HERE / "templates",
    # The python target's headers (its templates include them: ksbind/python_module.h), then this one's.
    include_dirs=(*python_target.TARGET.include_dirs, HERE / "include"),
    options={"greeting": TargetOption("text", "hello", "the text the module's greeting() returns")},
)

__all__ = ["TARGET"]
