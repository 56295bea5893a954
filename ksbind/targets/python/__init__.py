"""The ``python`` target: plain Python values through Python's C API (target.py; docs/targets.md)."""
