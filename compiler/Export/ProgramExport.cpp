// Serializes nisa instructions 1:1 into runtime::Program (buffers, instructions, origins).
#include "compiler/Export/ProgramExport.h"
#include "dialects/Common/IsaFields.h"
#include "dialects/Common/LoopTerms.h"
#include "dialects/NIsa/IR/NIsaOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cstring>

using namespace mlir;
namespace rt = neuron::runtime;
using neuron::ntile::MemSpace;

namespace neuron::compiler {
namespace {

std::optional<rt::DType> toDType(Type t) {
  if (t.isF32())
    return rt::DType::F32;
  if (t.isBF16())
    return rt::DType::BF16;
  if (t.isF16())
    return rt::DType::F16;
  if (t.isFloat8E4M3FN()) // torch.float8_e4m3fn, NKI's float8_e4m3fn
    return rt::DType::F8E4M3FN;
  if (t.isFloat8E5M2()) // torch.float8_e5m2, NKI's float8_e5m2
    return rt::DType::F8E5M2;
  // Integers by width and signedness: ui8 is the program's U8 (loaded as 0..255), never I8;
  // other unsigned or signed-only types have no encoding.
  if (t.isUnsignedInteger(8))
    return rt::DType::U8;
  if (t.isUnsignedInteger(32)) // NKI's uint32 (indices of max8 / nc_find_index8, counts)
    return rt::DType::U32;
  if (t.isUnsignedInteger(16)) // NKI's uint16 (local_gather's indices)
    return rt::DType::U16;
  if (t.isSignlessInteger(64))
    return rt::DType::I64;
  if (t.isSignlessInteger(32))
    return rt::DType::I32;
  if (t.isSignlessInteger(8))
    return rt::DType::I8;
  if (t.isSignlessInteger(1))
    return rt::DType::Bool;
  return std::nullopt;
}

/// Little-endian bytes of every element (splats expanded).
std::vector<uint8_t> elementBytes(ElementsAttr attr, rt::DType dtype) {
  std::vector<uint8_t> bytes;
  int64_t width = rt::dtypeSize(dtype);
  auto dense = cast<DenseElementsAttr>(attr);
  Type et = dense.getElementType();
  // Whole-byte elements are stored little-endian, packed, as the program wants them:
  // copy the raw data (a splat holds one element).
  if (!et.isInteger(1) && (int64_t)et.getIntOrFloatBitWidth() == 8 * width) {
    ArrayRef<char> raw = dense.getRawData();
    int64_t n = dense.getNumElements();
    bytes.resize(n * width);
    if (dense.isSplat())
      for (int64_t i = 0; i < n; ++i)
        std::memcpy(bytes.data() + i * width, raw.data(), width);
    else
      std::memcpy(bytes.data(), raw.data(), bytes.size());
    return bytes;
  }
  auto append = [&](uint64_t raw) {
    for (int64_t i = 0; i < width; ++i)
      bytes.push_back((raw >> (8 * i)) & 0xff);
  };
  if (isa<FloatType>(et)) {
    for (APFloat v : dense.getValues<APFloat>())
      append(v.bitcastToAPInt().getZExtValue());
  } else {
    bool zeroExtend = et.isInteger(1) || et.isUnsignedInteger(); // i1 and ui8 are unsigned
    for (APInt v : dense.getValues<APInt>())
      append(zeroExtend ? v.getZExtValue() : v.getSExtValue());
  }
  return bytes;
}

class Exporter {
public:
  explicit Exporter(rt::Program &program) : program(program) {}
  LogicalResult run(func::FuncOp func);
  LogicalResult block(Block &body);

private:
  FailureOr<rt::AccessPattern> pattern(Operation *op, nisa::AccessPatternAttr ap);
  LogicalResult instruction(Operation *op);
  uint32_t origin(Location loc);
  FailureOr<uint16_t> group(nisa::CollectiveOp op);

