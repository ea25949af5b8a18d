#pragma once
// The content of `dsv4 inspect`: architecture, layer roles and their hand-offs, parameter counts
// with their calculation, tensor shapes through a block, per-layer state and the memory plan.
// Built once as JSON (the keys are documented in docs/inspect-json.md and are stable); the CLI's
// text output is a rendering of the same object, so the two never disagree.
#include <cstdint>

#include <nlohmann/json.hpp>

namespace dsv4 {

struct ModelConfig;
class Checkpoint;

struct InspectOptions {
  std::int64_t ctx = 0;    // 0: the config's max_seq_len
  std::int64_t batch = 1;
};

nlohmann::json build_inspect_report(const ModelConfig& c, const InspectOptions& opt);

}  // namespace dsv4
