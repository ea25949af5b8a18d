// The manifest of the released configuration must reproduce the published inventory of the
// official checkpoint (spec §3.1): 96,085 tensors, 510,286,023,000 bytes, and the per-dtype
// counts and bytes — numbers measured on the real files by a third party, not by this code.
#include "io/manifest.h"

#include <gtest/gtest.h>

#include <map>

#include "io/config.h"
#include "io/layer_roles.h"
#include "../common/test_env.h"

namespace dsv4 {
namespace {

ModelConfig released() { return load_model_config(test::shared_dir() + "/data/deepseek-v4.1-flash/inference-config.json"); }

TEST(Manifest, ReleasedInventoryMatchesPublishedCounts) {
  Manifest m = build_manifest(released());
  EXPECT_EQ(m.tensors.size(), 96085u);
  EXPECT_EQ(m.total_bytes(), 510286023000ull);
  std::map<DType, std::pair<int, std::uint64_t>> by;
  for (const auto& t : m.tensors) {
    by[t.dtype].first++;
    by[t.dtype].second += t.bytes();
  }
  EXPECT_EQ(by[DType::BF16], std::make_pair(520, std::uint64_t{3952883712}));
  EXPECT_EQ(by[DType::F32], std::make_pair(387, std::uint64_t{169229128}));
  EXPECT_EQ(by[DType::F8_E4M3], std::make_pair(357, std::uint64_t{204015223296}));
  EXPECT_EQ(by[DType::F8_E8M0], std::make_pair(47589, std::uint64_t{23563015184}));
  EXPECT_EQ(by[DType::I8], std::make_pair(47232, std::uint64_t{278585671680}));
  EXPECT_EQ(m.total_params(), 763205315794);
}

TEST(Manifest, ReleasedShapesOfSpecTable) {
  Manifest m = build_manifest(released());
  auto shape = [&](const char* n) {
    const TensorSpec* t = m.find(n);
    EXPECT_NE(t, nullptr) << n;
    return t ? t->shape : std::vector<std::int64_t>{};
  };
  using V = std::vector<std::int64_t>;
  EXPECT_EQ(shape("layers.0.attn.wq_b.scale"), (V{1024, 40}));
  EXPECT_EQ(shape("layers.0.attn.wo_a.weight"), (V{8192, 4096}));
  EXPECT_EQ(shape("layers.0.attn.wo_b.scale"), (V{160, 256}));
  EXPECT_EQ(shape("layers.0.ffn.experts.383.w2.weight"), (V{5120, 1152}));
  EXPECT_EQ(shape("layers.0.ffn.experts.0.w1.scale"), (V{2304, 160}));
  EXPECT_EQ(shape("layers.1.engram.embed.weight"), (V{384006168, 256}));
  EXPECT_EQ(shape("layers.14.engram.embed.scale"), (V{384016682, 8}));
  EXPECT_EQ(shape("layers.14.engram.wkv.scale"), (V{800, 192}));
  EXPECT_EQ(shape("mtp.0.main_proj.scale"), (V{160, 480}));
  EXPECT_EQ(shape("mtp.2.confidence_head.proj.weight"), (V{1, 5376}));
  EXPECT_EQ(shape("mtp.1.ffn.gate.bias_vl"), (V{128}));
  EXPECT_EQ(shape("aligner.w1.weight"), (V{5120, 9216}));
  EXPECT_EQ(shape("vision.blocks.31.mlp.w1.weight"), (V{5632, 1024}));
  EXPECT_EQ(m.find("layers.3.attn.compressor.wkv.weight"), nullptr);
  EXPECT_EQ(m.find("layers.20.attn.compressor.wgate.weight"), nullptr);
  EXPECT_NE(m.find("layers.20.attn.compressor.wkv.weight"), nullptr);
  EXPECT_EQ(m.find("layers.24.attn.indexer.wk.weight"), nullptr);
  EXPECT_NE(m.find("layers.24.attn.indexer.weights_proj.weight"), nullptr);
  EXPECT_EQ(m.find("mtp.0.ffn.experts.128.w1.weight"), nullptr);
  EXPECT_EQ(m.find("mtp.0.attn.indexer.wq_b.weight"), nullptr);
}

TEST(LayerRoles, ReleasedRolesOfSpecTable) {
  auto roles = layer_roles(released());
  ASSERT_EQ(roles.size(), 43u);
  EXPECT_EQ(roles[0].kind(), "window");
  EXPECT_EQ(roles[1].kind(), "window");
  EXPECT_EQ(roles[1].engram_index, 0);
  EXPECT_EQ(roles[14].engram_index, 1);
  for (int l : {2, 8, 14}) EXPECT_EQ(roles[l].kind(), "kv+index source") << l;
  EXPECT_EQ(roles[20].kind(), "kv+index+candidate source");
  for (int l : {24, 28, 32, 36}) {
    EXPECT_EQ(roles[l].kind(), "re-index") << l;
    EXPECT_TRUE(roles[l].uses_candidates);
    EXPECT_EQ(roles[l].index_keys_from, 20);
    EXPECT_EQ(roles[l].kv_from, 20);
  }
  EXPECT_EQ(roles[5].kv_from, 2);
  EXPECT_EQ(roles[5].topk_from, 2);
  EXPECT_EQ(roles[17].kv_from, 14);
  EXPECT_EQ(roles[22].topk_from, 20);
  EXPECT_EQ(roles[27].topk_from, 24);
  EXPECT_EQ(roles[39].topk_from, 36);
  EXPECT_FALSE(roles[20].uses_candidates);
  EXPECT_TRUE(roles[37].dspark_target);
  EXPECT_FALSE(roles[36].dspark_target);
  EXPECT_EQ(roles[40].kind(), "dspark");
  EXPECT_EQ(roles[0].rope_base, 10000);
  EXPECT_FALSE(roles[0].yarn);
  EXPECT_TRUE(roles[2].yarn);
  EXPECT_EQ(roles[2].rope_base, 160000);
}

}  // namespace
}  // namespace dsv4
