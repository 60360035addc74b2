// Reads a Program from its document tree; errors name the bad field.
// (The format is described at the top of Serialize.cpp.)
#include "runtime/program/JsonBrief.h"
#include "runtime/program/Loops.h"
#include "runtime/program/Serialize.h"
#include "runtime/program/SerializeDetail.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace neuron::runtime::detail {

using json = nlohmann::json;

namespace {

/// A field's location, built on the stack and formatted only on error.
struct Path {
  const Path *parent = nullptr; // nullptr: the document root
  const char *key = nullptr;    // nullptr: array element `index`
  size_t index = 0;

  Path operator/(const char *k) const { return Path{this, k, 0}; }
  Path operator[](size_t i) const { return Path{this, nullptr, i}; }

  std::string str() const {
    if (!parent) // the document root
      return "";
    std::string s = parent->str();
    if (key) {
      if (!s.empty())
        s += '.';
      s += key;
    } else {
      s += "[" + std::to_string(index) + "]";
    }
    return s;
  }
};

[[noreturn]] void bad(const Path &p, const std::string &what) {
  std::string where = p.str();
  throw FormatError((where.empty() ? std::string("program") : where) + ": " +
                    what);
}

const char *typeName(const json &j) { return j.type_name(); }

void expectObject(const json &j, const Path &p) {
  if (!j.is_object())
    bad(p, std::string("expected an object, got ") + typeName(j));
}

const json *optional(const json &obj, const char *key) {
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

const json &required(const json &obj, const char *key, const Path &p) {
  const json *v = optional(obj, key);
  if (!v)
    bad(p / key, "missing");
  return *v;
}

const json &array(const json &j, const Path &p) {
  if (!j.is_array())
    bad(p, std::string("expected an array, got ") + typeName(j));
  return j;
}

int64_t integer(const json &j, const Path &p, int64_t lo, int64_t hi) {
  if (!j.is_number_integer())
    bad(p, std::string("expected an integer, got ") + typeName(j));
  const bool tooBig =
      j.is_number_unsigned() && j.get<uint64_t>() > uint64_t(hi);
  const int64_t v = tooBig ? 0 : j.get<int64_t>();
  if (tooBig || v < lo || v > hi)
    bad(p, "value " + jsonBrief(j) + " out of range [" + std::to_string(lo) + ", " +
               std::to_string(hi) + "]");
  return v;
}

int64_t integerOr(const json &obj, const char *key, const Path &p, int64_t lo,
                  int64_t hi, int64_t dflt) {
  const json *v = optional(obj, key);
  return v ? integer(*v, p / key, lo, hi) : dflt;
}

double number(const json &j, const Path &p) {
  if (j.is_number())
    return j.get<double>();
  if (j.is_string()) {
    const auto &s = j.get_ref<const std::string &>();
    if (s == "inf")
      return std::numeric_limits<double>::infinity();
    if (s == "-inf")
      return -std::numeric_limits<double>::infinity();
    if (s == "nan")
      return std::numeric_limits<double>::quiet_NaN();
  }
  bad(p, "expected a number (or \"inf\", \"-inf\", \"nan\"), got " + jsonBrief(j));
}

bool boolean(const json &obj, const char *key, const Path &p) {
  const json *v = optional(obj, key);
  if (!v)
    return false;
  if (!v->is_boolean())
    bad(p / key, std::string("expected a boolean, got ") + typeName(*v));
  return v->get<bool>();
}

const std::string &string(const json &j, const Path &p) {
  if (!j.is_string())
    bad(p, std::string("expected a string, got ") + typeName(j));
  return j.get_ref<const std::string &>();
}

/// Parses an enum name with `parse`, or fails listing the field.
template <class E, class Parse>
E enumValue(const json &j, const Path &p, Parse parse, const char *what) {
  const std::string &s = string(j, p);
  E out;
  if (!parse(s, out))
    bad(p, "unknown " + std::string(what) + " \"" + s + "\"");
  return out;
}

DType dtypeOf(const json &j, const Path &p) {
  return enumValue<DType>(j, p, parseDType, "dtype");
}

MemSpace spaceOf(const json &j, const Path &p) {
  const std::string &s = string(j, p);
  if (s == "hbm")
    return MemSpace::Hbm;
  if (s == "sbuf")
    return MemSpace::Sbuf;
  if (s == "psum")
    return MemSpace::Psum;
  bad(p, "unknown memory space \"" + s + "\" (hbm, sbuf, psum)");
}

BufferDecl::Kind kindOf(const json &j, const Path &p) {
  const std::string &s = string(j, p);
  if (s == "input")
    return BufferDecl::Kind::Input;
  if (s == "output")
    return BufferDecl::Kind::Output;
  if (s == "internal")
    return BufferDecl::Kind::Internal;
  if (s == "constant")
    return BufferDecl::Kind::Constant;
  bad(p,
      "unknown buffer kind \"" + s + "\" (input, output, internal, constant)");
}

constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kU32Max = std::numeric_limits<uint32_t>::max();

/// [[level, coef, modulus], ...] of an instruction inside `depth` loops.
std::vector<LoopTerm> readTerms(const json &j, const Path &p, int depth) {
  array(j, p);
  std::vector<LoopTerm> terms;
  terms.reserve(j.size());
  for (size_t i = 0; i < j.size(); ++i) {
    const json &t = j[i];
    if (!t.is_array() || t.size() != 3)
      bad(p[i], "expected [level, coef, modulus], got " + jsonBrief(t));
    LoopTerm term;
    term.level = uint8_t(integer(t[0], p[i][0], 0, kMaxLoopDepth - 1));
    if (term.level >= depth)
      bad(p[i][0], "loop level " + std::to_string(term.level) +
                       ", but the instruction is inside " +
                       std::to_string(depth) + " loop(s)");
    term.coef = integer(t[1], p[i][1], -kI64Max, kI64Max);
    term.modulus = integer(t[2], p[i][2], 0, kI64Max);
    terms.push_back(term);
  }
  return terms;
}

/// [queue, register].
RegRef readRegRef(const json &j, const Path &p) {
  if (!j.is_array() || j.size() != 2)
    bad(p, "expected [queue, register], got " + jsonBrief(j));
  RegRef r;
  r.queue = int16_t(integer(j[0], p[0], 0, kNumQueues - 1));
  r.index = uint8_t(integer(j[1], p[1], 0, kRegistersPerQueue - 1));
  return r;
}

AccessPattern readAp(const json &j, const Path &p, int depth) {
  expectObject(j, p);
  AccessPattern ap;
  ap.space = spaceOf(required(j, "space", p), p / "space");
  ap.dtype = dtypeOf(required(j, "dtype", p), p / "dtype");
  ap.buffer = uint32_t(integerOr(j, "buffer", p, 0, kU32Max, 0));
  ap.partition = uint32_t(integerOr(j, "partition", p, 0, kU32Max, 0));
  ap.core = uint8_t(integerOr(j, "core", p, 0, kMaxPhysicalCores - 1, 0));
  ap.offset = integerOr(j, "offset", p, -kI64Max, kI64Max, 0);
  if (const json *terms = optional(j, "terms"))
    ap.offsetTerms = readTerms(*terms, p / "terms", depth);
  if (const json *r = optional(j, "offset_reg")) {
    ap.offsetReg = readRegRef(*r, p / "offset_reg");
    ap.offsetRegScale = integer(required(j, "offset_reg_scale", p), p / "offset_reg_scale",
                                -kI64Max, kI64Max);
  }
  const Path dp = p / "dims";
  const json &dims = array(required(j, "dims", p), dp);
  ap.dims.reserve(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    const json &d = dims[i];
    if (!d.is_array() || d.size() != 2)
      bad(dp[i], "expected [stride, size], got " + jsonBrief(d));
    ap.dims.push_back({integer(d[0], dp[i][0], -kI64Max, kI64Max),
                       integer(d[1], dp[i][1], 0, kI64Max)});
  }
  return ap;
}

/// [queue, value] or [queue, value, [[level, coef, modulus], ...]].
SemWait readWait(const json &w, const Path &p, int depth) {
  if (!w.is_array() || (w.size() != 2 && w.size() != 3))
    bad(p, "expected [queue, value] or [queue, value, terms], got " + jsonBrief(w));
  SemWait sw;
  sw.queue = uint16_t(integer(w[0], p[0], 0, kNumQueues - 1));
  sw.value = integer(w[1], p[1], -kI64Max, kI64Max);
  if (w.size() == 3)
    sw.valueTerms = readTerms(w[2], p[2], depth);
  return sw;
}

/// The keys readFields reads: an instruction's fields besides its structure (op, queue, dst,
/// srcs, waits) and its bookkeeping (pipe, origin).
constexpr const char *kFieldKeys[] = {"func", "alu", "alu2", "two_ops", "reverse2", "imm",
                                      "accumulate", "reverse", "scale_tile", "bias_tile",
                                      "axes", "affine", "reduce_cmd", "reduce_op", "collective",
                                      "group", "reg", "reg_src", "reg_init"};

/// The fields of instruction object `j` (kFieldKeys) into `in`.
void readFields(const json &j, const Path &p, Instruction &in) {
  if (const json *f = optional(j, "func"))
    in.func =
        enumValue<ActFunc>(*f, p / "func", parseActFunc, "activation function");
  if (const json *a = optional(j, "alu"))
    in.alu = enumValue<AluOp>(*a, p / "alu", parseAluOp, "alu op");
  if (const json *a = optional(j, "alu2"))
    in.alu2 = enumValue<AluOp>(*a, p / "alu2", parseAluOp, "alu op");
  in.twoOps = boolean(j, "two_ops", p);
  in.reverse2 = boolean(j, "reverse2", p);
  if (const json *imm = optional(j, "imm")) {
    const Path ip = p / "imm";
    if (!imm->is_array() || imm->size() != 2)
      bad(ip, "expected [imm0, imm1], got " + jsonBrief(*imm));
    in.imm[0] = number((*imm)[0], ip[0]);
    in.imm[1] = number((*imm)[1], ip[1]);
  }
  in.accumulate = boolean(j, "accumulate", p);
  in.reverse = boolean(j, "reverse", p);
  in.scaleTile = boolean(j, "scale_tile", p);
  in.biasTile = boolean(j, "bias_tile", p);
  in.axes = uint8_t(integerOr(j, "axes", p, 0, 255, 1));
  if (const json *a = optional(j, "affine")) {
    const Path ap = p / "affine";
    array(*a, ap);
    // affine_select: offset, partition and one per free dim; nc_stream_shuffle: 32 entries.
    const size_t most = std::max<size_t>(size_t(kMaxLoopDepth) + 2, 32);
    if (a->size() > most)
      bad(ap, "expected at most " + std::to_string(most) + " coefficients, got " +
                  std::to_string(a->size()));
    for (size_t i = 0; i < a->size(); ++i)
      in.affine.push_back(integer((*a)[i], ap[i], -(int64_t(1) << 40), int64_t(1) << 40));
  }
  if (const json *c = optional(j, "reduce_cmd"))
    in.reduceCmd = enumValue<ReduceCmd>(*c, p / "reduce_cmd", parseReduceCmd, "reduce_cmd");
  if (const json *r = optional(j, "reduce_op"))
    in.reduceOp = enumValue<AluOp>(*r, p / "reduce_op", parseAluOp, "alu op");
  if (const json *c = optional(j, "collective"))
    in.collective = enumValue<CollectiveKind>(*c, p / "collective", parseCollectiveKind,
                                              "collective kind");
  in.group = uint16_t(integerOr(j, "group", p, 0, 65535, 0));
  in.reg = uint8_t(integerOr(j, "reg", p, 0, kRegistersPerQueue - 1, 0));
  in.regSrc = int16_t(integerOr(j, "reg_src", p, 0, kRegistersPerQueue - 1, -1));
  in.regInit = boolean(j, "reg_init", p);
}

/// Instruction `j` inside `depth` loops.
Instruction readInstruction(const json &j, const Path &p, int depth) {
  expectObject(j, p);
  Instruction in;
  in.opcode =
      enumValue<Opcode>(required(j, "op", p), p / "op", parseOpcode, "opcode");
  in.queue = uint16_t(
      integer(required(j, "queue", p), p / "queue", 0, kNumQueues - 1));
  in.dst = readAp(required(j, "dst", p), p / "dst", depth);
  if (const json *srcs = optional(j, "srcs")) {
    const Path sp = p / "srcs";
    array(*srcs, sp);
    for (size_t i = 0; i < srcs->size(); ++i)
      in.srcs.push_back(readAp((*srcs)[i], sp[i], depth));
  }
  if (const json *waits = optional(j, "waits")) {
    const Path wp = p / "waits";
    array(*waits, wp);
    for (size_t i = 0; i < waits->size(); ++i)
      in.waits.push_back(readWait((*waits)[i], wp[i], depth));
  }
  readFields(j, p, in);
  in.pipe = uint16_t(integerOr(j, "pipe", p, 0, 65535, 0));
  in.origin = uint32_t(integerOr(j, "origin", p, 0, kU32Max, 0));
  return in;
}

BufferDecl readBuffer(const json &j, const Path &p) {
  expectObject(j, p);
  BufferDecl b;
  b.name = string(required(j, "name", p), p / "name");
  b.kind = kindOf(required(j, "kind", p), p / "kind");
  b.index = int32_t(integerOr(j, "index", p, -1, INT32_MAX, -1));
  b.dtype = dtypeOf(required(j, "dtype", p), p / "dtype");
  const Path sp = p / "shape";
  const json &shape = array(required(j, "shape", p), sp);
  for (size_t i = 0; i < shape.size(); ++i)
    b.shape.push_back(integer(shape[i], sp[i], 0, kI64Max));
  if (const json *data = optional(j, "data")) {
    const Path dp = p / "data";
    if (data->is_binary())
      b.data = data->get_binary();
    else if (data->is_string()) {
      if (!base64Decode(data->get_ref<const std::string &>(), b.data))
        bad(dp, "malformed base64");
    } else
      bad(dp,
          std::string("expected base64 text or bytes, got ") + typeName(*data));
  }
  bool constant = b.kind == BufferDecl::Kind::Constant;
  if (!constant && !b.data.empty())
    bad(p / "data", "only constant buffers carry data");
  if (constant && int64_t(b.data.size()) != b.numBytes())
    bad(p / "data", std::to_string(b.data.size()) +
                        " bytes, but the shape and dtype need " +
                        std::to_string(b.numBytes()));
  return b;
}

/// [[begin, end, count], ...] over `numInstructions` instructions, checked
/// to be a valid loop nest.
std::vector<Loop> readLoops(const json &j, const Path &p,
                            size_t numInstructions) {
  array(j, p);
  std::vector<Loop> loops;
  loops.reserve(j.size());
  for (size_t i = 0; i < j.size(); ++i) {
    const json &l = j[i];
    if (!l.is_array() || (l.size() != 3 && l.size() != 4))
      bad(p[i], "expected [begin, end, count] or [begin, end, bound, {\"reg\": [queue, "
                "register], \"while\": bool}], got " + jsonBrief(l));
    Loop loop;
    loop.begin = uint32_t(integer(l[0], p[i][0], 0, kU32Max));
    loop.end = uint32_t(integer(l[1], p[i][1], 0, kU32Max));
    loop.count = integer(l[2], p[i][2], -kI64Max, kI64Max);
    if (l.size() == 4) { // a dynamic loop
      expectObject(l[3], p[i][3]);
      loop.countReg = readRegRef(required(l[3], "reg", p[i][3]), p[i][3] / "reg");
      loop.whileLoop = boolean(l[3], "while", p[i][3]);
    }
    loops.push_back(loop);
  }
  size_t badLoop = 0;
  const std::string problem = loopNestProblem(loops, numInstructions, badLoop);
  if (!problem.empty())
    bad(p[badLoop], problem);
  return loops;
}

Program readProgram(const json &j) {
  const Path root;
  expectObject(j, root);
  const json &fmt = required(j, "format", root);
  if (!fmt.is_string() ||
      fmt.get_ref<const std::string &>() != std::string("neuronsim-program"))
    bad(root / "format", "expected \"neuronsim-program\", got " + jsonBrief(fmt));
  const json &ver = required(j, "version", root);
  if (!ver.is_number_integer() || ver.get<int64_t>() != kProgramFormatVersion)
    bad(root / "version", "unsupported program format version " + jsonBrief(ver) +
                              " (this build reads version " +
                              std::to_string(kProgramFormatVersion) + ")");
  Program prog;
  prog.version = kProgramFormatVersion;
  if (const json *t = optional(j, "target"))
    prog.target = string(*t, root / "target");
  if (const json *f = optional(j, "flops"))
    prog.flops = uint64_t(integer(*f, root / "flops", 0, kI64Max));
  if (const json *o = optional(j, "origins")) {
    const Path op = root / "origins";
    array(*o, op);
    for (size_t i = 0; i < o->size(); ++i)
      prog.origins.push_back(string((*o)[i], op[i]));
  }
  if (const json *g = optional(j, "groups")) {
    const Path gp = root / "groups";
    array(*g, gp);
    for (size_t i = 0; i < g->size(); ++i) {
      expectObject((*g)[i], gp[i]);
      CollectiveGroup group;
      group.name = string(required((*g)[i], "name", gp[i]), gp[i] / "name");
      group.size = int32_t(integer(required((*g)[i], "size", gp[i]), gp[i] / "size", 1,
                                   INT32_MAX));
      prog.groups.push_back(std::move(group));
    }
  }
  const Path bp = root / "buffers";
  const json &bufs = array(required(j, "buffers", root), bp);
  prog.buffers.reserve(bufs.size());
  for (size_t i = 0; i < bufs.size(); ++i)
    prog.buffers.push_back(readBuffer(bufs[i], bp[i]));
  const Path ip = root / "instructions";
  const json &insts = array(required(j, "instructions", root), ip);
  if (const json *loops = optional(j, "loops"))
    prog.loops = readLoops(*loops, root / "loops", insts.size());
  const std::vector<uint8_t> depth = loopDepths(prog.loops, insts.size());
  prog.instructions.reserve(insts.size());
  for (size_t i = 0; i < insts.size(); ++i)
    prog.instructions.push_back(readInstruction(insts[i], ip[i], depth[i]));
  return prog;
}

} // namespace

void instructionFieldsFromTree(const json &fields, Instruction &in) {
  const Path root;
  const Path p = root / "fields";
  try {
    expectObject(fields, p);
    for (auto it = fields.begin(); it != fields.end(); ++it)
      if (std::find_if(std::begin(kFieldKeys), std::end(kFieldKeys), [&](const char *k) {
            return it.key() == k;
          }) == std::end(kFieldKeys))
        bad(p, "unknown instruction field \"" + it.key() + "\"");
    readFields(fields, p, in);
  } catch (const json::exception &e) {
    throw FormatError(std::string("malformed instruction fields: ") + e.what());
  }
}

Program programFromTree(const json &tree) {
  try {
    return readProgram(tree);
  } catch (const json::exception &e) {
    // Defensive: every access above checks types first.
    throw FormatError(std::string("malformed program: ") + e.what());
  }
}

} // namespace neuron::runtime::detail
