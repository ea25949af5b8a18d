#pragma once
// What every module of the forward pass needs for one call: the config, the switches, the
// thread pool, and where to record intermediates (dumps) when asked.
#include <chrono>
#include <cstdint>
#include <map>
#include <initializer_list>
#include <string>
#include <string_view>
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

// Wall time per operation, summed over calls (dsv4 bench's breakdown). Names are coarse
// sections of §4–§5: embed, engram hash, engram, dspark hiddens, hc, norm, attention, moe, head.
// Seconds and calls per operation name. A name "parent/child" times a part of "parent" (e.g.
// "attention/indexer"): reports nest it and leave it out of sums over operations.
struct OpProfile {
  std::map<std::string, double> seconds;
  std::map<std::string, std::uint64_t> calls;
  void clear() {
    seconds.clear();
    calls.clear();
  }
};

struct ForwardContext {
  const ModelConfig& cfg;
  ForwardOptions opt;
  ThreadPool* pool = nullptr;
  Dump* dump = nullptr;  // null: no dumps
  OpProfile* profile = nullptr;  // null: no timing

  kernels::LinearOptions lin() const {
    kernels::LinearOptions o;
    o.mode = opt.numerics;
    o.pool = pool;
    return o;
  }
  // Records tag + name (e.g. "L3." + "attn_in") when dumping; allocation-free otherwise.
  void dump_f32(std::string_view tag, std::string_view name, std::initializer_list<std::int64_t> shape,
                const float* p) const;
  void dump_i64(std::string_view tag, std::string_view name, std::initializer_list<std::int64_t> shape,
                const std::int64_t* p) const;
  void dump_b8(std::string_view tag, std::string_view name, std::initializer_list<std::int64_t> shape,
               const std::uint8_t* p) const;
  void dump_f32(std::string_view name, std::initializer_list<std::int64_t> shape, const float* p) const {
    dump_f32({}, name, shape, p);
  }
};

// Adds the time until its destruction to ctx.profile[name] (nothing without a profile).
class OpTimer {
 public:
  OpTimer(const ForwardContext& ctx, const char* name)
      : profile_(ctx.profile), name_(name), t0_(profile_ ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{}) {}
  ~OpTimer() {
    if (profile_ == nullptr) return;
    profile_->seconds[name_] += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    ++profile_->calls[name_];
  }
  OpTimer(const OpTimer&) = delete;
  OpTimer& operator=(const OpTimer&) = delete;

 private:
  OpProfile* profile_;
  const char* name_;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace dsv4
