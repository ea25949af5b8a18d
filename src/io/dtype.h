#pragma once
// Storage dtypes of a safetensors checkpoint, named as the format names them.
// The release uses BF16, F32, F8_E4M3, F8_E8M0 and I8 (packed FP4, two E2M1 codes per byte).
#include <cstddef>
#include <optional>
#include <string_view>

namespace dsv4 {

enum class DType { BF16, F16, F32, F64, F8_E4M3, F8_E8M0, I8, U8, I32, I64 };

// Bytes per stored element (I8 counts one byte = two FP4 codes when used for packed experts).
constexpr std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::F8_E4M3:
    case DType::F8_E8M0:
    case DType::I8:
    case DType::U8: return 1;
    case DType::BF16:
    case DType::F16: return 2;
    case DType::F32:
    case DType::I32: return 4;
    case DType::F64:
    case DType::I64: return 8;
  }
  return 0;
}

constexpr std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::BF16: return "BF16";
    case DType::F16: return "F16";
    case DType::F32: return "F32";
    case DType::F64: return "F64";
    case DType::F8_E4M3: return "F8_E4M3";
    case DType::F8_E8M0: return "F8_E8M0";
    case DType::I8: return "I8";
    case DType::U8: return "U8";
    case DType::I32: return "I32";
    case DType::I64: return "I64";
  }
  return "?";
}

// Parses a safetensors dtype string; nullopt for anything this engine does not know.
constexpr std::optional<DType> parse_dtype(std::string_view s) {
  for (DType t : {DType::BF16, DType::F16, DType::F32, DType::F64, DType::F8_E4M3, DType::F8_E8M0,
                  DType::I8, DType::U8, DType::I32, DType::I64})
    if (dtype_name(t) == s) return t;
  return std::nullopt;
}

}  // namespace dsv4
