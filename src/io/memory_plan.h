#pragma once
// The memory plan of a model (spec §3.1, §14): the bytes the weights occupy in the memory map,
// grouped the way a person sizing hardware thinks of them; what each sequence keeps between
// forward calls; and what one decoded token reads.
//
// Weights are mapped in their stored formats, so resident weight bytes are checkpoint bytes
// (scales included); nothing is converted or repacked at load. The per-sequence state follows
// the reference's layout (bf16 cache values, fp32 compressor tails, int64 hash history): its
// values are FP8/FP4-representable, so a packed store could hold them in fewer bytes without
// changing results — when the runtime does that, this plan changes with it.
#include <cstdint>
#include <string>
#include <vector>

#include "io/layer_roles.h"
#include "io/manifest.h"

namespace dsv4 {

struct ModelConfig;

// One buffer a layer keeps between forward calls (per sequence).
struct StateBuffer {
  std::int64_t layer = 0;
  std::string name;                // "window ring", "compressed KV rows", ...
  std::string dtype;               // "bf16", "fp32", "int64"
  std::int64_t row_elems = 0;      // elements per row
  std::int64_t elem_bytes = 0;
  std::int64_t fixed_rows = 0;     // rows independent of the context (rings, tails)
  std::int64_t rows_per_ratio = 0; // if > 0: rows = floor(ctx / rows_per_ratio)
  std::int64_t rows(std::int64_t ctx) const {
    return fixed_rows + (rows_per_ratio > 0 ? ctx / rows_per_ratio : 0);
  }
  std::int64_t bytes(std::int64_t ctx) const { return rows(ctx) * row_elems * elem_bytes; }
};

struct MemoryPlan {
  // Resident weight bytes (stored formats, scales included).
  std::uint64_t routed_experts = 0;   // backbone routed experts
  std::uint64_t dense = 0;            // everything else of the backbone + embed/head/final norm
  std::uint64_t engram_tables = 0;
  std::uint64_t engram_dense = 0;
  std::uint64_t dspark = 0;           // mtp.* (its routed experts included)
  std::uint64_t vision = 0;           // vision tower, aligner, image delimiters
  std::uint64_t total_weights = 0;

  std::vector<StateBuffer> state;     // per sequence
  std::int64_t ctx = 0, batch = 0;
  std::int64_t state_bytes_per_token = 0;   // growth per context token, per sequence
  std::int64_t state_fixed_bytes = 0;       // per sequence, independent of the context
  std::int64_t state_bytes_per_sequence = 0;  // at ctx
  std::int64_t state_bytes_total = 0;         // × batch

  // One decode step of one sequence at position ctx − 1 (full context), DSpark not drafting.
  std::uint64_t decode_weight_bytes = 0;  // dense weights + k experts per layer + Engram rows + head
  std::uint64_t decode_cache_bytes = 0;   // window rows, selected compressed rows, index keys scored
  std::uint64_t decode_bytes() const { return decode_weight_bytes + decode_cache_bytes; }
};

MemoryPlan plan_memory(const ModelConfig& c, const Manifest& m, const std::vector<LayerRole>& roles,
                       std::int64_t ctx, std::int64_t batch);

}  // namespace dsv4
