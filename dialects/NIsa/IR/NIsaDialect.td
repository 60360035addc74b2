// The nisa dialect: one op per NeuronCore instruction, with physical addresses and semaphores.
#ifndef NISA_DIALECT_TD
#define NISA_DIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "dialects/Common/NeuronEnums.td"
include "dialects/NIsa/IR/NIsaEnums.td"

def NIsa_Dialect : Dialect {
  let name = "nisa";
  let cppNamespace = "::neuron::nisa";
  let summary = "NeuronCore instructions";
  let description = [{
    Each op is one instruction on one queue: `queue` 0 = Tensor engine, 1 = Vector,
    2 = Scalar, 3 = GpSimd, 4..19 = DMA queues 0..15, 20 = the collective
    engine; on a logical core of two physical cores, 21..40 are core 1's Tensor ..
    DMA queues (runtime::queueOf), whose SBUF/PSUM patterns say `core 1`. Every queue counts its completed instructions in its own semaphore;
    `wait [q, n, ...]` holds an instruction until queue q has completed n
    instructions. Operands are physical
    access patterns; HBM buffers are declared by `nisa.buffer`. A function of
    nisa ops serializes 1:1 to the program the simulator runs.
  }];
  let useDefaultAttributePrinterParser = 1;
}

class NIsa_Op<string mnemonic, list<Trait> traits = []>
    : Op<NIsa_Dialect, mnemonic, traits>;


def NIsa_AccessPatternAttr : AttrDef<NIsa_Dialect, "AccessPattern"> {
  let mnemonic = "ap";
  let summary = "a physical access pattern";
  let description = [{
    `#nisa.ap<hbm[3] + 0, [[200, 3], [1, 200]], f32>`: buffer 3, element offset 0.
    `#nisa.ap<sbuf[0] + 1024, [[1, 3], [1, 200]], f32>`: partition 0, byte offset
    1024 in each partition; the first pair is the partition dimension
    [partition stride, partitions], the rest are free dimensions in elements.
    `#nisa.ap<sbuf[0] + 1024 + 512*(iv1 mod 2), [[1, 128], [1, 128]], bf16>`: the
    byte offset rotates over two buffers with the iterations of the second loop.
    `#nisa.ap<sbuf[0] + 0, [[1, 128], [1, 512]], bf16, core 1>`: the SBUF of physical
    core 1 of a logical core (`core` is printed when not 0; HBM is shared: core 0).
  }];
  let parameters = (ins "::neuron::ntile::MemSpace":$space, "uint32_t":$index,
                        "int64_t":$offset, ArrayRefParameter<"int64_t">:$dims,
                        "mlir::Type":$elementType,
                        OptionalArrayRefParameter<"int64_t">:$terms,
                        DefaultValuedParameter<"uint32_t", "0">:$core);
  let builders = [
    AttrBuilder<(ins "::neuron::ntile::MemSpace":$space, "uint32_t":$index, "int64_t":$offset,
                     "llvm::ArrayRef<int64_t>":$dims, "mlir::Type":$elementType), [{
      return $_get($_ctxt, space, index, offset, dims, elementType, llvm::ArrayRef<int64_t>{}, 0u);
    }]>
  ];
  let hasCustomAssemblyFormat = 1;
  let extraClassDeclaration = [{
    size_t getRank() const { return getDims().size() / 2; }
    int64_t getStride(size_t i) const { return getDims()[2 * i]; }
    int64_t getSize(size_t i) const { return getDims()[2 * i + 1]; }
    int64_t getNumElements() const;
    /// Elements per partition (SBUF/PSUM): the product of the free sizes.
    int64_t getFreeSize() const;
  }];
}

#endif // NISA_DIALECT_TD
