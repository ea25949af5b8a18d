// See forward_context.h.
#include "model/forward_context.h"

namespace dsv4 {
namespace {

// Records `name` with the element count of `shape` taken from p into the member `field`.
template <typename T>
void put(Dump* dump, const std::string& name, std::vector<std::int64_t> shape, const T* p,
         char kind, std::vector<T> DumpTensor::*field) {
  if (dump == nullptr) return;
  std::size_t n = 1;
  for (auto d : shape) n *= static_cast<std::size_t>(d);
  DumpTensor& t = (*dump)[name];
  t.kind = kind;
  (t.*field).assign(p, p + n);
  t.shape = std::move(shape);
}

}  // namespace

void ForwardContext::dump_f32(const std::string& name, std::vector<std::int64_t> shape,
                              const float* p) const {
  put(dump, name, std::move(shape), p, 'f', &DumpTensor::f32);
}
void ForwardContext::dump_i64(const std::string& name, std::vector<std::int64_t> shape,
                              const std::int64_t* p) const {
  put(dump, name, std::move(shape), p, 'i', &DumpTensor::i64);
}
void ForwardContext::dump_b8(const std::string& name, std::vector<std::int64_t> shape,
                             const std::uint8_t* p) const {
  put(dump, name, std::move(shape), p, 'b', &DumpTensor::b8);
}

}  // namespace dsv4
