"""The user's source line of an FX node, taken from its stack trace."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

import torch
import torch.fx

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>.+)$')


@dataclass(frozen=True)
class SourceFrame:
    file: str
    line: int
    function: str
    code: str

    def __str__(self) -> str:
        text = f"{os.path.basename(self.file)}:{self.line} in {self.function}"
        return f"{text}: {self.code}" if self.code else text


def _frames(stack_trace: str) -> list[SourceFrame]:
    frames: list[SourceFrame] = []
    lines = stack_trace.splitlines()
    for i, text in enumerate(lines):
        match = _FRAME.match(text)
        if not match:
            continue
        code = lines[i + 1].strip() if i + 1 < len(lines) else ""
        if _FRAME.match(code) or set(code) <= set("^~ "):
            code = ""
        frames.append(
            SourceFrame(match["file"], int(match["line"]), match["function"].strip(), code)
        )
    return frames


def user_frame(node: torch.fx.Node) -> SourceFrame | None:
    """The innermost frame of the node's stack trace that is not inside torch itself."""
    stack_trace = node.meta.get("stack_trace")
    if not stack_trace:
        return None
    for frame in reversed(_frames(stack_trace)):
        if not os.path.abspath(frame.file).startswith(_TORCH_DIR):
            return frame
    return None


def user_source(node: torch.fx.Node) -> str:
    """'file.py:12 in forward: code', or '' when the node has no user frame."""
    frame = user_frame(node)
    return str(frame) if frame else ""
