// See forward_options.h.
#include "model/forward_options.h"

#include "util/error.h"

namespace dsv4 {

kernels::Numerics parse_numerics(std::string_view s) {
  if (s == "strict") return kernels::Numerics::kStrict;
  if (s == "fast") return kernels::Numerics::kFast;
  fail("numerics must be strict or fast, not '{}'", s);
}
IndexKeys parse_index_keys(std::string_view s) {
  if (s == "own") return IndexKeys::kOwn;
  if (s == "reference") return IndexKeys::kReference;
  fail("index keys must be own or reference, not '{}'", s);
}
AttnSlots parse_attn_slots(std::string_view s) {
  if (s == "compact") return AttnSlots::kCompact;
  if (s == "reference") return AttnSlots::kReference;
  fail("attention slots must be compact or reference, not '{}'", s);
}
std::string_view numerics_name(kernels::Numerics n) {
  return n == kernels::Numerics::kStrict ? "strict" : "fast";
}
std::string_view index_keys_name(IndexKeys k) { return k == IndexKeys::kOwn ? "own" : "reference"; }
std::string_view attn_slots_name(AttnSlots a) {
  return a == AttnSlots::kCompact ? "compact" : "reference";
}

}  // namespace dsv4
