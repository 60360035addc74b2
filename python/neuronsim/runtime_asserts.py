"""Runtime asserts in compiled graphs: torch._assert_async(cond[, msg]), and the error checks
of the linear-algebra ops (aten._linalg_check_errors(info, api_name, is_matrix=...)).

The rule: an assert node is taken out of the graph and its condition becomes an extra
output of the compiled program, so the condition is computed on the simulated device with
the rest of the graph; after each run the host checks it and raises eager's RuntimeError
(the assert's message, or eager's default text) where it does not hold. The outputs the
caller sees are the graph's own.

A linear-algebra error check is hoisted the same way: its `info` tensor (computed on the
device by the op's decomposition, linalg.py) becomes an extra output, and after each run the
host calls eager's own aten._linalg_check_errors on it, which raises eager's exception type
and message (the failing batch element and minor included). AOTAutograd wraps the check in
with_effects(token, op, ...), threading an effect token from a graph input to a graph output
(at run time the input is None and the output is dropped): once the checks are hoisted, the
token input is removed from the compiled graph and its output is the literal None.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx

aten = torch.ops.aten

_ASSERTS = {aten._assert_async.default, aten._assert_async.msg}
_DEFAULT_MESSAGE = "Expected Tensor with single nonzero value, but got zero"
_LINALG_CHECK = aten._linalg_check_errors.default


class _AssertCheck:
    """torch._assert_async: raises RuntimeError(message) where the condition is false."""

    def __init__(self, message: str):
        self.message = message

    def __call__(self, condition: torch.Tensor) -> None:
        if condition.numel() != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        if not bool(condition.reshape(()).item()):
            raise RuntimeError(self.message)


class _LinalgCheck:
    """aten._linalg_check_errors(info, api_name, is_matrix=...), run by eager on the host."""

    def __init__(self, api_name: str, is_matrix: bool):
        self.api_name = api_name
        self.is_matrix = is_matrix

    def __call__(self, info: torch.Tensor) -> None:
        torch.ops.aten._linalg_check_errors(
            info.to(torch.int32), self.api_name, is_matrix=self.is_matrix
        )


def _linalg_check(node: torch.fx.Node) -> tuple[torch.fx.Node, _LinalgCheck] | None:
    """(info node, check) of a _linalg_check_errors node, plain or wrapped in with_effects."""
    args, kwargs = node.args, dict(node.kwargs)
    if node.target is torch.ops.higher_order.with_effects:
        if len(args) < 2 or args[1] is not _LINALG_CHECK:
            return None
        args = args[2:]
    elif node.target is not _LINALG_CHECK:
        return None
    info = args[0]
    api_name = args[1] if len(args) > 1 else kwargs["api_name"]
    is_matrix = args[2] if len(args) > 2 else kwargs["is_matrix"]
    return info, _LinalgCheck(api_name, is_matrix)


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


def _remove_effect(node: torch.fx.Node) -> None:
    """Erases a with_effects node: the token it returned (getitem 0) is its input token."""
    for user in list(node.users):
        if user.target is operator.getitem and user.args[1] == 0:
            user.replace_all_uses_with(node.args[0])
            node.graph.erase_node(user)
    node.graph.erase_node(node)


@dataclass
class HostChecks:
    """The hoisted checks of a graph, in the order of the extra outputs, and the positions of
    the graph inputs removed with them (effect tokens)."""

    checks: list[Callable[[torch.Tensor], None]] = field(default_factory=list)
    removed_inputs: list[int] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.checks or self.removed_inputs)

    def graph_inputs(self, inputs: Sequence[Any]) -> list[Any]:
        """The inputs the compiled graph takes, of the caller's."""
        removed = set(self.removed_inputs)
        return [x for i, x in enumerate(inputs) if i not in removed]


def _remove_tokens(gm: torch.fx.GraphModule, tokens: list[torch.fx.Node]) -> list[int]:
    """Token placeholders of hoisted checks: returned as None, then removed from the inputs."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    output = next(n for n in gm.graph.nodes if n.op == "output")
    removed = []
    for token in dict.fromkeys(tokens):
        if token.op != "placeholder" or set(token.users) - {output}:
            continue
        output.args = tuple(
            torch.fx.node.map_arg(a, lambda n, t=token: None if n is t else n)
            for a in output.args
        )
        removed.append(placeholders.index(token))
        gm.graph.erase_node(token)
    return sorted(removed)


def hoist_runtime_asserts(gm: torch.fx.GraphModule) -> HostChecks:
    """Removes the graph's assert and linear-algebra check nodes and appends each condition
    (or info tensor) to its outputs; returns their host checks, in output order (empty if
    the graph has none)."""
    conditions, hoisted, tokens = [], HostChecks(), []
    for node in list(gm.graph.nodes):
        if node.op != "call_function":
            continue
        if node.target in _ASSERTS:
            message = node.args[1] if len(node.args) > 1 else node.kwargs.get("assert_msg")
            conditions.append(node.args[0])
            hoisted.checks.append(_AssertCheck(message or _DEFAULT_MESSAGE))
            gm.graph.erase_node(node)
        elif (linalg := _linalg_check(node)) is not None:
            conditions.append(linalg[0])
            hoisted.checks.append(linalg[1])
            if node.target is torch.ops.higher_order.with_effects:
                tokens.append(node.args[0])
                _remove_effect(node)
            else:
                gm.graph.erase_node(node)
    if not hoisted:
        return hoisted
    output = next(n for n in gm.graph.nodes if n.op == "output")
    output.args = ((*output.args[0], *conditions),)
    hoisted.removed_inputs = _remove_tokens(gm, tokens)
    gm.graph.lint()
    gm.recompile()
    return hoisted


class CheckedAsserts:
    """The compiled graph with its hoisted checks run after each run (boxed calls)."""

    def __init__(self, compiled: Callable[[list[Any]], list[Any]], hoisted: HostChecks):
        self.compiled = compiled
        self.hoisted = hoisted
        self._boxed_call = True

    def __call__(self, args: list[Any]) -> list[Any]:
        inputs = self.hoisted.graph_inputs(args)
        args.clear()
        outputs = list(self.compiled(inputs))
        count = len(self.hoisted.checks)
        if not count:
            return outputs
        for value, check in zip(outputs[-count:], self.hoisted.checks):
            check(value)
        return outputs[:-count]
