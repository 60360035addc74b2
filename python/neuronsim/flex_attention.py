"""FlexAttention (torch.nn.attention.flex_attention) on the neuron device: its higher-order op
in a Dynamo graph becomes PyTorch's own dense implementation (the scores, score_mod and the
block mask's mask_mod evaluated over every (batch, head, query, key), a softmax and the value
product: the op's CPU semantics, `sdpa_dense`), traced by AOTAutograd into ATen ops that the
compiler lowers and differentiates like any others. torchtitan's llama3 models use it.

The dense form holds [batch, heads, queries, keys] scores: no block sparsity is exploited."""

from __future__ import annotations

from typing import Any

import torch
import torch.fx


def dense_flex_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                         score_mod: Any, block_mask: tuple, scale: float,
                         kernel_options: dict[str, Any], score_mod_other_buffers: tuple = (),
                         mask_mod_other_buffers: tuple = ()) -> Any:
    from torch._higher_order_ops.flex_attention import sdpa_dense

    return sdpa_dense(query, key, value, score_mod, block_mask, scale, kernel_options,
                      score_mod_other_buffers, mask_mod_other_buffers)


def lower_flex_attention(gm: torch.fx.GraphModule) -> int:
    """Replaces the graph's flex_attention calls by the dense implementation (in place), in
    the graph and in its subgraphs (the bodies of higher-order ops such as activation
    checkpointing's, which torchtitan wraps its layers in); returns how many."""
    flex = getattr(torch.ops.higher_order, "flex_attention", None)
    if flex is None:
        return 0
    count = 0
    for module in gm.modules():
        if not isinstance(module, torch.fx.GraphModule):
            continue
        replaced = 0
        for node in module.graph.nodes:
            if node.op == "call_function" and node.target is flex:
                node.target = dense_flex_attention
                replaced += 1
        if replaced:
            module.recompile()
            count += replaced
    return count


def allow_neuron_tensors() -> None:
    """flex_attention checks its inputs' device against a fixed list (cuda, cpu, xpu, hpu, mps)
    before Dynamo sees the call; the neuron device is accepted too (idempotent)."""
    import torch.nn.attention.flex_attention as module

    check = module._validate_device
    if getattr(check, "_neuron", False):
        return

    def _validate_device(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor) -> None:
        if query.device.type == "neuron":
            return
        check(query, key, value)

    _validate_device._neuron = True  # type: ignore[attr-defined]
    module._validate_device = _validate_device
