// Functional memory of one simulated core: HBM buffers, SBUF, PSUM on the host.
#pragma once

#include "runtime/Program.h"
#include "runtime/StridedView.h"
#include "runtime/Target.h"

#include <cstdint>
#include <vector>

namespace neuron::runtime {

class Memory {
public:
  /// Binds Input/Output buffers to the caller's pointers (inputs[index],
  /// outputs[index]), Constant buffers to their data, and allocates Internal
  /// buffers, SBUF and PSUM zero-filled (or 0xFF-filled when `poison`, which
  /// reads back as NaN in float dtypes). Throws SimulationError on a missing
  /// pointer or a constant whose data does not match its declaration.
  Memory(const Program &program, const Target &target,
         const std::vector<const void *> &inputs,
         const std::vector<void *> &outputs, bool poison);
  ~Memory();
  Memory(const Memory &) = delete;
  Memory &operator=(const Memory &) = delete;

  /// The host view of a checked access pattern.
  View view(const AccessPattern &ap) const;

private:
  std::vector<uint8_t *> hbm_;
  std::vector<uint8_t *> owned_; // freed in the destructor
  uint8_t *sbuf_ = nullptr, *psum_ = nullptr;
  int64_t sbufPartBytes_ = 0, psumPartBytes_ = 0;
};

} // namespace neuron::runtime
