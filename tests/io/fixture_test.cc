// Synthetic checkpoints: every preset is a valid architecture, and the weights a fixture writes
// have the statistics the fixture promises (decoded here with the format tables, independently
// of the generator): linears of std ≈ 1/√fan_in, norms near 1, a strongly diagonal hc comb base.
#include "io/fixture.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "io/checkpoint_validation.h"
#include "io/manifest.h"
#include "io/safetensors.h"
#include "numeric/bf16.h"
#include "numeric/e2m1.h"
#include "numeric/e4m3.h"
#include "numeric/e8m0.h"

namespace dsv4 {
namespace {

TEST(FixturePresets, EveryPresetIsAValidArchitecture) {
  for (const std::string& name : fixture_preset_names()) {
    ModelConfig c = fixture_preset(name);
    EXPECT_NO_THROW(c.validate()) << name;
    Manifest m = build_manifest(c);
    EXPECT_GT(m.tensors.size(), 100u) << name;
  }
  // tiny must exercise every layer role, Engram, DSpark and vision.
  ModelConfig t = fixture_preset("tiny");
  EXPECT_LE(t.dim, 256);
  EXPECT_EQ(t.vocab_size, 129280);
  EXPECT_GT(t.window_size + t.index_topk, 64);
  EXPECT_GE(t.candidate_topk_blocks * t.candidate_block_size, t.index_topk);
  EXPECT_TRUE(t.has_engram() && t.has_vision() && t.n_mtp_layers == 3);
  // wide keeps the released per-layer widths and fits a 24 GiB machine.
  ModelConfig w = fixture_preset("wide");
  ModelConfig rel;
  EXPECT_EQ(w.dim, rel.dim);
  EXPECT_EQ(w.n_heads * w.head_dim, rel.n_heads * rel.head_dim);
  EXPECT_EQ(w.q_lora_rank, rel.q_lora_rank);
  EXPECT_EQ(w.o_groups * w.o_lora_rank, rel.o_groups * rel.o_lora_rank);
  EXPECT_EQ(w.moe_inter_dim, rel.moe_inter_dim);
  EXPECT_EQ(w.index_n_heads * w.index_head_dim, rel.index_n_heads * rel.index_head_dim);
  EXPECT_LT(build_manifest(w).total_bytes(), 12ull << 30);
  // long keeps the released attention geometry per head, the released index heads and a context
  // past the candidate budget.
  ModelConfig l = fixture_preset("long");
  EXPECT_EQ(l.head_dim, rel.head_dim);
  EXPECT_EQ(l.window_size, rel.window_size);
  EXPECT_EQ(l.index_head_dim, rel.index_head_dim);
  EXPECT_EQ(l.index_topk, rel.index_topk);
  EXPECT_EQ(l.candidate_topk_blocks * l.candidate_block_size, rel.candidate_topk_blocks * rel.candidate_block_size);
  EXPECT_EQ(l.index_n_heads, rel.index_n_heads);
  EXPECT_GT(l.max_seq_len, 2 * l.candidate_topk_blocks * l.candidate_block_size);
  EXPECT_LT(build_manifest(l).total_bytes(), 1ull << 30);
}

class FixtureWeights : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = (std::filesystem::temp_directory_path() / ("dsv4_fxw_" + std::to_string(::getpid()))).string();
    std::filesystem::remove_all(dir_);
    FixtureOptions o;
    o.seed = 3;
    o.out_dir = dir_;
    c_ = fixture_preset("tiny");
    write_fixture(c_, o);
    ck_ = new Checkpoint(Checkpoint::open(dir_));
  }
  static void TearDownTestSuite() {
    delete ck_;
    std::filesystem::remove_all(dir_);
  }
  static const TensorView& get(const std::string& n) {
    const TensorView* v = ck_->find(n);
    EXPECT_NE(v, nullptr) << n;
    return *v;
  }
  static std::vector<float> dequant_fp8(const std::string& base) {
    const TensorView& w = get(base + ".weight");
    const TensorView& s = get(base + ".scale");
    std::int64_t rows = w.shape[0], cols = w.shape[1], rb = (rows + s.shape[0] - 1) / s.shape[0];
    std::vector<float> out(rows * cols);
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < cols; ++c)
        out[r * cols + c] = e4m3_to_f32(w.bytes[r * cols + c]) * e8m0_to_f32(s.bytes[(r / rb) * s.shape[1] + c / 32]);
    return out;
  }
  static std::vector<float> dequant_fp4(const std::string& base) {
    const TensorView& w = get(base + ".weight");
    const TensorView& s = get(base + ".scale");
    std::int64_t rows = w.shape[0], cols = w.shape[1] * 2;
    std::vector<float> out(rows * cols);
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < cols; ++c) {
        std::uint8_t byte = w.bytes[r * (cols / 2) + c / 2];
        std::uint8_t code = (c % 2 == 0) ? (byte & 0xF) : (byte >> 4);
        out[r * cols + c] = e2m1_to_f32(code) * e8m0_to_f32(s.bytes[r * s.shape[1] + c / 32]);
      }
    return out;
  }
  static std::vector<float> bf16s(const std::string& n) {
    const TensorView& v = get(n);
    std::vector<float> out(v.numel());
    for (std::size_t i = 0; i < out.size(); ++i) {
      BF16 b;
      std::memcpy(&b.bits, v.bytes.data() + 2 * i, 2);
      out[i] = bf16_to_f32(b);
    }
    return out;
  }
  static std::pair<double, double> mean_std(const std::vector<float>& x) {
    double s = 0, s2 = 0;
    for (float v : x) s += v;
    double m = s / x.size();
    for (float v : x) s2 += (v - m) * (v - m);
    return {m, std::sqrt(s2 / x.size())};
  }
  static std::string dir_;
  static ModelConfig c_;
  static Checkpoint* ck_;
};
std::string FixtureWeights::dir_;
ModelConfig FixtureWeights::c_;
Checkpoint* FixtureWeights::ck_ = nullptr;

