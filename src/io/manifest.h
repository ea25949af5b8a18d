#pragma once
// The architecture manifest: from a config, every tensor the official checkpoint holds — name,
// dtype, shape, and what it is for (spec §3.1). A model directory is validated against it before
// use, the parameter counts and the memory plan are sums over it, and make-fixture writes
// exactly it. Shapes are stored [out, in]; I8 tensors are packed FP4 (two codes per byte).
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "io/dtype.h"

namespace dsv4 {

struct ModelConfig;

// What a tensor is part of; parameter tables and the memory plan group by it.
enum class Component {
  AttnCore,          // attn_sink, wq_a, q_norm, wq_b, wkv, kv_norm, wo_a, wo_b
  Compressor,        // attn.compressor.*
  IndexerQuery,      // attn.indexer.wq_b, weights_proj
  IndexerKey,        // attn.indexer.wk, k_norm
  Gate,              // ffn.gate.*
  RoutedExperts,     // ffn.experts.*
  SharedExpert,      // ffn.shared_experts.*
  Norms,             // attn_norm, ffn_norm
  HyperConnections,  // hc_{attn,ffn}_{fn,base,scale}
  EngramDense,       // engram.wkv, q_weight, k_weight
  EngramTable,       // engram.embed
  Embed,
  Head,
  FinalNorm,
  DSparkExtra,       // main_proj, main_norm, norm, markov_head, confidence_head
  Vision,            // vision.*, aligner.*
  ImageDelims,       // image_start, image_end, image_newline
};
std::string_view component_name(Component c);

struct TensorSpec {
  std::string name;
  DType dtype;
  std::vector<std::int64_t> shape;
  Component component;
  std::int64_t layer = -1;  // backbone layer or DSpark stage id (n_layers + s); -1 = global
  bool is_scale = false;    // an E8M0 block scale (not a parameter)
  std::int64_t expert = -1; // routed expert id, -1 otherwise

  std::int64_t numel() const;
  std::uint64_t bytes() const;
  // Logical parameters: 0 for scales, two per byte for packed FP4.
  std::int64_t params() const;
};

struct Manifest {
  std::vector<TensorSpec> tensors;  // in a stable, readable order (globals, layers, mtp, vision)
  std::map<std::string, std::size_t, std::less<>> by_name;

  const TensorSpec* find(std::string_view name) const;
  std::uint64_t total_bytes() const;
  std::int64_t total_params() const;
};

Manifest build_manifest(const ModelConfig& c);

}  // namespace dsv4
