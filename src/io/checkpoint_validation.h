#pragma once
// Checking a model directory against the architecture manifest before anything uses it.
// Every problem is collected — missing, unexpected, mis-shaped and mis-typed tensors — and
// reported together in one error, so a broken download or conversion is diagnosed in one run.
#include <cstdint>
#include <string>
#include <vector>

namespace dsv4 {

class Checkpoint;
struct Manifest;
struct ModelConfig;

// Human-readable mismatches between the checkpoint and the manifest; empty when they agree.
std::vector<std::string> manifest_mismatches(const Checkpoint& ck, const Manifest& m);

struct ModelDirSummary {
  std::int64_t shards = 0;
  std::int64_t tensors = 0;
  std::uint64_t bytes = 0;
  bool has_tokenizer = false;
};

// Opens the checkpoint in `dir` (sharded or single file), builds the manifest of `c` and throws
// dsv4::Error listing every mismatch if they differ.
ModelDirSummary validate_model_dir(const std::string& dir, const ModelConfig& c);

}  // namespace dsv4
