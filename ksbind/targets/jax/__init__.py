"""The ``jax`` target: ks functions as JAX functions through XLA's FFI (target.py, build.py,
runtime/; docs/jax.md)."""
