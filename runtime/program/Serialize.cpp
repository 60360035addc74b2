// JSON and CBOR encodings of Program (one document tree, nlohmann_json).
//
// Document (format version kProgramFormatVersion = 3):
//   {"format": "neuronsim-program", "version": 3, "target": "trn2",
//    "flops": 0, "origins": ["aten.mm.default (model.py:12)", ...],
//    "groups": [{"name": "0", "size": 4}, ...]  (omitted when empty),
//    "buffers": [{"name", "kind": "input|output|internal|constant", "index",
//                 "dtype": "f32|bf16|f16|i64|i32|i8|u8|i1", "shape": [..],
//                 "data": <constant bytes>}, ...],
//    "instructions": [{"op": "dma_copy|matmul|...", "queue": 4,
//                      "dst": AP, "srcs": [AP, ...],
//                      "waits": [[queue, value], [queue, value, TERMS], ...],
//                      "func": "gelu_tanh", "alu": "add", "imm": [a, b],
//                      "accumulate": false, "reverse": false, "axes": 1,
//                      "scale_tile": false, "bias_tile": false,
//                      "collective": "all_reduce", "group": 0,
//                      "origin": 0}, ...],
//    "loops": [[begin, end, count], ...]}
//   AP = {"space": "hbm|sbuf|psum", "dtype": "bf16", "buffer": 0 (hbm),
//         "partition": 0 (sbuf/psum), "core": 0 (sbuf/psum; written when not 0),
//         "offset": 0, "terms": TERMS,
//         "dims": [[stride, size], ...]}
//   TERMS = [[level, coef, modulus], ...]  (Program.h LoopTerm)
// Instruction fields other than op/queue/dst may be omitted and then take the
// Program.h defaults; the writer omits them when they are defaults and the
// opcode does not use them. "terms" (and a wait's third element) are written
// only when non-empty; "loops" is always written and may be omitted (no
// loops). The reader checks the loops (in range, non-empty, count >= 1,
// sorted, properly nested, at most kMaxLoopDepth deep) and that every term's
// level is a loop around its instruction. Constant data is a base64 string
// (RFC 4648, with padding) in JSON and a CBOR byte string in CBOR; the reader
// accepts either.
// Non-finite immediates (e.g. -inf to start a max) are the strings "inf",
// "-inf" and "nan", since JSON has no such numbers.
// Every malformed input raises FormatError naming the field's path, e.g.
// "instructions[3].dst.dims[0]: expected [stride, size]".
#include "runtime/program/Serialize.h"

#include "runtime/program/Isa.h"

#include "runtime/program/SerializeDetail.h"

#include <cmath>
#include <limits>

