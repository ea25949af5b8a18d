#include "util/cpu_features.h"

namespace dsv4 {

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = [] {
    CpuFeatures c;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    c.avx2 = __builtin_cpu_supports("avx2");
    c.fma = __builtin_cpu_supports("fma");
    c.avx512f = __builtin_cpu_supports("avx512f");
    c.avx512bw = __builtin_cpu_supports("avx512bw");
    c.avx512vl = __builtin_cpu_supports("avx512vl");
    c.avx512_bf16 = __builtin_cpu_supports("avx512bf16");
    c.avx512_vnni = __builtin_cpu_supports("avx512vnni");
    c.avx512_vbmi = __builtin_cpu_supports("avx512vbmi");
    c.vendor_intel = __builtin_cpu_is("intel");
#endif
    return c;
  }();
  return f;
}

std::string cpu_simd_name(const CpuFeatures& f) {
  if (f.avx512f && f.avx512bw && f.avx512vl) {
    std::string s = "AVX-512";
    if (f.avx512_bf16 && f.avx512_vnni) s += " (BF16, VNNI)";
    else if (f.avx512_bf16) s += " (BF16)";
    else if (f.avx512_vnni) s += " (VNNI)";
    return s;
  }
  if (f.avx2 && f.fma) return "AVX2+FMA";
  return "none";
}

}  // namespace dsv4
