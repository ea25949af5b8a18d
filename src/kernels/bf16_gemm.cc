// The fast-numerics matrix product: driver, the scalar path (the definition every SIMD path must
// reproduce), activation preparation and weight dequantization. See bf16_gemm.h.
#include "kernels/bf16_gemm.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "kernels/bf16_gemm_isa.h"
#include "numeric/e2m1.h"
#include "numeric/e4m3.h"
#include "numeric/e8m0.h"
#include "numeric/qdq.h"
#include "util/cpu_features.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace dsv4::kernels {

using namespace bf16_detail;

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512Bf16: return "avx512bf16";
  }
  return "?";
}

bool isa_supported(Isa isa) {
  const CpuFeatures& f = cpu_features();
  switch (isa) {
    case Isa::kScalar: return true;
    case Isa::kAvx2: return f.avx2 && f.fma;
    case Isa::kAvx512Bf16: return f.avx512f && f.avx512bw && f.avx512vl && f.avx512_bf16;
  }
  return false;
}

Isa best_isa() {
  static const Isa isa = [] {
    Isa best = Isa::kScalar;
    for (Isa i : {Isa::kAvx2, Isa::kAvx512Bf16})
      if (isa_supported(i)) best = i;
    if (const char* env = std::getenv("DSV4_ISA")) {
      const std::string_view v(env);
      Isa want = best;
      if (v == "scalar") want = Isa::kScalar;
      else if (v == "avx2") want = Isa::kAvx2;
      else if (v == "avx512" || v == "avx512bf16") want = Isa::kAvx512Bf16;
      if (static_cast<int>(want) < static_cast<int>(best)) best = want;
    }
    return best;
  }();
  return isa;
}

namespace bf16_detail {

namespace {
std::uint16_t bits_of(float f) { return static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(f) >> 16); }
float from_bits(std::uint16_t b) { return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16); }
// DAZ as VDPBF16PS applies it: a bf16 subnormal becomes a zero of the same sign.
constexpr std::uint16_t kCanonicalNaN = 0x7FC0;
std::uint16_t flush(std::uint16_t b) { return (b & 0x7F80u) == 0 ? static_cast<std::uint16_t>(b & 0x8000u) : b; }
}  // namespace

const std::uint16_t* e4m3_bf16_table() {
  static const std::array<std::uint16_t, 128> t = [] {
    std::array<std::uint16_t, 128> r{};
    for (unsigned c = 0; c < 127; ++c) r[c] = bits_of(e4m3_to_f32(static_cast<std::uint8_t>(c)));
    r[127] = bits_of(480.0f);
    return r;
  }();
  return t.data();
}

const std::uint16_t* e2m1_bf16_table() {
  static const std::array<std::uint16_t, 16> t = [] {
    std::array<std::uint16_t, 16> r{};
    for (unsigned c = 0; c < 16; ++c) r[c] = (c & 7u) == 0 ? 0 : bits_of(kE2m1Table[c]);
    return r;
  }();
  return t.data();
}

const std::uint8_t* row_scales(const WeightRef& w, std::size_t j) {
  const std::size_t sc = w.scale_cols();
  return w.format == WeightFormat::kFP8 ? w.scale + (j / kBlock) * sc : w.scale + j * sc;
}

bool row_in_fast_range(const WeightRef& w, std::size_t j) {
  if (w.format != WeightFormat::kFP8 && w.format != WeightFormat::kFP4) return true;
  const unsigned lo = w.format == WeightFormat::kFP8 ? kFp8ScaleLo : kFp4ScaleLo;
  const unsigned hi = w.format == WeightFormat::kFP8 ? kFp8ScaleHi : kFp4ScaleHi;
  const std::uint8_t* s = row_scales(w, j);
  bool ok = true;
  for (std::size_t b = 0, n = w.scale_cols(); b < n; ++b) ok &= s[b] >= lo && s[b] <= hi;
  return ok;
}

void row_deltas(const WeightRef& w, std::size_t j, std::int16_t* out) {
  const std::uint8_t* s = row_scales(w, j);
  for (std::size_t b = 0, n = w.scale_cols(); b < n; ++b)
    out[b] = static_cast<std::int16_t>((static_cast<int>(s[b]) - 127) * 128);
}

float lane16_dot_scalar(const std::uint16_t* a, const std::uint16_t* w, std::size_t k32) {
  float acc[16] = {};
  auto ftz = [](float v) { return std::fabs(v) < FLT_MIN ? std::copysign(0.0f, v) : v; };
  for (std::size_t b = 0; b < k32; b += kBlock)
    for (std::size_t l = 0; l < 16; ++l) {
      const std::size_t e = b + 2 * l;
      // The product of two bf16 values is exact in fp32 unless it underflows; fma keeps it exact
      // there too, as the AVX2 path does.
      acc[l] = ftz(std::fma(from_bits(a[e + 1]), from_bits(w[e + 1]), acc[l]));
      acc[l] = ftz(std::fma(from_bits(a[e]), from_bits(w[e]), acc[l]));
    }
  for (std::size_t half = 8; half >= 1; half /= 2)
    for (std::size_t l = 0; l < half; ++l) acc[l] = acc[l] + acc[l + half];
  return acc[0];
}

