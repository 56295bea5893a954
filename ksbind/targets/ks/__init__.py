"""The ``ks`` target: ksc's own values through pybind11 (target.py; docs/targets.md)."""
