// Linear layers over stored-format weights. See linear.h.
#include "kernels/linear.h"

#include <bit>
#include <cstring>
#include <vector>

#include "kernels/bf16_gemm.h"
#include "kernels/f32_gemm.h"
#include "numeric/e2m1.h"
#include "numeric/e4m3.h"
#include "numeric/e8m0.h"
#include "numeric/qdq.h"
#include "util/error.h"

namespace dsv4::kernels {
namespace {

constexpr std::size_t kBlock = 32;  // E8M0 scale blocks of the checkpoint and of act_quant

std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

void check_size(const char* what, std::size_t got, std::size_t want, std::size_t rows,
                std::size_t cols) {
  if (got != want)
    fail("WeightRef::{}: buffer has {} elements, expected {} for a [{}, {}] weight", what, got,
         want, rows, cols);
}

// act_quant of one bf16 row (§2.3) and the exact float64 values q·s of its codes.
void act_dequant_row(const float* x, std::size_t k, std::vector<BF16>& xb,
                     std::vector<std::uint8_t>& q, std::vector<std::uint8_t>& s, double* out) {
  for (std::size_t i = 0; i < k; ++i) {
    const std::uint32_t u = std::bit_cast<std::uint32_t>(x[i]);
    if ((u & 0xFFFFu) != 0)
      fail("linear: FP8/FP4 input element {} ({}) is not a bf16 value", i, x[i]);
    xb[i] = BF16{static_cast<std::uint16_t>(u >> 16)};
  }
  act_quant(xb, q, s);
  for (std::size_t i = 0; i < k; ++i)
    out[i] = static_cast<double>(e4m3_to_f32(q[i])) *
             static_cast<double>(e8m0_to_f32(s[i / kBlock]));
}

float fast_dot64(const double* a, const double* b, std::size_t k) {
  float acc = 0.0f;
  for (std::size_t i = 0; i < k; ++i) acc += static_cast<float>(a[i]) * static_cast<float>(b[i]);
  return acc;
}

}  // namespace

const char* weight_format_name(WeightFormat f) {
  switch (f) {
    case WeightFormat::kBF16: return "BF16";
    case WeightFormat::kF32: return "F32";
    case WeightFormat::kFP8: return "FP8";
    case WeightFormat::kFP4: return "FP4";
  }
  return "?";
}

WeightRef WeightRef::bf16(std::span<const BF16> w, std::size_t rows, std::size_t cols) {
  check_size("bf16", w.size(), rows * cols, rows, cols);
  return WeightRef{WeightFormat::kBF16, rows, cols, w.data(), nullptr};
}

WeightRef WeightRef::f32(std::span<const float> w, std::size_t rows, std::size_t cols) {
  check_size("f32", w.size(), rows * cols, rows, cols);
  return WeightRef{WeightFormat::kF32, rows, cols, w.data(), nullptr};
}

WeightRef WeightRef::fp8(std::span<const std::uint8_t> codes, std::span<const std::uint8_t> scale,
                         std::size_t rows, std::size_t cols) {
  check_size("fp8", codes.size(), rows * cols, rows, cols);
  WeightRef w{WeightFormat::kFP8, rows, cols, codes.data(), scale.data()};
  check_size("fp8 (scale)", scale.size(), w.scale_rows() * w.scale_cols(), rows, cols);
  return w;
}

WeightRef WeightRef::fp4(std::span<const std::uint8_t> packed, std::span<const std::uint8_t> scale,
                         std::size_t rows, std::size_t cols) {
  if (cols % 2 != 0) fail("WeightRef::fp4: {} columns cannot be packed two per byte", cols);
  check_size("fp4", packed.size(), rows * cols / 2, rows, cols);
  WeightRef w{WeightFormat::kFP4, rows, cols, packed.data(), scale.data()};
  check_size("fp4 (scale)", scale.size(), w.scale_rows() * w.scale_cols(), rows, cols);
  return w;
}

std::size_t WeightRef::scale_rows() const {
  switch (format) {
    case WeightFormat::kFP8: return ceil_div(rows, kBlock);
    case WeightFormat::kFP4: return rows;
    default: return 0;
  }
}

std::size_t WeightRef::scale_cols() const {
  switch (format) {
    case WeightFormat::kFP8:
    case WeightFormat::kFP4: return ceil_div(cols, kBlock);
    default: return 0;
  }
}

void WeightRef::dequant_row(std::size_t r, std::span<double> out) const {
  if (r >= rows) fail("WeightRef::dequant_row: row {} of {}", r, rows);
  if (out.size() != cols) fail("WeightRef::dequant_row: out has {} elements, expected {}", out.size(), cols);
  switch (format) {
    case WeightFormat::kBF16: {
      const BF16* w = static_cast<const BF16*>(data) + r * cols;
      for (std::size_t k = 0; k < cols; ++k) out[k] = bf16_to_f32(w[k]);
      return;
    }
    case WeightFormat::kF32: {
      const float* w = static_cast<const float*>(data) + r * cols;
      for (std::size_t k = 0; k < cols; ++k) out[k] = w[k];
      return;
    }
    case WeightFormat::kFP8: {
      const std::uint8_t* c = static_cast<const std::uint8_t*>(data) + r * cols;
      const std::uint8_t* s = scale + (r / kBlock) * scale_cols();
      for (std::size_t k = 0; k < cols; ++k)
        out[k] = static_cast<double>(e4m3_to_f32(c[k])) *
                 static_cast<double>(e8m0_to_f32(s[k / kBlock]));
      return;
    }
    case WeightFormat::kFP4: {
      const std::uint8_t* p = static_cast<const std::uint8_t*>(data) + r * (cols / 2);
      const std::uint8_t* s = scale + r * scale_cols();
      for (std::size_t k = 0; k < cols; ++k) {
        const std::uint8_t byte = p[k / 2];
        const std::uint8_t code = (k % 2 == 0) ? e2m1_lo(byte) : e2m1_hi(byte);
        out[k] = static_cast<double>(e2m1_to_f32(code)) *
                 static_cast<double>(e8m0_to_f32(s[k / kBlock]));
      }
      return;
    }
  }
}

void linear(std::span<const float> x, std::size_t m, const WeightRef& w, std::span<float> out,
            Numerics mode) {
  LinearOptions opt;
  opt.mode = mode;
  linear(x, m, w, out, opt);
}

namespace {

// Fast numerics on bf16 operands (bf16_gemm.h): every FP8/FP4 linear, and BF16 weights whose
// input is bf16-valued. false when the operands have no bf16 form (F32 weights, fp32 inputs):
// those take the fp32 loop below.
bool fast_linear(std::span<const float> x, std::size_t m, const WeightRef& w, std::span<float> out,
                 const LinearOptions& opt) {
  if (w.format == WeightFormat::kF32) return false;
  // One activation buffer per calling thread, grown to the largest shape and then reused, so the
  // steady-state decode loop does not allocate here.
  thread_local Bf16Acts acts;
  const bool quantized = w.format == WeightFormat::kFP8 || w.format == WeightFormat::kFP4;
  if (quantized && w.scale == nullptr && w.rows * w.cols != 0)
    fail("linear: {} weight without scales", weight_format_name(w.format));
  if (quantized && opt.quantize_input) {
    if (w.cols % kBlock != 0)
      fail("linear: {} weight needs K % {} == 0 for act_quant, got K = {}", weight_format_name(w.format),
           kBlock, w.cols);
    quantized_acts(x, m, w.cols, acts, opt.pool);
  } else if (!bf16_acts(x, m, w.cols, acts, opt.pool)) {
    return false;
  }
  bf16_gemm(acts, w, out.data(), opt.pool);
  const bool to_bf16 = !(w.format == WeightFormat::kBF16 && opt.f32_output);
  if (to_bf16) {
    const std::size_t n = w.rows;
    parallel_for(m * n >= kParallelElements ? opt.pool : nullptr, m, [&](std::size_t i0, std::size_t i1) {
      for (float& v : out.subspan(i0 * n, (i1 - i0) * n)) v = round_bf16(v);
    });
  }
  return true;
}

}  // namespace

void linear(std::span<const float> x, std::size_t m, const WeightRef& w, std::span<float> out,
            const LinearOptions& opt) {
  const Numerics mode = opt.mode;
  const std::size_t n = w.rows, k = w.cols;
  if (x.size() != m * k)
    fail("linear: input has {} elements, expected {}x{} for a {} weight [{}, {}]", x.size(), m, k,
         weight_format_name(w.format), n, k);
  if (out.size() != m * n) fail("linear: output has {} elements, expected {}x{}", out.size(), m, n);
  if (w.data == nullptr && n * k != 0) fail("linear: {} weight without data", weight_format_name(w.format));
  if (mode == Numerics::kFast && fast_linear(x, m, w, out, opt)) return;
  if (w.format == WeightFormat::kF32 || w.format == WeightFormat::kBF16) {
    const bool to_bf16 = w.format == WeightFormat::kBF16 && !opt.f32_output;
    if (mode == Numerics::kFast) {
      // fp32 operands in fast numerics: the canonical 16-lane FMA dot (f32_gemm.h).
      f32_gemm(x, m, w, out, opt.pool);
      if (to_bf16)
        for (float& v : out) v = round_bf16(v);
      return;
    }
    // fp32 operands: the float path of strict_dot (products exact in float64).
    parallel_for(opt.pool, n, [&](std::size_t j0, std::size_t j1) {
      std::vector<float> row(k);
      for (std::size_t j = j0; j < j1; ++j) {
        if (w.format == WeightFormat::kBF16) {
          const BF16* wr = static_cast<const BF16*>(w.data) + j * k;
          for (std::size_t c = 0; c < k; ++c) row[c] = bf16_to_f32(wr[c]);
        } else {
          std::memcpy(row.data(), static_cast<const float*>(w.data) + j * k, k * sizeof(float));
        }
        for (std::size_t i = 0; i < m; ++i) {
          const float v = strict_dot(x.subspan(i * k, k), row);
          out[i * n + j] = to_bf16 ? round_bf16(v) : v;
        }
      }
    });
    return;
  }
  if (opt.quantize_input && k % kBlock != 0)
    fail("linear: {} weight needs K % {} == 0 for act_quant, got K = {}", weight_format_name(w.format),
         kBlock, k);
  if (w.scale == nullptr && n * k != 0) fail("linear: {} weight without scales", weight_format_name(w.format));
  // Activations: act_quant once per row, kept as exact float64 values (or the input as is).
  std::vector<double> a(m * k);
  if (opt.quantize_input) {
    std::vector<BF16> xb(k);
    std::vector<std::uint8_t> q(k), s(k / kBlock);
    for (std::size_t i = 0; i < m; ++i) act_dequant_row(x.data() + i * k, k, xb, q, s, a.data() + i * k);
  } else {
    for (std::size_t i = 0; i < m * k; ++i) a[i] = x[i];
  }
  parallel_for(opt.pool, n, [&](std::size_t j0, std::size_t j1) {
    std::vector<double> row(k);
    for (std::size_t j = j0; j < j1; ++j) {
      w.dequant_row(j, row);
      for (std::size_t i = 0; i < m; ++i) {
        const double* ai = a.data() + i * k;
        const float v = mode == Numerics::kStrict
                            ? strict_dot64(std::span<const double>(ai, k), row)
                            : fast_dot64(ai, row.data(), k);
        out[i * n + j] = round_bf16(v);
      }
    }
  });
}

}  // namespace dsv4::kernels