std::uint16_t* scratch_u16(std::size_t n) {
  thread_local std::vector<std::uint16_t> buf;
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

void gemm_rows_scalar(const Bf16Acts& a, const WeightRef& w, std::size_t j0, std::size_t j1,
                      float* out, std::size_t ldo) {
  std::uint16_t* row = scratch_u16(a.k32);
  for (std::size_t j = j0; j < j1; ++j) {
    fast_weight_row(w, j, row, a.k32);
    for (std::size_t i = 0; i < a.m; ++i) out[i * ldo + j] = lane16_dot_scalar(a.row(i), row, a.k32);
  }
}

}  // namespace bf16_detail

void fast_weight_row(const WeightRef& w, std::size_t j, std::uint16_t* dst, std::size_t k32) {
  const std::size_t k = w.cols;
  if (k32 < k || k32 % kBlock != 0) fail("fast_weight_row: {} codes cannot hold a row of {}", k32, k);
  std::fill(dst + k, dst + k32, std::uint16_t{0});
  switch (w.format) {
    case WeightFormat::kBF16: {
      const auto* src = static_cast<const std::uint16_t*>(w.data) + j * k;
      for (std::size_t c = 0; c < k; ++c) dst[c] = flush(src[c]);
      return;
    }
    case WeightFormat::kF32:
      fail("fast_weight_row: F32 weights have no bf16 form");
    case WeightFormat::kFP8:
    case WeightFormat::kFP4: break;
  }
  const bool fp8 = w.format == WeightFormat::kFP8;
  const std::uint8_t* codes = static_cast<const std::uint8_t*>(w.data) + j * (fp8 ? k : k / 2);
  auto code = [&](std::size_t c) -> unsigned {
    if (fp8) return codes[c];
    const std::uint8_t byte = codes[c / 2];
    return (c % 2 == 0) ? e2m1_lo(byte) : e2m1_hi(byte);
  };
  // Magnitude bits (sign excluded for FP8, whose sign is ORed in afterwards) and sign.
  const std::uint16_t* table = fp8 ? e4m3_bf16_table() : e2m1_bf16_table();
  const std::uint8_t* s = row_scales(w, j);
  if (row_in_fast_range(w, j)) {
    for (std::size_t c = 0; c < k; ++c) {
      const unsigned q = code(c);
      const unsigned mag = fp8 ? (q & 0x7Fu) : q;
      const int delta = (static_cast<int>(s[c / kBlock]) - 127) * 128;
      std::uint16_t v = table[mag] == 0 ? 0 : static_cast<std::uint16_t>(table[mag] + delta);
      if (fp8) v = static_cast<std::uint16_t>(v | ((q & 0x80u) << 8));
      dst[c] = v;
    }
    return;
  }
  // The slow exact way: the value times its scale rounded to bf16, subnormals flushed.
  for (std::size_t c = 0; c < k; ++c) {
    const unsigned q = code(c);
    const unsigned mag = fp8 ? (q & 0x7Fu) : q;
    std::uint16_t v = 0;
    if (table[mag] != 0) {
      const double value = static_cast<double>(from_bits(table[mag])) *
                           static_cast<double>(e8m0_to_f32(s[c / kBlock]));
      v = flush(bf16_from_f32(static_cast<float>(value)).bits);
      if (std::isnan(value)) v = 0x7FC0u | (v & 0x8000u);
    }
    if (fp8) v = static_cast<std::uint16_t>(v | ((q & 0x80u) << 8));
    dst[c] = v;
  }
}

void quantized_acts(std::span<const float> x, std::size_t m, std::size_t k, Bf16Acts& out, ThreadPool* pool,
                    Isa isa) {
  if (!isa_supported(isa)) fail("quantized_acts: this CPU cannot run the {} path", isa_name(isa));
  if (k % kBlock != 0) fail("quantized_acts: K = {} is not a multiple of {}", k, kBlock);
  if (x.size() != m * k) fail("quantized_acts: {} elements, expected {}x{}", x.size(), m, k);
  out.m = m;
  out.lanes_ready = false;
  out.k = k;
  out.k32 = k;
  out.bits.resize(m * k);
  // Rows are independent: split over the pool (each thread has its own buffers), same bits.
  auto rows = [&](std::size_t i0, std::size_t i1) {
    thread_local std::vector<BF16> xb;
    thread_local std::vector<std::uint8_t> q, s;
    xb.resize(k);
    q.resize(k);
    s.resize(k / kBlock);
    for (std::size_t i = i0; i < i1; ++i) {
      const float* xi = x.data() + i * k;
      std::uint16_t* o = out.bits.data() + i * k;
      if (isa == Isa::kAvx512Bf16 && quantize_row_avx512(xi, k, o)) continue;
      for (std::size_t c = 0; c < k; ++c) {
        const std::uint32_t u = std::bit_cast<std::uint32_t>(xi[c]);
        if ((u & 0xFFFFu) != 0) fail("linear: FP8/FP4 input row {} element {} ({}) is not a bf16 value", i, c, xi[c]);
        xb[c] = BF16{static_cast<std::uint16_t>(u >> 16)};
      }
      act_quant(xb, q, s);
      // A block holding inf or NaN dequantizes to NaN. Which NaN (its sign) a product of two NaN
      // operands gives depends on the operand order the compiler chose for this copy of the loop,
      // so every NaN is written as the one canonical quiet NaN: the bits never depend on the
      // build, the ISA or the thread that ran the row.
      for (std::size_t c = 0; c < k; ++c) {
        const float v = e4m3_to_f32(q[c]) * e8m0_to_f32(s[c / kBlock]);
        o[c] = std::isnan(v) ? kCanonicalNaN : flush(bits_of(v));
      }
    }
  };
  parallel_for(pool, m, rows);
}

