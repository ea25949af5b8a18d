// parse_safetensors: header decoding and the full validation of one file image.
// Every check runs before any TensorView is handed out, and every read of `file_bytes` is
// bounds-checked against its size first, so arbitrary input can only produce a dsv4::Error.
#include "io/safetensors.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <utility>

#include "io/strict_json.h"
#include "util/error.h"

namespace dsv4 {

namespace {

using json = nlohmann::json;

constexpr std::uint64_t kMax63 =
    static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());

constexpr DType kAllDTypes[] = {DType::BF16,    DType::F16, DType::F32, DType::F64, DType::F8_E4M3,
                                DType::F8_E8M0, DType::I8,  DType::U8,  DType::I32, DType::I64};

std::string known_dtypes() {
  std::string s;
  for (DType t : kAllDTypes) {
    if (!s.empty()) s += ", ";
    s += dtype_name(t);
  }
  return s;
}

std::uint64_t read_le64(const std::uint8_t* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// A JSON value as a non-negative integer, or nullopt (floats, negatives, non-numbers).
std::optional<std::uint64_t> as_u64(const json& v) {
  if (v.is_number_unsigned()) return v.get<std::uint64_t>();
  if (v.is_number_integer() && v.get<std::int64_t>() >= 0)
    return static_cast<std::uint64_t>(v.get<std::int64_t>());
  return std::nullopt;
}

// A tensor entry after its own checks; the layout checks need all of them together.
struct Entry {
  std::string name;
  DType dtype;
  std::vector<std::int64_t> shape;
  std::uint64_t begin;
  std::uint64_t end;
};

DType parse_entry_dtype(const json& v, const std::string& label, const std::string& name) {
  if (!v.is_string())
    fail("safetensors file '{}': tensor '{}': \"dtype\" must be a string, got {}", label, name,
         v.type_name());
  const auto& s = v.get_ref<const std::string&>();
  auto t = parse_dtype(s);
  if (!t)
    fail("safetensors file '{}': tensor '{}': unknown dtype \"{}\" (known: {})", label, name, s,
         known_dtypes());
  return *t;
}

std::vector<std::int64_t> parse_entry_shape(const json& v, const std::string& label,
                                            const std::string& name) {
  if (!v.is_array())
    fail("safetensors file '{}': tensor '{}': \"shape\" must be an array of integers, got {}",
         label, name, v.type_name());
  std::vector<std::int64_t> shape;
  shape.reserve(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    const json& d = v[i];
    if (d.is_number_integer() && !d.is_number_unsigned() && d.get<std::int64_t>() < 0)
      fail("safetensors file '{}': tensor '{}': shape[{}] = {} is negative", label, name, i,
           d.get<std::int64_t>());
    auto u = as_u64(d);
    if (!u)
      fail("safetensors file '{}': tensor '{}': shape[{}] must be a non-negative integer, got {}",
           label, name, i, d.dump());
    if (*u > kMax63)
      fail("safetensors file '{}': tensor '{}': shape[{}] = {} is too large (overflow)", label,
           name, i, *u);
    shape.push_back(static_cast<std::int64_t>(*u));
  }
  return shape;
}

std::pair<std::uint64_t, std::uint64_t> parse_entry_offsets(const json& v, const std::string& label,
                                                            const std::string& name) {
  if (!v.is_array() || v.size() != 2)
    fail(
        "safetensors file '{}': tensor '{}': \"data_offsets\" must be an array [begin, end] of "
        "two non-negative integers, got {}",
        label, name, v.dump());
  auto b = as_u64(v[0]);
  auto e = as_u64(v[1]);
  if (!b || !e)
    fail(
        "safetensors file '{}': tensor '{}': \"data_offsets\" must hold two non-negative "
        "integers, got {}",
        label, name, v.dump());
  return {*b, *e};
}

// Checks one tensor entry on its own (fields, types, sizes, bounds).
Entry parse_entry(const std::string& name, const json& v, const std::string& label,
                  std::uint64_t data_size) {
  if (!v.is_object())
    fail(
        "safetensors file '{}': tensor '{}': entry must be an object with dtype, shape and "
        "data_offsets, got {}",
        label, name, v.type_name());
  for (const auto& [key, _] : v.items())
    if (key != "dtype" && key != "shape" && key != "data_offsets")
      fail(
          "safetensors file '{}': tensor '{}': unexpected field \"{}\" (allowed: dtype, shape, "
          "data_offsets)",
          label, name, key);
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!v.contains(key))
      fail("safetensors file '{}': tensor '{}': missing field \"{}\"", label, name, key);

  Entry e;
  e.name = name;
  e.dtype = parse_entry_dtype(v["dtype"], label, name);
  e.shape = parse_entry_shape(v["shape"], label, name);
  std::tie(e.begin, e.end) = parse_entry_offsets(v["data_offsets"], label, name);

  auto nbytes = tensor_byte_size(e.dtype, e.shape);
  if (!nbytes)
    fail("safetensors file '{}': tensor '{}': shape [{}] x {} bytes overflows", label, name,
         fmt::join(e.shape, ", "), dtype_size(e.dtype));
  if (e.begin > e.end)
    fail("safetensors file '{}': tensor '{}': data_offsets begin {} > end {}", label, name, e.begin,
         e.end);
  if (e.end - e.begin != *nbytes)
    fail(
        "safetensors file '{}': tensor '{}': shape [{}] of {} needs {} bytes but data_offsets "
        "[{}, {}] span {}",
        label, name, fmt::join(e.shape, ", "), dtype_name(e.dtype), *nbytes, e.begin, e.end,
        e.end - e.begin);
  if (e.end > data_size)
    fail(
        "safetensors file '{}': tensor '{}': data_offsets end {} is beyond the data section of {} "
        "bytes (truncated file?)",
        label, name, e.end, data_size);
  return e;
}

std::map<std::string, std::string> parse_metadata(const json& v, const std::string& label) {
  if (!v.is_object())
    fail("safetensors file '{}': \"__metadata__\" must be an object of strings, got {}", label,
         v.type_name());
  std::map<std::string, std::string> out;
  for (const auto& [key, val] : v.items()) {
    if (!val.is_string())
      fail("safetensors file '{}': \"__metadata__\" entry \"{}\" must be a string, got {}", label,
           key, val.type_name());
    out.emplace(key, val.get<std::string>());
  }
  return out;
}

// Enforces the tiling rule (see safetensors.h): sorted by (begin, end), ranges are contiguous
// from 0 to data_size. Sorts `entries` into that order.
void check_tiling(std::vector<Entry>& entries, const std::string& label, std::uint64_t data_size) {
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
  });
  std::uint64_t pos = 0;
  const Entry* prev = nullptr;  // last tensor that ended at `pos`
  for (const Entry& e : entries) {
    if (e.begin < pos)
      fail("safetensors file '{}': tensor '{}' [{}, {}) overlaps tensor '{}' [{}, {})", label,
           e.name, e.begin, e.end, prev->name, prev->begin, prev->end);
    if (e.begin > pos) {
      if (prev)
        fail(
            "safetensors file '{}': hole in data section: bytes [{}, {}) between tensor '{}' and "
            "tensor '{}' belong to no tensor",
            label, pos, e.begin, prev->name, e.name);
      fail(
          "safetensors file '{}': hole in data section: bytes [0, {}) before tensor '{}' belong "
          "to no tensor",
          label, e.begin, e.name);
    }
    pos = e.end;
    if (e.end > e.begin || !prev) prev = &e;
  }
  if (pos != data_size) {
    if (prev)
      fail(
          "safetensors file '{}': data section has {} bytes but tensors cover only [0, {}) "
          "(last tensor '{}'); {} trailing bytes belong to no tensor",
          label, data_size, pos, prev->name, data_size - pos);
    fail("safetensors file '{}': data section has {} bytes but the header lists no tensors", label,
         data_size);
  }
}

}  // namespace

