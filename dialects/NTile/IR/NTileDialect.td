// The ntile dialect: tiles in HBM/SBUF/PSUM, DMA with access patterns, per-engine tile ops.
#ifndef NTILE_DIALECT_TD
#define NTILE_DIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "dialects/Common/NeuronEnums.td"
include "dialects/NTile/IR/NTileEnums.td"

def NTile_Dialect : Dialect {
  let name = "ntile";
  let cppNamespace = "::neuron::ntile";
  let summary = "Tile-level ops on memrefs in HBM, SBUF and PSUM";
  let description = [{
    Buffers are memrefs whose memory space is `#ntile.mem<hbm|sbuf|psum>`. SBUF and
    PSUM tiles are rank 2: the partition dimension (<= 128) first, then the free
    dimension. Data moves by `ntile.dma` with access patterns; compute ops take whole
    tiles and name the engine that runs them by what they are.
  }];
  let useDefaultAttributePrinterParser = 1;
}

class NTile_Op<string mnemonic, list<Trait> traits = []>
    : Op<NTile_Dialect, mnemonic, traits>;

def NTile_MemSpaceAttr : EnumAttr<NTile_Dialect, NTile_MemSpace, "mem"> {
  let assemblyFormat = "`<` $value `>`";
}


// An access pattern into a memref, in elements of its row-major linearization:
// `offset` then {stride, size} pairs, outermost first.
def NTile_AccessPatternAttr : AttrDef<NTile_Dialect, "AccessPattern"> {
  let mnemonic = "ap";
  let summary = "strided access pattern: offset (plus loop terms) and [stride, size] pairs";
  let description = [{
    `#ntile.ap<0 + 128*iv0, [[200, 3], [1, 200]]>`: element offset 0 + 128 per
    iteration of the outermost enclosing `ntile.loop`, then [stride, size] pairs.
  }];
  let parameters = (ins "int64_t":$offset, ArrayRefParameter<"int64_t">:$dims,
                        OptionalArrayRefParameter<"int64_t">:$terms);
  let builders = [
    AttrBuilder<(ins "int64_t":$offset, "llvm::ArrayRef<int64_t>":$dims), [{
      return $_get($_ctxt, offset, dims, llvm::ArrayRef<int64_t>{});
    }]>
  ];
  let hasCustomAssemblyFormat = 1;
  let extraClassDeclaration = [{
    /// Number of [stride, size] pairs.
    size_t getRank() const { return getDims().size() / 2; }
    int64_t getStride(size_t i) const { return getDims()[2 * i]; }
    int64_t getSize(size_t i) const { return getDims()[2 * i + 1]; }
    int64_t getNumElements() const;
    /// Smallest and one-past-largest element index touched at iteration 0.
    std::pair<int64_t, int64_t> getExtent() const;
  }];
}

#endif // NTILE_DIALECT_TD