bool bf16_acts(std::span<const float> x, std::size_t m, std::size_t k, Bf16Acts& out, ThreadPool* pool) {
  if (x.size() != m * k) fail("bf16_acts: {} elements, expected {}x{}", x.size(), m, k);
  out.m = m;
  out.lanes_ready = false;
  out.k = k;
  out.k32 = (k + kBlock - 1) / kBlock * kBlock;
  out.bits.resize(m * out.k32);
  std::atomic<bool> ok{true};
  // Rows split over the pool only where there is enough work to pay for waking it.
  parallel_for(m * k >= kParallelElements ? pool : nullptr, m, [&](std::size_t i0, std::size_t i1) {
    for (std::size_t i = i0; i < i1; ++i) {
      std::uint16_t* o = out.bits.data() + i * out.k32;
      for (std::size_t c = 0; c < k; ++c) {
        const std::uint32_t u = std::bit_cast<std::uint32_t>(x[i * k + c]);
        if ((u & 0xFFFFu) != 0) {
          ok.store(false, std::memory_order_relaxed);
          return;
        }
        o[c] = flush(static_cast<std::uint16_t>(u >> 16));
      }
      std::fill(o + k, o + out.k32, std::uint16_t{0});
    }
  });
  return ok.load(std::memory_order_relaxed);
}

void bf16_gemm_rows(Isa isa, const Bf16Acts& a, const WeightRef& w, std::size_t j0, std::size_t j1,
                    float* out, std::size_t ldo) {
  if (w.format == WeightFormat::kF32) fail("bf16_gemm: F32 weights have no bf16 form");
  if (w.cols != a.k) fail("bf16_gemm: activations have K = {}, the weight {}", a.k, w.cols);
  if (j1 > w.rows || j0 > j1) fail("bf16_gemm: rows [{}, {}) of {}", j0, j1, w.rows);
  if (!isa_supported(isa)) fail("bf16_gemm: this CPU cannot run the {} path", isa_name(isa));
  switch (isa) {
    case Isa::kScalar: return gemm_rows_scalar(a, w, j0, j1, out, ldo);
    case Isa::kAvx2: return gemm_rows_avx2(a, w, j0, j1, out, ldo);
    case Isa::kAvx512Bf16: return gemm_rows_avx512(a, w, j0, j1, out, ldo);
  }
}

bool fma_form() { return best_isa() == Isa::kAvx512Bf16 && bf16_detail::fma_for_bf16_dot(); }

void bf16_gemm(Bf16Acts& a, const WeightRef& w, float* out, ThreadPool* pool, Isa isa) {
  // Panels of 16 rows (whole 4-row tiles, and FP8 scale groups stay within one thread's range).
  constexpr std::size_t kPanel = 16;
  const std::size_t n = w.rows, panels = (n + kPanel - 1) / kPanel;
  // The AVX-512 prefill kernel reads the activations lane-major: made here once for every
  // thread (split by rows) instead of by each thread for itself.
  if (isa == Isa::kAvx512Bf16 && isa_supported(isa) && a.m >= kLaneMajorMinRows && !a.lanes_ready &&
      a.k == w.cols) {
    a.lanes.resize(a.m * bf16_detail::lane_row_dwords(a.k32));
    const bool split = bf16_detail::fma_for_bf16_dot();
    const std::size_t row = bf16_detail::lane_row_dwords(a.k32);
    a.lanes_split.resize(split ? 2 * a.lanes.size() : 0);
    parallel_for(pool, a.m, [&](std::size_t i0, std::size_t i1) {
      bf16_detail::lane_major_acts_avx512(a, i0, i1, a.lanes.data());
      if (split) bf16_detail::lane_split_f32(a.lanes.data(), a.lanes.size(), i0 * row, i1 * row, a.lanes_split.data());
    });
    a.lanes_ready = true;
  }
  auto body = [&](std::size_t p0, std::size_t p1) {
    bf16_gemm_rows(isa, a, w, p0 * kPanel, std::min(n, p1 * kPanel), out, n);
  };
  parallel_for(pool, panels, body);
}

}  // namespace dsv4::kernels
