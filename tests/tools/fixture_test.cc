// make-fixture → validate → inspect, and the errors a damaged model directory must produce.
// Damage is done here byte by byte on the files (not through the writer), the way a truncated
// download or a wrong conversion would leave them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include <nlohmann/json.hpp>

#include "cli_test_util.h"

namespace dsv4 {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using json = nlohmann::json;

// One tiny fixture shared by the suite (writing it takes a few seconds).
class Fixture : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir("fixture");
    model_ = *dir_ / "tiny";
    auto r = test::run_dsv4("make-fixture --preset tiny --seed 7 -q --out " + model_);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }

  // A copy of the model whose files are links to the original, except `copied`, which is a real
  // copy that the test may damage.
  static std::string clone(const std::string& tag, const std::vector<std::string>& copied) {
    std::string out = *dir_ / tag;
    fs::remove_all(out);
    fs::create_directories(out);
    for (const auto& e : fs::directory_iterator(model_)) {
      std::string name = e.path().filename().string();
      if (std::find(copied.begin(), copied.end(), name) != copied.end()) fs::copy_file(e.path(), fs::path(out) / name);
      else fs::create_symlink(e.path(), fs::path(out) / name);
    }
    return out;
  }

  static json index_of(const std::string& dir) { return json::parse(test::slurp(dir + "/model.safetensors.index.json")); }
  static std::string shard_of(const std::string& dir, const std::string& tensor) {
    return index_of(dir)["weight_map"][tensor].get<std::string>();
  }

  // Splits a safetensors file into (header JSON, data bytes).
  static std::pair<json, std::string> read_shard(const std::string& path) {
    std::string bytes = test::slurp(path);
    std::uint64_t n = 0;
    std::memcpy(&n, bytes.data(), 8);
    return {json::parse(bytes.substr(8, n)), bytes.substr(8 + n)};
  }
  static void write_shard(const std::string& path, const json& header, const std::string& data) {
    std::string h = header.dump();
    while (h.size() % 8) h += ' ';
    std::uint64_t n = h.size();
    std::string out(8, '\0');
    std::memcpy(out.data(), &n, 8);
    out += h;
    out += data;
    fs::remove(path);  // it may be a link to the original
    std::ofstream(path, std::ios::binary) << out;
  }

  static test::TempDir* dir_;
  static std::string model_;
};
test::TempDir* Fixture::dir_ = nullptr;
std::string Fixture::model_;

TEST_F(Fixture, ValidatesAndInspectAgreesWithItsConfig) {
  auto v = test::run_dsv4("validate -m " + model_);
  ASSERT_EQ(v.exit_code, 0) << v.err;
  EXPECT_THAT(v.out, HasSubstr("valid"));
  auto a = test::run_dsv4("inspect --json -m " + model_);
  auto b = test::run_dsv4("inspect --json --config " + model_ + "/config.json");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  json ja = json::parse(a.out), jb = json::parse(b.out);
  EXPECT_EQ(ja["model_dir"]["tensors"], ja["checkpoint"]["tensors"]);
  EXPECT_EQ(ja["model_dir"]["bytes"], ja["checkpoint"]["bytes"]);
  ja.erase("model_dir");
  EXPECT_EQ(ja, jb);
  // The fixture is sharded and the index totals its bytes.
  json idx = index_of(model_);
  EXPECT_GT(std::set<std::string>(idx["weight_map"].begin(), idx["weight_map"].end()).size(), 1u);
  EXPECT_EQ(idx["metadata"]["total_size"], ja["checkpoint"]["bytes"]);
}

