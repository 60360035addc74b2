"""Runtime asserts in compiled graphs: torch._assert_async(cond[, msg]).

The rule: an assert node is taken out of the graph and its condition becomes an extra
output of the compiled program, so the condition is computed on the simulated device with
the rest of the graph; after each run the host checks it and raises eager's RuntimeError
(the assert's message, or eager's default text) where it does not hold. The outputs the
caller sees are the graph's own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.fx

aten = torch.ops.aten

_ASSERTS = {aten._assert_async.default, aten._assert_async.msg}
_DEFAULT_MESSAGE = "Expected Tensor with single nonzero value, but got zero"


def keep_message_free_asserts(gm: torch.fx.GraphModule) -> None:
    """Gives each torch._assert_async(cond) of a Dynamo graph eager's default message:
    AOTAutograd drops the message-free form as free of side effects, the other it keeps."""
    changed = False
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is torch._assert_async:
            if len(node.args) == 1 and not node.kwargs:
                node.args = (node.args[0], _DEFAULT_MESSAGE)
                changed = True
    if changed:
        gm.recompile()


def hoist_runtime_asserts(gm: torch.fx.GraphModule) -> list[str]:
    """Removes the graph's assert nodes and appends each condition to its outputs; returns
    their messages, in output order (empty if the graph has none)."""
    asserts = [n for n in gm.graph.nodes if n.op == "call_function" and n.target in _ASSERTS]
    if not asserts:
        return []
    output = next(n for n in gm.graph.nodes if n.op == "output")
    results = output.args[0]
    conditions, messages = [], []
    for node in asserts:
        condition = node.args[0]
        message = node.args[1] if len(node.args) > 1 else node.kwargs.get("assert_msg")
        conditions.append(condition)
        messages.append(message or _DEFAULT_MESSAGE)
        gm.graph.erase_node(node)
    output.args = ((*results, *conditions),)
    gm.graph.lint()
    gm.recompile()
    return messages


class CheckedAsserts:
    """The compiled graph with its hoisted asserts checked after each run (boxed calls)."""

    def __init__(self, compiled: Callable[[list[Any]], list[Any]], messages: list[str]):
        self.compiled = compiled
        self.messages = messages
        self._boxed_call = True

    def __call__(self, args: list[Any]) -> list[Any]:
        outputs = list(self.compiled(args))
        count = len(self.messages)
        for condition, message in zip(outputs[-count:], self.messages):
            if condition.numel() != 1:
                raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
            if not bool(condition.reshape(()).item()):
                raise RuntimeError(message)
        return outputs[:-count]
