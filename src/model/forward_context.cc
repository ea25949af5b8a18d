// See forward_context.h.
#include "model/forward_context.h"

namespace dsv4 {
namespace {

// Records `name` with the element count of `shape` taken from p into the member `field`.
// Nothing is built (not even the name) without a dump: these calls sit in the decode loop.
template <typename T>
void put(Dump* dump, std::string_view tag, std::string_view name, std::initializer_list<std::int64_t> shape,
         const T* p, char kind, std::vector<T> DumpTensor::*field) {
  if (dump == nullptr) return;
  std::size_t n = 1;
  for (auto d : shape) n *= static_cast<std::size_t>(d);
  std::string key(tag);
  key += name;
  DumpTensor& t = (*dump)[key];
  t.kind = kind;
  (t.*field).assign(p, p + n);
  t.shape.assign(shape.begin(), shape.end());
}

}  // namespace

void ForwardContext::dump_f32(std::string_view tag, std::string_view name, std::initializer_list<std::int64_t> shape,
                              const float* p) const {
  put(dump, tag, name, shape, p, 'f', &DumpTensor::f32);
}
void ForwardContext::dump_i64(std::string_view tag, std::string_view name, std::initializer_list<std::int64_t> shape,
                              const std::int64_t* p) const {
  put(dump, tag, name, shape, p, 'i', &DumpTensor::i64);
}
void ForwardContext::dump_b8(std::string_view tag, std::string_view name, std::initializer_list<std::int64_t> shape,
                              const std::uint8_t* p) const {
  put(dump, tag, name, shape, p, 'b', &DumpTensor::b8);
}

}  // namespace dsv4