TEST_F(Fixture, SameSeedSameBytesOtherSeedOtherBytes) {
  std::string again = *dir_ / "again", other = *dir_ / "other";
  // A different shard size must not change any tensor's bytes, only where they are stored.
  ASSERT_EQ(test::run_dsv4("make-fixture --preset tiny --seed 7 -q --shard-size 40 --out " + again).exit_code, 0);
  ASSERT_EQ(test::run_dsv4("make-fixture --preset tiny --seed 8 -q --out " + other).exit_code, 0);
  auto tensor_bytes = [](const std::string& dir, const std::string& name) {
    json idx = json::parse(test::slurp(dir + "/model.safetensors.index.json"));
    auto [h, data] = read_shard(dir + "/" + idx["weight_map"][name].get<std::string>());
    auto off = h[name]["data_offsets"];
    return data.substr(off[0].get<std::size_t>(), off[1].get<std::size_t>() - off[0].get<std::size_t>());
  };
  EXPECT_NE(index_of(again)["weight_map"], index_of(model_)["weight_map"]);
  for (const char* t : {"layers.2.attn.wq_b.weight", "layers.2.attn.wq_b.scale", "layers.5.ffn.experts.3.w2.weight",
                        "layers.1.engram.embed.weight", "mtp.2.markov_head.head.weight", "layers.0.hc_attn_base"}) {
    EXPECT_EQ(tensor_bytes(again, t), tensor_bytes(model_, t)) << t;
    EXPECT_NE(tensor_bytes(other, t), tensor_bytes(model_, t)) << t;
  }
  EXPECT_EQ(test::slurp(again + "/config.json"), test::slurp(model_ + "/config.json"));
  fs::remove_all(again);
  fs::remove_all(other);
}

TEST_F(Fixture, RefusesToOverwriteWithoutForce) {
  auto r = test::run_dsv4("make-fixture --preset tiny --seed 1 -q --out " + model_);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("not empty"));
  r = test::run_dsv4("make-fixture --preset huge --seed 1 --out " + (*dir_ / "x"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("unknown preset 'huge' (known: tiny, wide, long)"));
}

TEST_F(Fixture, TruncatedShardIsNamed) {
  std::string shard = shard_of(model_, "layers.3.attn.wkv.weight");
  std::string d = clone("trunc", {shard});
  fs::resize_file(d + "/" + shard, fs::file_size(d + "/" + shard) - 100);
  auto r = test::run_dsv4("validate -m " + d);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr(shard));
  EXPECT_THAT(r.err, ::testing::AnyOf(HasSubstr("truncated"), HasSubstr("beyond"), HasSubstr("end")));
}

TEST_F(Fixture, ChangedDtypeAndShapeAreListedTogether) {
  const std::string a = "layers.3.attn.q_norm.weight", b = "layers.3.attn.wkv.weight";
  std::string shard = shard_of(model_, a);
  ASSERT_EQ(shard, shard_of(model_, b));
  std::string d = clone("dtype", {shard});
  auto [h, data] = read_shard(d + "/" + shard);
  ASSERT_EQ(h[a]["dtype"], "BF16");
  h[a]["dtype"] = "F16";  // same size: the file stays a valid safetensors file
  auto shape = h[b]["shape"];
  h[b]["shape"] = {shape[1], shape[0]};
  write_shard(d + "/" + shard, h, data);
  auto r = test::run_dsv4("validate -m " + d);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("2 problems"));
  EXPECT_THAT(r.err, HasSubstr("tensor '" + a + "' in " + shard + ": dtype F16, expected BF16"));
  EXPECT_THAT(r.err, HasSubstr("tensor '" + b + "' in " + shard + ": shape [256, 128], expected [128, 256]"));
}

