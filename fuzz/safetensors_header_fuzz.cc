// libFuzzer target for the safetensors header parser: any byte string, taken as a whole file
// image, must either parse or be rejected with dsv4::Error. Anything else — a crash, a sanitizer
// report, another exception type escaping — is a bug. Build with -DDSV4_BUILD_FUZZERS=ON and
// CXX=clang++; seed corpus in fuzz/corpus/safetensors/.
#include <cstddef>
#include <cstdint>
#include <span>

#include "io/safetensors.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const dsv4::SafetensorsHeader h = dsv4::parse_safetensors({data, size}, "fuzz-input");
    // A successful parse promises views inside the input; touching every byte lets ASan check.
    unsigned sum = 0;
    for (const dsv4::TensorView& t : h.tensors)
      for (std::uint8_t b : t.bytes) sum += b;
    volatile unsigned sink = sum;
    (void)sink;
  } catch (const dsv4::Error&) {
  }
  return 0;
}