  rt::Program &program;
  llvm::StringMap<uint32_t> origins;
  int64_t iterations = 1; // instances of an instruction in the current loop nest
};

FailureOr<rt::AccessPattern> Exporter::pattern(Operation *op, nisa::AccessPatternAttr ap) {
  rt::AccessPattern out;
  std::optional<rt::DType> dtype = toDType(ap.getElementType());
  if (!dtype)
    return op->emitOpError("element type ") << ap.getElementType()
                                            << " has no program encoding";
  out.dtype = *dtype;
  out.space = ap.getSpace() == MemSpace::hbm    ? rt::MemSpace::Hbm
              : ap.getSpace() == MemSpace::sbuf ? rt::MemSpace::Sbuf
                                                : rt::MemSpace::Psum;
  if (out.space == rt::MemSpace::Hbm)
    out.buffer = ap.getIndex();
  else
    out.partition = ap.getIndex();
  out.core = uint8_t(ap.getCore());
  out.offset = ap.getOffset();
  for (const LoopTerm &t : unpackTerms(ap.getTerms()))
    out.offsetTerms.push_back({(uint8_t)t.level, t.coef, t.modulus});
  for (size_t i = 0; i < ap.getRank(); ++i)
    out.dims.push_back({ap.getStride(i), ap.getSize(i)});
  return out;
}

/// "aten.mm.default at model.py:12", deduplicated.
uint32_t Exporter::origin(Location loc) {
  std::string text;
  if (auto name = dyn_cast<NameLoc>(loc)) {
    text = name.getName().str();
    if (auto file = dyn_cast<FileLineColLoc>(name.getChildLoc()))
      text += " at " + file.getFilename().str() + ":" + std::to_string(file.getLine());
  }
  auto [it, inserted] = origins.try_emplace(text, program.origins.size());
  if (inserted)
    program.origins.push_back(text);
  return it->second;
}

/// The index of the collective's process group in Program::groups (added on first use).
FailureOr<uint16_t> Exporter::group(nisa::CollectiveOp op) {
  for (size_t i = 0; i < program.groups.size(); ++i) {
    if (program.groups[i].name != op.getGroup())
      continue;
    if (program.groups[i].size != op.getGroupSize())
      return op.emitOpError("group \"") << op.getGroup() << "\" has " << op.getGroupSize()
                                         << " ranks here but " << program.groups[i].size
                                         << " in an earlier collective";
    return (uint16_t)i;
  }
  if (program.groups.size() > 0xffff)
    return op.emitOpError("more than 65536 process groups");
  program.groups.push_back({op.getGroup().str(), (int32_t)op.getGroupSize()});
  return (uint16_t)(program.groups.size() - 1);
}

LogicalResult Exporter::instruction(Operation *op) {
  rt::Instruction inst;
  auto instruction = cast<nisa::InstructionOpInterface>(op);
  inst.opcode = instruction.getOpcode();
  inst.queue = instruction.getQueueId();
  inst.origin = origin(op->getLoc());
  FailureOr<rt::AccessPattern> dst = pattern(op, instruction.getWritePattern());
  if (failed(dst))
    return failure();
  inst.dst = *dst;
  auto src = [&](nisa::AccessPatternAttr ap) -> LogicalResult {
    FailureOr<rt::AccessPattern> p = pattern(op, ap);
    if (failed(p))
      return failure();
    inst.srcs.push_back(*p);
    return success();
  };
  auto alu = [](AluOp a) { return toRuntime(a); };
  LogicalResult ok =
      llvm::TypeSwitch<Operation *, LogicalResult>(op)
          .Case([&](nisa::DmaCopyOp o) {
            return src(o.getSrc());
          })
          .Case([&](nisa::TransposeOp o) {
            return src(o.getSrc());
          })
          .Case([&](nisa::DmaTransposeOp o) {
            return src(o.getSrc());
          })
          .Case([&](nisa::MemsetOp o) {
            inst.imm[0] = o.getValue().convertToDouble();
            return success();
          })
          .Case([&](nisa::MatmulOp o) {
            inst.accumulate = o.getAccumulate();
            if (!o->hasAttr("nisa.uncounted")) // (a kernel's that declares its FLOPs)
              program.flops += iterations * 2 * o.getStationary().getSize(0) *
                               o.getStationary().getFreeSize() * o.getMoving().getFreeSize();
            return success(succeeded(src(o.getStationary())) && succeeded(src(o.getMoving())));
          })
          .Case([&](nisa::ActivationOp o) -> LogicalResult {
            inst.func = toRuntime(o.getFn());
            inst.imm[0] = o.getScale().convertToDouble();
            inst.imm[1] = o.getBias().convertToDouble();
            inst.scaleTile = bool(o.getScaleTileAttr());
            inst.biasTile = bool(o.getBiasTileAttr());
            if (failed(src(o.getSrc())))
              return failure();
            if (inst.scaleTile && failed(src(o.getScaleTileAttr())))
              return failure();
            if (inst.biasTile && failed(src(o.getBiasTileAttr())))
              return failure();
            // Row sums: written, the last source (Program.h).
            inst.accumulate = bool(o.getAccumAttr());
            if (inst.accumulate && failed(src(o.getAccumAttr())))
              return failure();
            return success();
          })
          .Case([&](nisa::TensorTensorOp o) {
            inst.alu = alu(o.getOp());
            return success(succeeded(src(o.getLhs())) && succeeded(src(o.getRhs())));
          })
          .Case([&](nisa::TensorScalarOp o) {
            inst.alu = alu(o.getOp());
            inst.imm[0] = o.getScalar().convertToDouble();
            inst.reverse = o.getReverse();
            if (auto op2 = o.getOp2()) {
              inst.twoOps = true;
              inst.alu2 = alu(*op2);
              inst.imm[1] = o.getScalar2()->convertToDouble();
              inst.reverse2 = o.getReverse2();
            }
            return src(o.getSrc());
          })
          .Case([&](nisa::ScalarTensorTensorOp o) -> LogicalResult {
            inst.alu = alu(o.getOp0());
            inst.alu2 = alu(o.getOp1());
            inst.imm[0] = o.getScalar().convertToDouble();
            inst.reverse = o.getReverse0();
            inst.reverse2 = o.getReverse1();
            inst.scaleTile = bool(o.getScalarTileAttr());
            if (failed(src(o.getData())) || failed(src(o.getOther())))
              return failure();
            return inst.scaleTile ? src(o.getScalarTileAttr()) : success();
          })
          .Case([&](nisa::TensorTensorScanOp o) {
            inst.alu = alu(o.getOp0());
            inst.alu2 = alu(o.getOp1());
            inst.imm[0] = o.getInitial().convertToDouble();
            inst.scaleTile = bool(o.getInitialTileAttr());
            if (failed(src(o.getData0())) || failed(src(o.getData1())))
              return failure();
            return inst.scaleTile ? src(o.getInitialTileAttr()) : success();
          })
          .Case([&](nisa::BnStatsOp o) { return src(o.getSrc()); })
          .Case([&](nisa::BnAggrOp o) { return src(o.getSrc()); })
          .Case([&](nisa::TensorReduceOp o) {
            inst.alu = alu(o.getOp());
            inst.axes = o.getSrc().getRank() - 1;
            return src(o.getSrc());
          })
          .Case([&](nisa::SelectOp o) {
            return success(succeeded(src(o.getCondition())) && succeeded(src(o.getOnTrue())) &&
                           succeeded(src(o.getOnFalse())));
          })
          .Case([&](nisa::DmaGatherOp o) {
            return success(succeeded(src(o.getTable())) && succeeded(src(o.getIndices())));
          })
          .Case([&](nisa::DmaScatterOp o) {
            if (auto a = o.getAccumulate()) {
              inst.accumulate = true;
              inst.alu = alu(*a);
            }
            return success(succeeded(src(o.getSrc())) && succeeded(src(o.getIndices())));
          })
          .Case([&](nisa::TensorCopyOp o) {
            return src(o.getSrc());
          })
          .Case([&](nisa::RandomOp o) {
            inst.imm[0] = double(o.getStream());
            return success();
          })
          .Case([&](nisa::InstOp o) -> LogicalResult {
            if (failed(applyIsaFields(o, o.getFields(), inst)))
              return failure();
            for (nisa::AccessPatternAttr ap : o.getSrcs().getAsRange<nisa::AccessPatternAttr>())
              if (failed(src(ap)))
                return failure();
            return success();
          })
          .Case([&](nisa::CollectiveOp o) -> LogicalResult {
            inst.collective = toRuntime(o.getKind());
            inst.alu = alu(o.getReduce());
            FailureOr<uint16_t> g = group(o);
            if (failed(g))
              return failure();
            inst.group = *g;
            return src(o.getSrc());
          })
          .Default([](Operation *op) { return op->emitOpError("has no program encoding"); });
  if (failed(ok))
    return failure();
  if (auto waits = op->getAttrOfType<DenseI32ArrayAttr>("waits"))
    for (size_t i = 0; i + 1 < (size_t)waits.size(); i += 2)
      inst.waits.push_back({(uint16_t)waits[i], (int64_t)waits[i + 1], {}});
  if (auto terms = op->getAttrOfType<DenseI64ArrayAttr>("wait_terms"))
    for (size_t i = 0; i + 3 < (size_t)terms.size(); i += 4)
      inst.waits[terms[i]].valueTerms.push_back({(uint8_t)terms[i + 1], terms[i + 2], terms[i + 3]});
  program.instructions.push_back(std::move(inst));
  return success();
}

LogicalResult Exporter::run(func::FuncOp func) {
  // The useful FLOPs declared by the graph's kernels (their matmuls are not counted).
  if (auto declared = func->getAttrOfType<IntegerAttr>("neuron.kernel_flops"))
    program.flops += uint64_t(declared.getInt());
  return block(func.getBody().front());
}

LogicalResult Exporter::block(Block &body) {
  for (Operation &op : body) {
    if (auto loop = dyn_cast<nisa::LoopOp>(op)) {
      size_t index = program.loops.size();
      program.loops.push_back({(uint32_t)program.instructions.size(), 0, loop.getCount()});
      int64_t outer = iterations;
      iterations *= loop.getCount();
      if (failed(block(loop.getBody().front())))
        return failure();
      iterations = outer;
      program.loops[index].end = (uint32_t)program.instructions.size();
      if (program.loops[index].end == program.loops[index].begin)
        program.loops.resize(index); // no instructions: nothing to iterate
      continue;
    }
    if (auto buf = dyn_cast<nisa::BufferOp>(op)) {
      if (buf.getId() != program.buffers.size())
        return buf.emitOpError("buffer ids must count up from 0 in declaration order");
      auto type = cast<RankedTensorType>(buf.getType());
      std::optional<rt::DType> dtype = toDType(type.getElementType());
      if (!dtype)
        return buf.emitOpError("element type ") << type.getElementType()
                                                << " has no program encoding";
      rt::BufferDecl decl;
      decl.name = "buffer" + std::to_string(buf.getId());
      decl.kind = static_cast<rt::BufferDecl::Kind>(buf.getKind());
      decl.index = buf.getIndex();
      decl.dtype = *dtype;
      decl.shape.assign(type.getShape().begin(), type.getShape().end());
      if (auto value = buf.getValue())
        decl.data = elementBytes(*value, *dtype);
      program.buffers.push_back(std::move(decl));
    } else if (isa<nisa::InstructionOpInterface>(op)) {
      if (failed(instruction(&op)))
        return failure();
    }
  }
  return success();
}

} // namespace

LogicalResult exportProgram(ModuleOp module, const std::string &target, rt::Program &program) {
  program = rt::Program{};
  program.target = target;
  auto funcs = llvm::to_vector(module.getOps<func::FuncOp>());
  if (funcs.size() != 1)
    return module.emitError("expected one function of nisa instructions, found ")
           << funcs.size();
  return Exporter(program).run(funcs.front());
}

} // namespace neuron::compiler