TEST_F(Fixture, DeletedAndExtraTensorsAreListed) {
  const std::string gone = "layers.4.attn.indexer.k_norm.weight";
  std::string shard = shard_of(model_, gone);
  std::string d = clone("deleted", {shard, "model.safetensors.index.json"});
  auto [h, data] = read_shard(d + "/" + shard);
  // Remove the tensor's bytes and entry, shift the later offsets; add an unknown tensor instead.
  auto off = h[gone]["data_offsets"];
  std::size_t b0 = off[0], b1 = off[1], len = b1 - b0;
  std::string removed = data.substr(b0, len);
  data.erase(b0, len);
  h.erase(gone);
  for (auto& [k, v] : h.items())
    if (k != "__metadata__" && v["data_offsets"][0].get<std::size_t>() >= b1)
      v["data_offsets"] = {v["data_offsets"][0].get<std::size_t>() - len, v["data_offsets"][1].get<std::size_t>() - len};
  h["layers.4.attn.surprise"] = {{"dtype", "BF16"}, {"shape", {static_cast<std::int64_t>(len / 2)}},
                                 {"data_offsets", {data.size(), data.size() + len}}};
  data += removed;
  write_shard(d + "/" + shard, h, data);
  json idx = index_of(d);
  idx["weight_map"].erase(gone);
  idx["weight_map"]["layers.4.attn.surprise"] = shard;
  fs::remove(d + "/model.safetensors.index.json");
  std::ofstream(d + "/model.safetensors.index.json") << idx.dump();
  auto r = test::run_dsv4("validate -m " + d);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("missing tensor '" + gone + "' (BF16 [64])"));
  EXPECT_THAT(r.err, HasSubstr("unexpected tensor 'layers.4.attn.surprise' in " + shard));
}

TEST_F(Fixture, IndexPointingAtAMissingShardIsNamed) {
  std::string d = clone("noshard", {});
  std::string shard = shard_of(model_, "embed.weight");
  fs::remove(d + "/" + shard);
  auto r = test::run_dsv4("validate -m " + d);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr(shard));
}

TEST_F(Fixture, BrokenConfigIsNamed) {
  std::string d = clone("cfg", {"config.json"});
  json c = json::parse(test::slurp(d + "/config.json"));
  c["compress_ratios"].erase(0);
  fs::remove(d + "/config.json");
  std::ofstream(d + "/config.json") << c.dump();
  auto r = test::run_dsv4("validate -m " + d);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("compress_ratios: must have n_layers + n_mtp_layers = 12 + 3 = 15 entries (has 14)"));
}

}  // namespace
}  // namespace dsv4

namespace dsv4 {
namespace {

// With --tokenizer, the fixture ships the tokenizer files and a config whose Engram compressed
// vocabulary is the tokenizer's own (98,627 keys for DeepSeek V3: spec §16.6).
TEST(FixtureTokenizer, ShipsTheTokenizerAndItsEngramVocabulary) {
  std::string tok = test::test_data_dir() + "/tokenizer.json";
  ASSERT_TRUE(fs::exists(tok)) << tok << " is missing: run `bash tests/data/fetch_test_data.sh`";
  test::TempDir d("fixture_tok");
  std::string out = d / "m";
  auto r = test::run_dsv4("make-fixture --preset tiny --seed 2 -q --out " + out + " --tokenizer " + tok);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("tokenizer with 98627 Engram keys"));
  json cfg = json::parse(test::slurp(out + "/config.json"));
  EXPECT_EQ(cfg["engram_compressed_vocab_size"], 98627);
  EXPECT_TRUE(fs::exists(out + "/tokenizer.json"));
  EXPECT_TRUE(fs::exists(out + "/tokenizer_config.json"));
  auto v = test::run_dsv4("validate -m " + out);
  ASSERT_EQ(v.exit_code, 0) << v.err;
  EXPECT_THAT(v.out, HasSubstr("consistent with engram_compressed_vocab_size 98,627"));
  // A config that disagrees with its tokenizer is rejected by validate.
  cfg["engram_compressed_vocab_size"] = 99092;
  fs::remove(out + "/config.json");
  std::ofstream(out + "/config.json") << cfg.dump();
  v = test::run_dsv4("validate -m " + out);
  EXPECT_EQ(v.exit_code, 1);
  EXPECT_THAT(v.err, HasSubstr("98627 keys but the config says engram_compressed_vocab_size = 99092"));
}

}  // namespace
}  // namespace dsv4
