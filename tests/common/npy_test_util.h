#pragma once
// A minimal .npy writer and reader for the oracle golden tests (NumPy format version 1.0/2.0):
// little-endian, C order, the dtypes the tests exchange ('<f4', '<f8', '<u2', '|u1'/'<u1', '<i4', '<i8'; NumPy bool
// arrays '|b1' read as uint8), 0-d arrays (shape {}) included.
// Header: magic "\x93NUMPY", version bytes, header length (u16 for v1, u32 for v2), then an ASCII
// Python dict {'descr': ..., 'fortran_order': False, 'shape': (...)} padded with spaces and a
// newline so that the data starts at a multiple of 64 bytes.
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace dsv4::test {

template <class T>
constexpr const char* npy_descr() {
  if constexpr (std::is_same_v<T, float>) return "<f4";
  else if constexpr (std::is_same_v<T, double>) return "<f8";
  else if constexpr (std::is_same_v<T, std::uint16_t>) return "<u2";
  else if constexpr (std::is_same_v<T, std::uint8_t>) return "|u1";
  else if constexpr (std::is_same_v<T, std::int32_t>) return "<i4";
  else if constexpr (std::is_same_v<T, std::int32_t>) return "<i4";
  else if constexpr (std::is_same_v<T, std::int64_t>) return "<i8";
  else static_assert(sizeof(T) == 0, "unsupported npy dtype");
}

template <class T>
void write_npy(const std::string& path, const std::vector<T>& data,
               const std::vector<std::size_t>& shape) {
  std::size_t n = 1;
  for (auto d : shape) n *= d;
  if (n != data.size()) throw std::runtime_error("write_npy: shape does not match the data size");
  std::ostringstream dict;
  dict << "{'descr': '" << npy_descr<T>() << "', 'fortran_order': False, 'shape': (";
  for (std::size_t i = 0; i < shape.size(); ++i) dict << shape[i] << (shape.size() == 1 ? "," : (i + 1 < shape.size() ? ", " : ""));
  dict << "), }";
  std::string header = dict.str();
  const std::size_t prefix = 10;  // magic (6) + version (2) + u16 length (2)
  std::size_t total = prefix + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::ofstream out(path, std::ios::binary);
  if (!out) throw std::runtime_error("write_npy: cannot open " + path);
  const char magic[] = "\x93NUMPY\x01\x00";
  out.write(magic, 8);
  const std::uint16_t hlen = static_cast<std::uint16_t>(header.size());
  const unsigned char hl[2] = {static_cast<unsigned char>(hlen & 0xFF), static_cast<unsigned char>(hlen >> 8)};
  out.write(reinterpret_cast<const char*>(hl), 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size() * sizeof(T)));
  if (!out) throw std::runtime_error("write_npy: write failed for " + path);
}

template <class T>
void write_npy_scalar(const std::string& path, T v) {
  write_npy<T>(path, std::vector<T>{v}, {});
}

// Reads an array of dtype T (checked against the header's descr); returns the flat data and
// fills shape. Only C-order arrays are accepted.
template <class T>
std::vector<T> read_npy(const std::string& path, std::vector<std::size_t>* shape = nullptr) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("read_npy: cannot open " + path);
  char magic[8];
  in.read(magic, 8);
  if (!in || std::memcmp(magic, "\x93NUMPY", 6) != 0) throw std::runtime_error("read_npy: not an npy file: " + path);
  std::uint32_t hlen = 0;
  if (magic[6] == 1) {
    unsigned char b[2];
    in.read(reinterpret_cast<char*>(b), 2);
    hlen = b[0] | (b[1] << 8);
  } else {
    unsigned char b[4];
    in.read(reinterpret_cast<char*>(b), 4);
    hlen = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<std::uint32_t>(b[3]) << 24);
  }
  std::string header(hlen, '\0');
  in.read(header.data(), hlen);
  if (!in) throw std::runtime_error("read_npy: truncated header: " + path);
  auto field = [&](const std::string& key) {
    const auto k = header.find("'" + key + "'");
    if (k == std::string::npos) throw std::runtime_error("read_npy: header lacks " + key + ": " + path);
    return header.substr(header.find(':', k) + 1);
  };
  const std::string descr = field("descr");
  const std::string want = npy_descr<T>();
  // Copy and replace the first character rather than "<" + substr(1): g++ 12 reports a false -Wrestrict on the latter.
  std::string want_alt = want;
  if (want[0] == '|') want_alt[0] = '<';
  const bool bool_as_u8 = want == "|u1" && descr.find("'|b1'") != std::string::npos;
  if (!bool_as_u8 && descr.find("'" + want + "'") == std::string::npos &&
      descr.find("'" + want_alt + "'") == std::string::npos)
    throw std::runtime_error("read_npy: " + path + " has descr " + descr.substr(0, descr.find(',')) + ", expected " + want);
  if (field("fortran_order").find("False") != 0 && field("fortran_order").find(" False") != 0)
    throw std::runtime_error("read_npy: Fortran-order array: " + path);
  std::string s = field("shape");
  s = s.substr(s.find('(') + 1, s.find(')') - s.find('(') - 1);
  std::vector<std::size_t> dims;
  std::size_t n = 1;
  std::istringstream ss(s);
  std::string tok;
  while (std::getline(ss, tok, ',')) {
    if (tok.find_first_not_of(' ') == std::string::npos) continue;
    dims.push_back(std::stoull(tok));
    n *= dims.back();
  }
  std::vector<T> data(n);
  in.read(reinterpret_cast<char*>(data.data()), static_cast<std::streamsize>(n * sizeof(T)));
  if (!in) throw std::runtime_error("read_npy: truncated data: " + path);
  if (shape) *shape = dims;
  return data;
}

}  // namespace dsv4::test
