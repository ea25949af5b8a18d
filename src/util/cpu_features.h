#pragma once
// What SIMD the CPU this process runs on offers (runtime detection, for dispatch and reports).
#include <string>

namespace dsv4 {

struct CpuFeatures {
  bool avx2 = false, fma = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512_bf16 = false, avx512_vnni = false;
  bool avx512_vbmi = false;  // byte permutes (vpermt2b): the FP4 decoder's one-shuffle nibble spread
  // GenuineIntel: its AVX512_BF16 parts run VDPBF16PS at a quarter of their FMA rate (per
  // instruction), so some kernels take an FMA form there (same bits).
  bool vendor_intel = false;
};

const CpuFeatures& cpu_features();
// "AVX-512 (BF16, VNNI)", "AVX2+FMA" or "none": the best level the CPU has.
std::string cpu_simd_name(const CpuFeatures& f);

}  // namespace dsv4
