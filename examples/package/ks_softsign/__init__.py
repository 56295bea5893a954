"""softsign(x) = x / (1 + |x|), written in ks and bound by ksbind.

- ``vsoftsign(list_of_floats)`` / ``vsoftsign_vjp(xs, dret)``: plain Python values
  (the python-target module ``ks_softsign._softsign``);
- ``softsign(tensor)``: elementwise on float32 tensors with autograd (the
  torch module ``ks_softsign._softsign_torch``, a torch op on PyTorch's stable ABI: any
  torch >= 2.10; imports torch).
"""
from ._softsign import vsoftsign, vsoftsign_vjp

__all__ = ["vsoftsign", "vsoftsign_vjp", "softsign"]


def __getattr__(name: str) -> object:
    # The torch module is imported on first use, so the plain-Python one works without importing torch.
    if name == "softsign":
        from ._softsign_torch import softsign

        return softsign
    raise AttributeError(f"module 'ks_softsign' has no attribute {name!r}")
