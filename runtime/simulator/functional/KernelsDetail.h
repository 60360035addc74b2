// Function multi-versioning of the kernels (see Kernels.h).
#pragma once

// GCC on x86-64: build each kernel for the baseline ISA, x86-64-v3 (AVX2,
// FMA, BMI2) and x86-64-v4 (AVX-512); an ifunc resolver picks one when the
// library loads. Kernels that need other vector widths per ISA define the
// versions themselves (target attributes under NEURON_KERNEL_CLONES).
// Define NEURON_NO_KERNEL_CLONES to build the baseline only.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) &&         \
    defined(__ELF__) && !defined(NEURON_NO_KERNEL_CLONES)
#define NEURON_KERNEL_CLONES 1
#define NEURON_CLONES                                                          \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define NEURON_KERNEL_CLONES 0
#define NEURON_CLONES
#endif
