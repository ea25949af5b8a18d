// See model_qdq.h.
#include "model/model_qdq.h"

#include <bit>
#include <cstdint>
#include <vector>

#include "numeric/qdq.h"
#include "util/error.h"
#include "util/scratch_arena.h"

namespace dsv4 {
namespace {

template <typename Fn>
void via_bf16(std::span<float> x, Fn fn) {
  ScratchFrame frame;
  const std::span<BF16> b = frame.uninit<BF16>(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const auto u = std::bit_cast<std::uint32_t>(x[i]);
    if ((u & 0xFFFFu) != 0) fail("QDQ: element {} ({}) is not a bf16 value", i, x[i]);
    b[i] = BF16{static_cast<std::uint16_t>(u >> 16)};
  }
  fn(b);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = bf16_to_f32(b[i]);
}

}  // namespace

void fp8_qdq_inplace(std::span<float> x) { via_bf16(x, [](std::span<BF16> b) { act_quant_inplace(b); }); }
void fp4_e8m0_qdq_inplace(std::span<float> x) {
  via_bf16(x, [](std::span<BF16> b) { fp4_qdq_e8m0_b32_inplace(b); });
}
void fp4_e4m3_qdq_inplace(std::span<float> x) {
  via_bf16(x, [](std::span<BF16> b) { fp4_qdq_e4m3_b16_inplace(b); });
}

}  // namespace dsv4
