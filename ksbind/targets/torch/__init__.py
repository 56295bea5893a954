"""The ``torch`` target: ks functions as torch ops on PyTorch's stable ABI (target.py, values.py,
build.py, runtime/; docs/torch.md)."""
