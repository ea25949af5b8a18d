#pragma once
// What every module of the forward pass needs for one call: the config, the switches, the
// thread pool, and where to record intermediates (dumps) when asked.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "io/config.h"
#include "kernels/linear.h"
#include "model/forward_options.h"
#include "util/thread_pool.h"

namespace dsv4 {

// A named intermediate tensor (for layer-by-layer comparison with the oracle's dumps).
struct DumpTensor {
  std::vector<std::int64_t> shape;
  std::vector<float> f32;          // kind 'f'
  std::vector<std::int64_t> i64;   // kind 'i'
  std::vector<std::uint8_t> b8;    // kind 'b' (bool)
  char kind = 'f';
};
using Dump = std::map<std::string, DumpTensor>;

struct ForwardContext {
  const ModelConfig& cfg;
  ForwardOptions opt;
  ThreadPool* pool = nullptr;
  Dump* dump = nullptr;  // null: no dumps

  kernels::LinearOptions lin() const {
    kernels::LinearOptions o;
    o.mode = opt.numerics;
    o.pool = pool;
    return o;
  }
  void dump_f32(const std::string& name, std::vector<std::int64_t> shape, const float* p) const;
  void dump_i64(const std::string& name, std::vector<std::int64_t> shape, const std::int64_t* p) const;
  void dump_b8(const std::string& name, std::vector<std::int64_t> shape, const std::uint8_t* p) const;
};

}  // namespace dsv4
