"""The NKI import hook (README: "NKI kernels"): when no real NKI is installed, `import nki`,
`import nki.language`, `import neuronxcc.nki`, `from neuronxcc import nki`, ... resolve to
neuronsim.nki. Installed at interpreter start by `neuronsim-nki.pth` (shipped in the wheel) and
by `import neuronsim`; `NEURONSIM_NKI_IMPORT=0` turns it off. It imports nothing heavy: the
target modules (and torch) load when a kernel module is first imported.

The finder goes first in sys.meta_path (submodules such as `nki.isa` must not be found again
as files of neuronsim/nki), but steps aside when a real `nki` or `neuronxcc` package is on
sys.path: that one wins."""

from __future__ import annotations

import importlib.machinery
import os
import sys
import types

# (no importlib.abc: the finder and loader are duck-typed, so that the hook costs next to
# nothing at interpreter start)

# What each NKI module name resolves to (None: an empty package made here).
ALIASES = {
    "nki": "neuronsim.nki",
    "nki.language": "neuronsim.nki.language",
    "nki.isa": "neuronsim.nki.isa",
    "nki.typing": "neuronsim.nki.typing",
    "nki.isa.constants": "neuronsim.nki.isa_constants",
    "nki.collectives": "neuronsim.nki.collectives",
    "nki.compiler": "neuronsim.nki.compiler",
    "neuronxcc.nki.compiler": "neuronsim.nki.compiler",
    "neuronxcc": None,
    "neuronxcc.nki": "neuronsim.nki.legacy",
    "neuronxcc.nki.language": "neuronsim.nki.language",
    "neuronxcc.nki.isa": "neuronsim.nki.isa",
    "neuronxcc.nki.typing": "neuronsim.nki.typing",
    "neuronxcc.nki.language.typing": "neuronsim.nki.typing",
}


class _Loader:
    def __init__(self, target: str | None) -> None:
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        if self.target is None:
            module = types.ModuleType(spec.name, "NeuronSim's stand-in for neuronxcc "
                                      "(only its nki subpackage)")
            module.__path__ = []  # a package
            return module
        import importlib

        return importlib.import_module(self.target)

    def exec_module(self, module: types.ModuleType) -> None:
        pass


_decided: dict[str, bool] = {}


class NkiFinder:
    def find_spec(self, fullname: str, path: object = None, target: object = None
                  ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in ALIASES or os.environ.get("NEURONSIM_NKI_IMPORT", "1") == "0":
            return None
        top = fullname.split(".")[0]
        if top not in _decided:
            # a real NKI (or neuronxcc) on sys.path wins
            _decided[top] = importlib.machinery.PathFinder.find_spec(top) is None
        if not _decided[top]:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Loader(ALIASES[fullname]),
                                              is_package=True)


def install() -> None:
    """Installs the finder once."""
    if os.environ.get("NEURONSIM_NKI_IMPORT", "1") == "0":
        return
    if not any(isinstance(f, NkiFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, NkiFinder())


def installed() -> bool:
    return any(isinstance(f, NkiFinder) for f in sys.meta_path)