TEST_F(FixtureWeights, PassesValidation) { EXPECT_NO_THROW(validate_model_dir(dir_, c_)); }

TEST_F(FixtureWeights, QuantisedLinearsHaveStdOneOverSqrtFanIn) {
  for (const char* base : {"layers.2.attn.wq_b", "layers.0.attn.wkv", "layers.3.ffn.shared_experts.w2", "mtp.0.main_proj"}) {
    auto w = dequant_fp8(base);
    auto [m, sd] = mean_std(w);
    double fan_in = get(std::string(base) + ".weight").shape[1];
    EXPECT_NEAR(sd * std::sqrt(fan_in), 1.0, 0.15) << base;
    EXPECT_NEAR(m * std::sqrt(fan_in), 0.0, 0.1) << base;
  }
  for (const char* base : {"layers.5.ffn.experts.0.w1", "layers.5.ffn.experts.7.w2", "mtp.1.ffn.experts.3.w3"}) {
    auto w = dequant_fp4(base);
    auto [m, sd] = mean_std(w);
    double fan_in = get(std::string(base) + ".weight").shape[1] * 2.0;
    EXPECT_NEAR(sd * std::sqrt(fan_in), 1.0, 0.25) << base;
  }
  // The block scales vary (one step coarser for some blocks), as real checkpoints' do.
  const TensorView& s = get("layers.2.attn.wq_b.scale");
  std::set<std::uint8_t> distinct(s.bytes.begin(), s.bytes.end());
  EXPECT_EQ(distinct.size(), 2u);
}

TEST_F(FixtureWeights, NormsNearOneAndHcBaseDiagonal) {
  auto [m, sd] = mean_std(bf16s("layers.4.attn.kv_norm.weight"));
  EXPECT_NEAR(m, 1.0, 0.02);
  EXPECT_GT(sd, 0.01);
  EXPECT_LT(sd, 0.1);
  const TensorView& base = get("layers.1.hc_ffn_base");
  std::vector<float> b(base.numel());
  std::memcpy(b.data(), base.bytes.data(), base.bytes.size());
  const int hc = static_cast<int>(c_.hc_mult);
  for (int r = 0; r < hc; ++r)
    for (int k = 0; k < hc; ++k) {
      float v = b[2 * hc + r * hc + k];
      if (r == k) EXPECT_GT(v, 1.0f);
      else EXPECT_LT(v, 2.0f);
    }
}

TEST(FixtureNormal, DeterministicAndStandardised) {
  double s = 0, s2 = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    float v = fixture_normal(5, "x", i);
    EXPECT_EQ(v, fixture_normal(5, "x", i));
    s += v;
    s2 += v * v;
  }
  EXPECT_NEAR(s / n, 0.0, 0.01);
  EXPECT_NEAR(s2 / n, 1.0, 0.02);
  EXPECT_NE(fixture_normal(5, "x", 0), fixture_normal(6, "x", 0));
  EXPECT_NE(fixture_normal(5, "x", 0), fixture_normal(5, "y", 0));
}

}  // namespace
}  // namespace dsv4