std::int64_t TensorView::numel() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

std::optional<std::uint64_t> tensor_byte_size(DType dtype, std::span<const std::int64_t> shape) {
  std::uint64_t n = 1;
  for (std::int64_t d : shape) {
    if (d < 0) return std::nullopt;
    if (__builtin_mul_overflow(n, static_cast<std::uint64_t>(d), &n) || n > kMax63)
      return std::nullopt;
  }
  if (__builtin_mul_overflow(n, static_cast<std::uint64_t>(dtype_size(dtype)), &n) || n > kMax63)
    return std::nullopt;
  return n;
}

SafetensorsHeader parse_safetensors(std::span<const std::uint8_t> file_bytes,
                                    const std::string& label) {
  const std::uint64_t size = file_bytes.size();
  if (size < 8)
    fail("safetensors file '{}': file is {} bytes, shorter than the 8-byte header length", label,
         size);
  const std::uint64_t n = read_le64(file_bytes.data());
  if (n > kMaxSafetensorsHeaderBytes)
    fail("safetensors file '{}': header length {} exceeds the limit of {} bytes (corrupt file?)",
         label, n, kMaxSafetensorsHeaderBytes);
  if (n > size - 8)
    fail(
        "safetensors file '{}': header length {} exceeds the {} bytes after the length field "
        "(truncated file?)",
        label, n, size - 8);

  const std::string_view text(reinterpret_cast<const char*>(file_bytes.data() + 8), n);
  const json j = parse_strict_json(text, fmt::format("safetensors file '{}': header", label));
  if (!j.is_object())
    fail("safetensors file '{}': header must be a JSON object, got {}", label, j.type_name());

  SafetensorsHeader out;
  out.data_offset = static_cast<std::size_t>(8 + n);
  const std::uint64_t data_size = size - 8 - n;

  std::vector<Entry> entries;
  entries.reserve(j.size());
  for (const auto& [key, val] : j.items()) {
    if (key == "__metadata__")
      out.metadata = parse_metadata(val, label);
    else
      entries.push_back(parse_entry(key, val, label, data_size));
  }
  check_tiling(entries, label, data_size);

  const std::uint8_t* data = file_bytes.data() + out.data_offset;
  out.tensors.reserve(entries.size());
  for (Entry& e : entries) {
    TensorView v;
    v.name = std::move(e.name);
    v.dtype = e.dtype;
    v.shape = std::move(e.shape);
    v.bytes = std::span<const std::uint8_t>(data + e.begin, e.end - e.begin);
    v.file_offset = out.data_offset + e.begin;
    out.tensors.push_back(std::move(v));
  }
  return out;
}

}  // namespace dsv4
