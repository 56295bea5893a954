"""The way in from Python: a Python function read with ``ast`` and turned into typed ks defs.

The layers inside, each handing the next a plain record:

- ``source``: a function's source, its tree and its ``file:line:col``, and the names it sees;
- ``signature``: the ks types of a call's arguments (what a compiled function is keyed by);
- ``ir``: the typed ks expressions the translation builds, rendered as s-expressions;
- ``vocabulary``: the construct table, Python spelling to ks form (docs/frontend.md prints it);
- ``translate``: one Python function to one ks def;
- ``program``: every def a call reaches, in order, as one ks text with its bindings.

Nothing below this package knows it exists: ``ksbind.compile_api`` hands the
pipeline ks text and bindings exactly as ``load_ks`` takes them.
"""
