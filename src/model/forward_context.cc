// See forward_context.h.
#include "model/forward_context.h"

namespace dsv4 {
namespace {
std::size_t count(const std::vector<std::int64_t>& shape) {
  std::size_t n = 1;
  for (auto d : shape) n *= static_cast<std::size_t>(d);
  return n;
}
}  // namespace

void ForwardContext::dump_f32(const std::string& name, std::vector<std::int64_t> shape,
                              const float* p) const {
  if (dump == nullptr) return;
  DumpTensor& t = (*dump)[name];
  t.kind = 'f';
  t.f32.assign(p, p + count(shape));
  t.shape = std::move(shape);
}
void ForwardContext::dump_i64(const std::string& name, std::vector<std::int64_t> shape,
                              const std::int64_t* p) const {
  if (dump == nullptr) return;
  DumpTensor& t = (*dump)[name];
  t.kind = 'i';
  t.i64.assign(p, p + count(shape));
  t.shape = std::move(shape);
}
void ForwardContext::dump_b8(const std::string& name, std::vector<std::int64_t> shape,
                             const std::uint8_t* p) const {
  if (dump == nullptr) return;
  DumpTensor& t = (*dump)[name];
  t.kind = 'b';
  t.b8.assign(p, p + count(shape));
  t.shape = std::move(shape);
}

}  // namespace dsv4
