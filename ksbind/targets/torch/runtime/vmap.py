"""torch.vmap of a binding: the batching rules (elementwise, vmap mode, looped) and the ops' fake kernels.

Part of ksbind/targets/torch/runtime/ (its __init__ says what the package is); imports torch and nothing of
ksbind's but this package, so that a wheel can carry a copy.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from .contract import Batched, LeafRecord, Mode, ResultRecord
from .trees import _DTYPES, _LEAF, _Box, flatten, unflatten

# ------------------------------------------------------------ torch.vmap

def vmap_rule(mode: str, params: Sequence[Batched], fn: Callable[..., Any], info: Any,
              dims: Sequence[int | None], spec: Any, box: _Box, leaves: Sequence[torch.Tensor]
              ) -> tuple[tuple[torch.Tensor, ...], tuple[int | None, ...]]:
    """The vmap rule of a binding's Function: ``fn`` (which routes tensors of
    outer transforms back to the Function) over ``leaves`` batched along
    ``dims``. Elementwise bindings take the batch as one more broadcast
    dimension, vmap-mode bindings fold it into their own leading dimension,
    plain bindings (and what the others cannot fold) call once per batch
    element and stack. Fills in ``box`` with the result's spec."""
    moved = [t if d is None else t.movedim(d, 0) for t, d in zip(leaves, dims)]
    batched = [d is not None for d in dims]
    out: list[torch.Tensor] | None = None
    if not any(batched):
        result = fn(*unflatten(spec, iter(moved)))
        out = []
        box.spec = flatten(result, out)
        return tuple(out), tuple(None for _ in out)
    if mode == "elementwise":
        out = _elementwise_batched(fn, spec, box, moved, batched)
    elif mode == "vmap":
        out = _vmap_mode_batched(params, fn, spec, box, moved, batched, info.batch_size)
    if out is None:
        out = _looped(fn, spec, box, moved, batched, info.batch_size)
    return tuple(out), tuple(0 for _ in out)


def _elementwise_batched(fn: Callable[..., Any], spec: Any, box: _Box, moved: Sequence[torch.Tensor],
                         batched: Sequence[bool]) -> list[torch.Tensor]:
    # The batch dimension goes in front of the broadcast shape: batched tensors
    # get size-1 dimensions up to the broadcast rank, unbatched ones broadcast.
    rank = max(t.dim() - int(bt) for t, bt in zip(moved, batched))
    padded = [t.reshape(t.shape[0], *([1] * (rank - t.dim() + 1)), *t.shape[1:]) if bt else t
              for t, bt in zip(moved, batched)]
    out: list[torch.Tensor] = []
    box.spec = flatten(fn(*unflatten(spec, iter(padded))), out)
    return out


def _vmap_mode_batched(params: Sequence[Batched], fn: Callable[..., Any], spec: Any, box: _Box,
                       moved: Sequence[torch.Tensor], batched: Sequence[bool], size: int
                       ) -> list[torch.Tensor] | None:
    """(size, n, ...) arguments as (size * n, ...): one call of the mode's own
    loop. None where it cannot fold (a batched shared scalar, an empty batch)."""
    kinds = spec[1]
    slots: list[bool] = []  # per leaf: is it a mode-batched argument
    for p, part in zip(params, kinds):
        if part is _LEAF:
            slots.append(bool(p["batched"]))
        elif part[0] != "const":
            return None  # a tuple of tensors: loop
    if any(bt and not slot for bt, slot in zip(batched, slots)):
        return None
    inner = {t.shape[1] if bt else t.shape[0] for t, bt, slot in zip(moved, batched, slots) if slot}
    if len(inner) != 1 or size * next(iter(inner)) == 0:
        return None  # differing sizes: the loop's call names the argument
    n = next(iter(inner))
    folded = [t.reshape(size * n, *t.shape[2:]) if bt
              else t.unsqueeze(0).expand(size, *t.shape).reshape(size * n, *t.shape[1:]) if slot else t
              for t, bt, slot in zip(moved, batched, slots)]
    result = fn(*unflatten(spec, iter(folded)))
    flat: list[torch.Tensor] = []
    box.spec = flatten(result, flat)
    return [t.reshape(size, n, *t.shape[1:]) for t in flat]


def _looped(fn: Callable[..., Any], spec: Any, box: _Box, moved: Sequence[torch.Tensor],
            batched: Sequence[bool], size: int) -> list[torch.Tensor]:
    if size == 0:
        raise ValueError("torch.vmap over an empty batch: this binding is called once per batch element "
                         "here (a plain binding, or a vmap-mode one whose batch cannot be folded into its own "
                         "leading axis), and no element tells its result's shape")
    steps: list[list[torch.Tensor]] = []
    for i in range(size):
        step = [t[i] if bt else t for t, bt in zip(moved, batched)]
        flat: list[torch.Tensor] = []
        step_spec = flatten(fn(*unflatten(spec, iter(step))), flat)
        if i == 0:
            box.spec = step_spec
        elif step_spec != box.spec or any(a.shape != b.shape for a, b in zip(flat, steps[0])):
            raise ValueError(f"torch.vmap: batch element {i}'s result differs in structure or shape from element "
                             f"0's; results must stack")
        steps.append(flat)
    return [torch.stack(parts) for parts in zip(*steps)]


# ------------------------------------------------------------ ops: batching rules and fake kernels

def _op_vmap(mode: Mode, op_leaves: Sequence[LeafRecord], op: Any) -> Callable[..., Any]:
    """The op's batching rule (torch.vmap without torch's slow per-sample fallback):
    vmap_rule over its tensor arguments (an op takes tensors and numbers only)."""
    def rule(info: Any, in_dims: Sequence[int | None], *args: Any) -> Any:
        tensors: list[torch.Tensor] = []
        spec = flatten(args, tensors)
        dims = [d for a, d in zip(args, in_dims) if isinstance(a, torch.Tensor)]
        box = _Box()
        out, out_dims = vmap_rule(mode, op_leaves, op, info, dims, spec, box, tensors)
        return unflatten(box.spec, iter(out)), unflatten(box.spec, iter(out_dims))

    return rule


def _fake_tensor(part: ResultRecord, batch: Any, device: torch.device) -> torch.Tensor:
    ctx = torch.library.get_ctx()
    rank = part["rank"]
    if batch is not None:  # vmap: the batch is known, the rest depends on the data
        sizes = [batch] + [ctx.new_dynamic_size() for _ in range(rank - 1)]
    else:
        sizes = [ctx.new_dynamic_size() for _ in range(rank)]
    return torch.empty(sizes, dtype=_DTYPES[part["dtype"]], device=device)
