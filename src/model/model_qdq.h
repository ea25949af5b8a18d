#pragma once
// In-place QDQ steps of §2.12 on fp32 buffers holding bf16 values (the model keeps activations
// as fp32 arrays of bf16 values; numeric/qdq.h works on BF16).
#include <span>

namespace dsv4 {

void fp8_qdq_inplace(std::span<float> x);        // act_quant in place, 1×32, ue8m0 (§2.3)
void fp4_e8m0_qdq_inplace(std::span<float> x);   // fp4_act_quant, E8M0, block 32 (§2.4)
void fp4_e4m3_qdq_inplace(std::span<float> x);   // fp4_act_quant, E4M3, block 16 (§2.4)

}  // namespace dsv4
