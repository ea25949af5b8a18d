#pragma once
// The weights of one block (backbone layer or DSpark stage), resolved once at load into views of
// the memory map (spec §3.1 names, §2.6 formats). Optional parts are empty WeightRefs / spans.
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "io/layer_roles.h"
#include "kernels/linear.h"
#include "kernels/rope.h"
#include "model/engram.h"
#include "numeric/bf16.h"

namespace dsv4 {

class ModelWeights;

struct ExpertWeights {
  kernels::WeightRef w1, w2, w3;
};

struct HcWeights {
  std::span<const float> fn;  // [(2 + hc)·hc, hc·dim] F32
  std::vector<float> base;    // [(2 + hc)·hc]
  std::vector<float> scale;   // [3]
};

struct LayerWeights {
  const LayerRole* role = nullptr;
  const kernels::RopeTable* rope = nullptr;
  // attention core (§6.1)
  std::vector<float> attn_sink;
  kernels::WeightRef wq_a, wq_b, wkv, wo_a, wo_b;
  std::span<const BF16> q_norm, kv_norm, attn_norm, ffn_norm;
  HcWeights hc_attn, hc_ffn;
  // compressor (§6.4, kv sources)
  kernels::WeightRef cmp_wkv, cmp_wgate;
  std::span<const BF16> cmp_norm;
  // indexer (§6.7): query side for index sources, keys for kv sources
  kernels::WeightRef idx_wq_b, idx_weights_proj, idx_wk;
  std::span<const BF16> idx_k_norm;
  // MoE (§7)
  kernels::WeightRef gate;
  std::vector<float> gate_bias, gate_bias_vl;
  std::vector<ExpertWeights> experts;
  std::optional<ExpertWeights> shared;
  // Engram before the block (§8.4)
  std::optional<EngramWeights> engram;

  static LayerWeights load(const ModelWeights& mw, const LayerRole& role,
                           const kernels::RopeTable* rope);
};

}  // namespace dsv4
