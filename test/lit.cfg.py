# lit configuration for the .mlir tests: neuron-opt, FileCheck and not on the PATH.
import os

import lit.formats

config.name = "NeuronSim"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".test"]
config.excludes = ["runtime", "python", "Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py.in"]
config.substitutions.append(("neuron-opt", config.neuron_opt))
config.substitutions.append(("neuron-import", config.neuron_import))
config.environment["PATH"] = os.pathsep.join(
    [config.llvm_tools_dir, config.environment.get("PATH", "")]
)