namespace neuron::runtime {

using json = nlohmann::json;

namespace {

constexpr const char *kFormatName = "neuronsim-program";

//===----------------------------------------------------------------------===//
// Base64
//===----------------------------------------------------------------------===//

const char kB64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64Encode(const std::vector<uint8_t> &in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= in.size(); i += 3) {
    uint32_t v = uint32_t(in[i]) << 16 | uint32_t(in[i + 1]) << 8 | in[i + 2];
    for (int s = 18; s >= 0; s -= 6)
      out += kB64[(v >> s) & 63];
  }
  if (i < in.size()) {
    uint32_t v = uint32_t(in[i]) << 16;
    if (i + 1 < in.size())
      v |= uint32_t(in[i + 1]) << 8;
    out += kB64[(v >> 18) & 63];
    out += kB64[(v >> 12) & 63];
    out += i + 1 < in.size() ? kB64[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

} // namespace

bool detail::base64Decode(const std::string &in, std::vector<uint8_t> &out) {
  if (in.size() % 4 != 0)
    return false;
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z')
      return c - 'A';
    if (c >= 'a' && c <= 'z')
      return c - 'a' + 26;
    if (c >= '0' && c <= '9')
      return c - '0' + 52;
    if (c == '+')
      return 62;
    if (c == '/')
      return 63;
    return -1;
  };
  out.clear();
  out.reserve(in.size() / 4 * 3);
  for (size_t i = 0; i < in.size(); i += 4) {
    bool last = i + 4 == in.size();
    int pad = last ? (in[i + 3] == '=') + (in[i + 2] == '=') : 0;
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      int d = k >= 4 - pad ? 0 : val(in[i + k]);
      if (d < 0)
        return false;
      v = v << 6 | uint32_t(d);
    }
    out.push_back(uint8_t(v >> 16));
    if (pad < 2)
      out.push_back(uint8_t(v >> 8));
    if (pad < 1)
      out.push_back(uint8_t(v));
  }
  return true;
}

namespace {

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

const char *spaceName(MemSpace s) {
  switch (s) {
  case MemSpace::Sbuf:
    return "sbuf";
  case MemSpace::Psum:
    return "psum";
  default:
    return "hbm";
  }
}

const char *kindName(BufferDecl::Kind k) {
  switch (k) {
  case BufferDecl::Kind::Input:
    return "input";
  case BufferDecl::Kind::Output:
    return "output";
  case BufferDecl::Kind::Constant:
    return "constant";
  default:
    return "internal";
  }
}

json numberToJson(double v) {
  if (std::isnan(v))
    return "nan";
  if (std::isinf(v))
    return v > 0 ? "inf" : "-inf";
  return v;
}

json termsToJson(const std::vector<LoopTerm> &terms) {
  json j = json::array();
  for (const LoopTerm &t : terms)
    j.push_back({t.level, t.coef, t.modulus});
  return j;
}

json apToJson(const AccessPattern &ap) {
  json j = {{"space", spaceName(ap.space)}, {"dtype", dtypeName(ap.dtype)}};
  if (ap.space == MemSpace::Hbm || ap.buffer != 0)
    j["buffer"] = ap.buffer;
  if (ap.space != MemSpace::Hbm || ap.partition != 0)
    j["partition"] = ap.partition;
  if (ap.core != 0)
    j["core"] = ap.core;
  j["offset"] = ap.offset;
  if (!ap.offsetTerms.empty())
    j["terms"] = termsToJson(ap.offsetTerms);
  if (ap.offsetReg.valid()) { // a dynamic offset: [queue, register], scale
    j["offset_reg"] = {ap.offsetReg.queue, ap.offsetReg.index};
    j["offset_reg_scale"] = ap.offsetRegScale;
  }
  json dims = json::array();
  for (const auto &d : ap.dims)
    dims.push_back({d[0], d[1]});
  j["dims"] = std::move(dims);
  return j;
}

json instructionToJson(const Instruction &in) {
  const Opcode op = in.opcode;
  json j = {
      {"op", opcodeName(op)}, {"queue", in.queue}, {"dst", apToJson(in.dst)}};
  if (!in.srcs.empty()) {
    json srcs = json::array();
    for (const auto &s : in.srcs)
      srcs.push_back(apToJson(s));
    j["srcs"] = std::move(srcs);
  }
  if (!in.waits.empty()) {
    json waits = json::array();
    for (const auto &w : in.waits) {
      json jw = {w.queue, w.value};
      if (!w.valueTerms.empty())
        jw.push_back(termsToJson(w.valueTerms));
      waits.push_back(std::move(jw));
    }
    j["waits"] = std::move(waits);
  }
  // A field is written if the instruction uses it (Isa.def) or it is not the default.
  auto uses = [op](Field f) { return usesField(op, f); };
  if (uses(Field::Func) || in.func != ActFunc::Identity)
    j["func"] = actFuncName(in.func);
  if (uses(Field::Alu) || in.alu != AluOp::Add)
    j["alu"] = aluOpName(in.alu);
  if (uses(Field::Alu2) || in.alu2 != AluOp::Add)
    j["alu2"] = aluOpName(in.alu2);
  if (in.twoOps)
    j["two_ops"] = true;
  if (uses(Field::Imm) || in.imm[0] != 0 || in.imm[1] != 0)
    j["imm"] = {numberToJson(in.imm[0]), numberToJson(in.imm[1])};
  if (uses(Field::Accumulate) || in.accumulate)
    j["accumulate"] = in.accumulate;
  if (uses(Field::Reverse) || in.reverse)
    j["reverse"] = in.reverse;
  if (in.reverse2)
    j["reverse2"] = true;
  if (in.scaleTile)
    j["scale_tile"] = true;
  if (in.biasTile)
    j["bias_tile"] = true;
  if (uses(Field::Axes) || in.axes != 1)
    j["axes"] = in.axes;
  if (uses(Field::Affine) || !in.affine.empty())
    j["affine"] = in.affine;
  if (uses(Field::ReduceCmd) || in.reduceCmd != ReduceCmd::ResetReduce)
    j["reduce_cmd"] = reduceCmdName(in.reduceCmd);
  if (uses(Field::ReduceOp) || in.reduceOp != AluOp::Add)
    j["reduce_op"] = aluOpName(in.reduceOp);
  if (uses(Field::Collective) || in.collective != CollectiveKind::AllReduce)
    j["collective"] = collectiveKindName(in.collective);
  if (uses(Field::Collective) || in.group != 0)
    j["group"] = in.group;
  if (uses(Field::Reg) || in.reg != 0)
    j["reg"] = in.reg;
  if (in.regSrc >= 0)
    j["reg_src"] = in.regSrc;
  if (in.regInit)
    j["reg_init"] = true;
  if (op == Opcode::SendRecv || in.pipe != 0)
    j["pipe"] = in.pipe;
  if (in.origin != 0)
    j["origin"] = in.origin;
  return j;
}

json bufferToJson(const BufferDecl &b, bool binary) {
  json j = {{"name", b.name},
            {"kind", kindName(b.kind)},
            {"index", b.index},
            {"dtype", dtypeName(b.dtype)},
            {"shape", b.shape}};
  if (b.kind == BufferDecl::Kind::Constant || !b.data.empty()) {
    if (binary)
      j["data"] = json::binary(b.data);
    else
      j["data"] = base64Encode(b.data);
  }
  return j;
}

json programToTree(const Program &p, bool binary) {
  json buffers = json::array();
  for (const auto &b : p.buffers)
    buffers.push_back(bufferToJson(b, binary));
  json insts = json::array();
  for (const auto &in : p.instructions)
    insts.push_back(instructionToJson(in));
  json loops = json::array();
  for (const Loop &l : p.loops) {
    json jl = {l.begin, l.end, l.count};
    if (l.dynamic()) { // [begin, end, bound, {"reg": [queue, register], "while": bool}]
      json dyn = {{"reg", {l.countReg.queue, l.countReg.index}}};
      if (l.whileLoop)
        dyn["while"] = true;
      jl.push_back(std::move(dyn));
    }
    loops.push_back(std::move(jl));
  }
  json tree = {{"format", kFormatName},
               {"version", kProgramFormatVersion},
               {"target", p.target},
               {"flops", p.flops},
               {"origins", p.origins},
               {"buffers", std::move(buffers)},
               {"instructions", std::move(insts)},
               {"loops", std::move(loops)}};
  if (!p.groups.empty()) {
    json groups = json::array();
    for (const CollectiveGroup &g : p.groups)
      groups.push_back({{"name", g.name}, {"size", g.size}});
    tree["groups"] = std::move(groups);
  }
  return tree;
}

} // namespace

std::string programToJson(const Program &p, int indent) {
  return programToTree(p, /*binary=*/false).dump(indent);
}

std::vector<uint8_t> programToCbor(const Program &p) {
  return json::to_cbor(programToTree(p, /*binary=*/true));
}

Program programFromJson(const std::string &text) {
  json tree;
  try {
    tree = json::parse(text);
  } catch (const json::exception &e) {
    throw FormatError(std::string("malformed JSON: ") + e.what());
  }
  return detail::programFromTree(tree);
}

Program programFromCbor(const std::vector<uint8_t> &bytes) {
  json tree;
  try {
    tree = json::from_cbor(bytes);
  } catch (const json::exception &e) {
    throw FormatError(std::string("malformed CBOR: ") + e.what());
  }
  return detail::programFromTree(tree);
}

void instructionFieldsFromJson(const std::string &fields, Instruction &in) {
  json tree;
  try {
    tree = json::parse(fields);
  } catch (const json::exception &e) {
    throw FormatError(std::string("malformed JSON: ") + e.what());
  }
  detail::instructionFieldsFromTree(tree, in);
}

} // namespace neuron::runtime
