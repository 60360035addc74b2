"""as_strided of a view inside the graph, read from the view's base.

aten.as_strided(x, size, stride, offset) addresses x's *storage*: when x is a view of another
graph value (x[2:], x.t(), ...), that is the base's storage, which the view's own row-major
elements are not. The compiled graph holds values, not storages, so such an as_strided is
rewritten to address the base itself, with the view's storage offset made explicit: exact
where the base is a contiguous value with offset 0 (its row-major elements are its storage).
The others stay as they are (partition.py reports them as unsupported).
"""

from __future__ import annotations

import torch
import torch.fx
from torch.multiprocessing.reductions import StorageWeakRef

aten = torch.ops.aten

_STRIDED = {aten.as_strided.default, aten.as_strided_copy.default}

# Ops whose result is a view of their first argument's storage.
_VIEWS = {
    aten.slice.Tensor, aten.select.int, aten.view.default, aten.permute.default,
    aten.transpose.int, aten.t.default, aten.expand.default, aten.unsqueeze.default,
    aten.squeeze.dim, aten.squeeze.dims, aten.squeeze.default, aten.alias.default,
    aten.diagonal.default, aten.as_strided.default, aten.unfold.default,
    aten.narrow.default, aten.split.Tensor, aten.unbind.int,
}  # fmt: skip


def _val(node: object) -> torch.Tensor | None:
    val = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    return val if isinstance(val, torch.Tensor) else None


def _storage_base(node: torch.fx.Node) -> torch.fx.Node | None:
    """The value at the root of node's chain of views, if it is contiguous with offset 0
    and holds the same storage as node."""
    view = _val(node)
    root = node
    while isinstance(root, torch.fx.Node) and root.op == "call_function" and root.target in _VIEWS:
        root = root.args[0]
    base = _val(root)
    if root is node or view is None or base is None:
        return None
    if not base.is_contiguous() or base.storage_offset() != 0:
        return None
    try:
        same = StorageWeakRef(view.untyped_storage()) == StorageWeakRef(base.untyped_storage())
    except (NotImplementedError, RuntimeError):
        return None
    return root if same else None


def rebase_strided_views(gm: torch.fx.GraphModule) -> int:
    """Rewrites, in place, each as_strided of a view to the view's base (see the module
    docstring). Returns how many it rewrote."""
    rewritten = 0
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target not in _STRIDED or len(node.args) < 3:
            continue
        base = _storage_base(node.args[0])
        if base is None:
            continue
        offset = node.args[3] if len(node.args) > 3 else node.kwargs.get("storage_offset")
        if offset is None:
            offset = _val(node.args[0]).storage_offset()
        node.args = (base, node.args[1], node.args[2], offset)
        node.kwargs = {}
        rewritten += 1
    if rewritten:
        gm.graph.eliminate_dead_code()
        gm.recompile()
    return rewritten
