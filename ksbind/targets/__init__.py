"""ksbind's own binding targets, one package each (``ks``, ``python``, ``torch``, ``jax``).

A target's package holds all of it: ``target.py`` (its ``Target`` record: files, how each type
crosses, template context; the torch target's values in ``values.py``), ``build.py`` where it
has a build kind of its own, ``runtime``/``runtime.py`` where generated Python imports one,
``templates/`` and ``include/ksbind/`` (its C++ headers). ``registry.py`` lists them; nothing
else outside a target's package names it. The modules sit in different layers (docs/index.md):
a runtime imports nothing of ksbind, a record builds on codegen, a build kind on the backend,
so these ``__init__`` files import nothing, and importing a runtime costs only the runtime.
"""
