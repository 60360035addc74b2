#include "tools/neuron-run/Npy.h"

#include <cstring>
#include <fstream>
#include <iterator>
#include <regex>
#include <stdexcept>

namespace neuron::tools {
using runtime::DType;

std::string npyDescr(DType t) {
  switch (t) {
  case DType::F32: return "<f4";
  case DType::BF16: return "<u2";
  case DType::F16: return "<f2";
  case DType::I64: return "<i8";
  case DType::I32: return "<i4";
  case DType::I8: return "|i1";
  case DType::U8: return "|u1";
  case DType::Bool: return "|b1";
  case DType::U32: return "<u4";
  case DType::U16: return "<u2";
  case DType::F8E4M3FN: return "|u1"; // the bits (numpy has no fp8)
  case DType::F8E5M2: return "|u1";
  }
  return "?";
}

static std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

// The header is a Python dict literal; NumPy writes it in one fixed layout,
// but any spacing and key order is accepted here.
static std::string dictValue(const std::string &header, const std::string &key,
                             const std::string &valuePattern) {
  std::smatch m;
  std::regex re("'" + key + "'\\s*:\\s*(" + valuePattern + ")");
  if (!std::regex_search(header, m, re))
    return {};
  return m[1].str();
}

void readNpy(const std::string &path, DType t, const std::vector<int64_t> &shape,
             std::vector<uint8_t> &data) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error(path + ": cannot open");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto bad = [&](const std::string &why) { return std::runtime_error(path + ": " + why); };
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0)
    throw bad("not a .npy file (no \\x93NUMPY magic)");
  const unsigned major = uint8_t(bytes[6]);
  size_t headerLen = 0, start = 0;
  if (major == 1) {
    headerLen = uint8_t(bytes[8]) | size_t(uint8_t(bytes[9])) << 8;
    start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      throw bad("truncated .npy header");
    for (int i = 0; i < 4; ++i)
      headerLen |= size_t(uint8_t(bytes[8 + i])) << (8 * i);
    start = 12;
  } else {
    throw bad(".npy format version " + std::to_string(major) + " is not supported");
  }
  if (headerLen > bytes.size() - start)
    throw bad("truncated .npy header");
  const std::string header = bytes.substr(start, headerLen);
  const std::string descr = dictValue(header, "descr", "'[^']*'");
  const std::string order = dictValue(header, "fortran_order", "True|False");
  const std::string dims = dictValue(header, "shape", "\\([^)]*\\)");
  if (descr.empty() || order.empty() || dims.empty())
    throw bad("malformed .npy header: " + header);
  if (order == "True")
    throw bad("Fortran-order arrays are not supported (save a C-contiguous array)");
  std::string want = npyDescr(t);
  std::string got = descr.substr(1, descr.size() - 2);
  // A one-byte type may be written with '<' or '=' instead of '|'; bf16 bits as int16 too.
  bool same = got == want || (want[0] == '|' && got.size() == 3 && got.substr(1) == want.substr(1)) ||
              (t == DType::BF16 && got == "<i2");
  if (!same)
    throw bad("dtype " + got + " but the input buffer is " + runtime::dtypeName(t) + " (" + want +
              ")");
  std::vector<int64_t> fileShape;
  static const std::regex number("[0-9]+");
  for (std::sregex_iterator it(dims.begin(), dims.end(), number), end; it != end; ++it) {
    const std::string digits = it->str();
    if (digits.size() > 18)
      throw bad("shape " + dims + " is too large");
    fileShape.push_back(std::stoll(digits));
  }
  if (fileShape != shape)
    throw bad("shape " + shapeText(fileShape) + " but the input buffer has shape " +
              shapeText(shape));
  const size_t payload = bytes.size() - start - headerLen;
  if (payload != data.size())
    throw bad("holds " + std::to_string(payload) + " bytes of data, expected " +
              std::to_string(data.size()));
  if (!data.empty())
    std::memcpy(data.data(), bytes.data() + start + headerLen, data.size());
}

void writeNpy(const std::string &path, DType t, const std::vector<int64_t> &shape,
              const std::vector<uint8_t> &data) {
  std::string header = "{'descr': '" + npyDescr(t) + "', 'fortran_order': False, 'shape': " +
                       shapeText(shape) + ", }";
  // Magic (6) + version (2) + length (2) + header + '\n' is a multiple of 64.
  header.append(63 - (10 + header.size()) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  out.write("\x93NUMPY\x01\x00", 8);
  const char len[2] = {char(header.size() & 0xff), char(header.size() >> 8)};
  out.write(len, 2);
  out << header;
  out.write(reinterpret_cast<const char *>(data.data()), std::streamsize(data.size()));
  if (!out)
    throw std::runtime_error(path + ": cannot write");
}

} // namespace neuron::tools
