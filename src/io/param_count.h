#pragma once
// Parameter counts over the manifest (spec §15): logical elements, block scales excluded, packed
// FP4 counted per element. Engram tables and the Engram dense part are reported apart from the
// layer they precede, as the spec's per-layer figures do.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "io/layer_roles.h"
#include "io/manifest.h"

namespace dsv4 {

struct ModelConfig;

struct LayerParams {
  std::int64_t layer = 0;
  std::int64_t params = 0;         // the block without Engram
  std::int64_t engram_params = 0;  // Engram dense + table before this block
  std::int64_t activated = 0;      // touched per decoded text token (k of n experts, 24 table rows)
  std::map<Component, std::int64_t> by_component;
};

// A run of consecutive layers that share one source of top-k positions (an index source and
// the layers reusing its selection), or a single window-only layer.
struct LayerGroup {
  std::vector<std::int64_t> layers;
  std::string composition;  // e.g. "1 re-index + 3 reuse"
  std::int64_t params = 0;
};

// Consecutive identical groups (same composition and parameter count), summarised.
struct GroupRun {
  std::int64_t first_layer = 0, last_layer = 0;
  std::int64_t count = 0;
  std::string composition;
  std::int64_t params_per_group = 0;
  std::int64_t params() const { return count * params_per_group; }
};

struct ParamCount {
  std::vector<LayerParams> layers;  // backbone and DSpark stages, by layer id
  std::vector<LayerGroup> groups;   // backbone only
  std::vector<GroupRun> group_runs;
  std::map<Component, std::int64_t> by_component;  // whole model
  std::int64_t backbone_layers = 0;  // Σ layer params (no Engram) over the backbone
  std::int64_t engram = 0;           // tables + dense
  std::int64_t engram_tables = 0;
  std::int64_t dspark = 0;
  std::int64_t vision = 0;           // vision tower and aligner
  std::int64_t image_delims = 0;     // image_start, image_end, image_newline
  std::int64_t embed = 0, head = 0, final_norm = 0;
  std::int64_t total = 0;
  std::int64_t activated_backbone = 0;  // Σ activated over backbone layers
  std::int64_t activated_total = 0;     // + head + one embedding row
};

ParamCount count_params(const ModelConfig& c, const Manifest& m, const std::vector<LayerRole>& roles);

}  // namespace dsv4
