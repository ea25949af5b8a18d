// Checkpoint (single file / directory / HF sharded index) and ShardedCheckpointWriter.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "io/safetensors.h"
#include "io/safetensors_writer.h"
#include "safetensors_test_util.h"

namespace dsv4 {
namespace {

using sttest::error_of;
using sttest::pattern;
using sttest::TempDir;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TensorFill pattern_fill(std::size_t k) {
  return [k](std::span<std::uint8_t> dst, std::uint64_t off) {
    for (std::size_t i = 0; i < dst.size(); ++i) dst[i] = pattern(k, off + i);
  };
}

std::vector<std::string> names_of(const std::vector<const TensorView*>& ts) {
  std::vector<std::string> out;
  for (const auto* t : ts) out.push_back(t->name);
  return out;
}

std::string text_of(const std::string& path) {
  const auto b = sttest::read_file(path);
  return {b.begin(), b.end()};
}

TEST(SafetensorsCheckpoint, OpensSingleFile) {
  TempDir tmp;
  SafetensorsWriter w;
  w.add("zeta", DType::F32, {2}, pattern_fill(0));
  w.add("alpha", DType::BF16, {3}, pattern_fill(1));
  const std::string path = tmp.file("one.safetensors");
  w.write(path);

  const Checkpoint ck = Checkpoint::open(path);
  EXPECT_THAT(ck.shard_paths(), ElementsAre(path));
  EXPECT_EQ(ck.tensor_count(), 2u);
  EXPECT_EQ(ck.total_bytes(), 14u);
  EXPECT_THAT(names_of(ck.tensors()), ElementsAre("alpha", "zeta"));
  ASSERT_NE(ck.find("zeta"), nullptr);
  EXPECT_EQ(*ck.find("zeta")->file, path);
  EXPECT_EQ(ck.find("nope"), nullptr);
  EXPECT_EQ(ck.path(), path);
}

TEST(SafetensorsCheckpoint, OpensDirectoryWithModelSafetensors) {
  TempDir tmp;
  SafetensorsWriter w;
  w.add("x", DType::U8, {5}, pattern_fill(0));
  w.write(tmp.file("model.safetensors"));
  const Checkpoint ck = Checkpoint::open(tmp.path().string());
  EXPECT_THAT(ck.shard_paths(), ElementsAre(tmp.file("model.safetensors")));
  ASSERT_NE(ck.find("x"), nullptr);
  EXPECT_EQ(ck.find("x")->bytes[4], pattern(0, 4));
}

TEST(SafetensorsCheckpoint, MissingPathAndEmptyDirectory) {
  TempDir tmp;
  EXPECT_THAT(error_of([&] { Checkpoint::open(tmp.file("nothing")); }),
              AllOf(HasSubstr(tmp.file("nothing")), HasSubstr("does not exist")));
  EXPECT_THAT(error_of([&] { Checkpoint::open(tmp.path().string()); }),
              AllOf(HasSubstr(tmp.path().string()), HasSubstr("model.safetensors.index.json"),
                    HasSubstr("model.safetensors")));
}

TEST(SafetensorsSharded, ShardFileNames) {
  EXPECT_EQ(ShardedCheckpointWriter::shard_file_name(0, 3), "model-00001-of-00003.safetensors");
  EXPECT_EQ(ShardedCheckpointWriter::shard_file_name(47, 48), "model-00048-of-00048.safetensors");
  EXPECT_THAT(error_of([] { ShardedCheckpointWriter::shard_file_name(0, 100000); }),
              HasSubstr("5 digits"));
  EXPECT_THAT(error_of([] { ShardedCheckpointWriter("x", 0); }), HasSubstr("max_shard_bytes"));
}

TEST(SafetensorsSharded, RoundTrip) {
  TempDir tmp;
  const std::string dir = tmp.file("ck");  // created by write()
  ShardedCheckpointWriter w(dir, 100);
  w.add("a", DType::F32, {10}, pattern_fill(0));     // 40 B  shard 1
  w.add("b", DType::BF16, {20}, pattern_fill(1));    // 40 B  shard 1
  w.add("c", DType::I64, {5}, pattern_fill(2));      // 40 B  shard 2 (would make 120)
  w.add("d", DType::U8, {10, 20}, pattern_fill(3));  // 200 B shard 3 (alone: over the limit)
  w.add("e", DType::F8_E4M3, {0}, nullptr);          // 0 B   shard 3 (fits: adds nothing)
  w.add("f", DType::F8_E8M0, {}, pattern_fill(5));   // 1 B   shard 4
  EXPECT_EQ(w.plan(), (std::vector<std::vector<std::size_t>>{{0, 1}, {2}, {3, 4}, {5}}));
  const auto paths = w.write();

  std::vector<std::string> expect;
  for (int i = 1; i <= 4; ++i)
    expect.push_back(
        (std::filesystem::path(dir) / ("model-0000" + std::to_string(i) + "-of-00004.safetensors"))
            .string());
  EXPECT_EQ(paths, expect);

  const auto index = nlohmann::json::parse(text_of(dir + "/model.safetensors.index.json"));
  EXPECT_EQ(index["metadata"]["total_size"], 321);
  EXPECT_EQ(index["weight_map"]["a"], "model-00001-of-00004.safetensors");
  EXPECT_EQ(index["weight_map"]["c"], "model-00002-of-00004.safetensors");
  EXPECT_EQ(index["weight_map"]["e"], "model-00003-of-00004.safetensors");
  EXPECT_EQ(index["weight_map"]["f"], "model-00004-of-00004.safetensors");
  EXPECT_EQ(index["weight_map"].size(), 6u);

  const Checkpoint ck = Checkpoint::open(dir);
  EXPECT_EQ(ck.shard_paths(), expect);
  EXPECT_EQ(ck.tensor_count(), 6u);
  EXPECT_EQ(ck.total_bytes(), 321u);
  EXPECT_THAT(names_of(ck.tensors()), ElementsAre("a", "b", "c", "d", "e", "f"));
  for (const SafetensorsFile& shard : ck.shards()) EXPECT_EQ(shard.metadata().at("format"), "pt");
  const char* names = "abcdef";
  for (std::size_t k = 0; k < 6; ++k) {
    const TensorView* t = ck.find(std::string(1, names[k]));
    ASSERT_NE(t, nullptr) << names[k];
    for (std::size_t i = 0; i < t->bytes.size(); ++i) ASSERT_EQ(t->bytes[i], pattern(k, i));
  }
  EXPECT_EQ(*ck.find("d")->file, expect[2]);
  EXPECT_EQ(ck.find("d")->shape, (std::vector<std::int64_t>{10, 20}));
  EXPECT_EQ(ck.find("f")->dtype, DType::F8_E8M0);
}

TEST(SafetensorsSharded, DeterministicAndMetadataOptional) {
  TempDir tmp;
  auto make = [&](const std::string& dir, bool metadata) {
    ShardedCheckpointWriter w(dir, 64);
    if (!metadata) w.set_shard_metadata({});
    for (std::size_t k = 0; k < 7; ++k)
      w.add("layers." + std::to_string(k) + ".w", DType::BF16, {static_cast<std::int64_t>(k), 4},
            pattern_fill(k));
    return w.write();
  };
  const auto p1 = make(tmp.file("one"), true);
  const auto p2 = make(tmp.file("two"), true);
  ASSERT_EQ(p1.size(), p2.size());
  for (std::size_t i = 0; i < p1.size(); ++i)
    EXPECT_EQ(sttest::read_file(p1[i]), sttest::read_file(p2[i])) << p1[i];
  EXPECT_EQ(text_of(tmp.file("one") + "/model.safetensors.index.json"),
            text_of(tmp.file("two") + "/model.safetensors.index.json"));

  make(tmp.file("bare"), false);
  const Checkpoint ck = Checkpoint::open(tmp.file("bare"));
  for (const SafetensorsFile& shard : ck.shards()) EXPECT_TRUE(shard.metadata().empty());
  EXPECT_EQ(ck.tensor_count(), 7u);
}

TEST(SafetensorsSharded, NoTensorsWritesOnlyTheIndex) {
  TempDir tmp;
  ShardedCheckpointWriter w(tmp.file("empty"), 10);
  EXPECT_TRUE(w.write().empty());
  const Checkpoint ck = Checkpoint::open(tmp.file("empty"));
  EXPECT_EQ(ck.tensor_count(), 0u);
  EXPECT_TRUE(ck.shard_paths().empty());
}

TEST(SafetensorsSharded, RejectsDuplicateRegistration) {
  ShardedCheckpointWriter w("unused", 10);
  w.add("a", DType::U8, {1}, pattern_fill(0));
  EXPECT_THAT(error_of([&] { w.add("a", DType::U8, {1}, pattern_fill(0)); }),
              AllOf(HasSubstr("'a'"), HasSubstr("twice")));
}

// ---- invalid sharded checkpoints, built by hand ----

class SafetensorsShardedInvalid : public ::testing::Test {
 protected:
  // A shard of U8 tensors laid out back to back in the given order; returns its path.
  std::string shard(const std::string& file, const std::vector<std::pair<std::string, int>>& ts) {
    std::string h = "{";
    int pos = 0;
    for (const auto& [name, n] : ts) {
      if (h.size() > 1) h += ",";
      h += "\"" + name + "\":{\"dtype\":\"U8\",\"shape\":[" + std::to_string(n) +
           "],\"data_offsets\":[" + std::to_string(pos) + "," + std::to_string(pos + n) + "]}";
      pos += n;
    }
    h += "}";
    sttest::write_file(tmp_.file(file), sttest::raw_image(h, static_cast<std::size_t>(pos)));
    return tmp_.file(file);
  }
  std::string index_path() const { return tmp_.file("model.safetensors.index.json"); }
  // Writes the index text, opens the directory, and returns the error (which names the index).
  std::string open_error(std::string_view index_text, bool expect_index_named = true) {
    sttest::write_text(index_path(), index_text);
    std::string msg = error_of([&] { Checkpoint::open(tmp_.path().string()); });
    if (expect_index_named) {
      EXPECT_THAT(msg, HasSubstr(index_path()));
    }
    return msg;
  }
  void two_good_shards() {
    shard("s1.safetensors", {{"a", 2}, {"b", 3}});
    shard("s2.safetensors", {{"c", 4}});
  }

  TempDir tmp_;
};

TEST_F(SafetensorsShardedInvalid, HandBuiltValidIndexOpens) {
  two_good_shards();
  sttest::write_text(index_path(),
                     R"({"metadata":{"total_size":9},"weight_map":)"
                     R"({"a":"s1.safetensors","b":"s1.safetensors","c":"s2.safetensors"}})");
  const Checkpoint ck = Checkpoint::open(tmp_.path().string());
  EXPECT_EQ(ck.tensor_count(), 3u);
  EXPECT_EQ(ck.total_bytes(), 9u);
  EXPECT_THAT(ck.shard_paths(),
              ElementsAre(tmp_.file("s1.safetensors"), tmp_.file("s2.safetensors")));
}

TEST_F(SafetensorsShardedInvalid, BadJson) {
  EXPECT_THAT(open_error("{\"weight_map\": {"), HasSubstr("invalid JSON"));
  EXPECT_THAT(open_error("[]"), HasSubstr("must be a JSON object"));
}

TEST_F(SafetensorsShardedInvalid, MissingOrMistypedWeightMap) {
  EXPECT_THAT(open_error(R"({"metadata":{"total_size":0}})"), HasSubstr("missing \"weight_map\""));
  EXPECT_THAT(open_error(R"({"weight_map":["s1.safetensors"]})"),
              HasSubstr("\"weight_map\" must be an object"));
  EXPECT_THAT(open_error(R"({"weight_map":{"a":1}})"),
              AllOf(HasSubstr("tensor 'a'"), HasSubstr("must be a shard file name string")));
  EXPECT_THAT(open_error(R"({"weight_map":{"a":"../s1.safetensors"}})"),
              AllOf(HasSubstr("tensor 'a'"), HasSubstr("not a plain file name")));
  EXPECT_THAT(open_error(R"({"weight_map":{"a":".."}})"), HasSubstr("not a plain file name"));
  EXPECT_THAT(open_error(R"({"weight_map":{"a":""}})"), HasSubstr("not a plain file name"));
}

TEST_F(SafetensorsShardedInvalid, MistypedMetadata) {
  two_good_shards();
  EXPECT_THAT(open_error(R"({"metadata":5,"weight_map":{}})"),
              HasSubstr("\"metadata\" must be an object"));
  EXPECT_THAT(open_error(R"({"metadata":{"total_size":"9"},"weight_map":{}})"),
              HasSubstr("total_size\" must be a non-negative integer"));
  EXPECT_THAT(open_error(R"({"metadata":{"total_size":-1},"weight_map":{}})"),
              HasSubstr("total_size\" must be a non-negative integer"));
}

TEST_F(SafetensorsShardedInvalid, ShardDoesNotExist) {
  EXPECT_THAT(
      open_error(R"({"weight_map":{"a":"gone.safetensors"}})"),
      AllOf(HasSubstr("'gone.safetensors'"), HasSubstr("tensor 'a'"), HasSubstr("does not exist")));
}

TEST_F(SafetensorsShardedInvalid, TensorListedButAbsentFromShard) {
  two_good_shards();
  EXPECT_THAT(open_error(R"({"weight_map":{"a":"s1.safetensors","b":"s1.safetensors",)"
                         R"("c":"s2.safetensors","ghost":"s2.safetensors"}})"),
              AllOf(HasSubstr("tensor 'ghost'"), HasSubstr("s2.safetensors"),
                    HasSubstr("has no such tensor")));
}

TEST_F(SafetensorsShardedInvalid, TensorInShardButNotInIndex) {
  two_good_shards();
  EXPECT_THAT(
      open_error(R"({"weight_map":{"a":"s1.safetensors","c":"s2.safetensors"}})"),
      AllOf(HasSubstr("tensor 'b'"), HasSubstr("s1.safetensors"), HasSubstr("not in weight_map")));
}

TEST_F(SafetensorsShardedInvalid, TensorMappedToTheWrongShard) {
  two_good_shards();
  EXPECT_THAT(open_error(R"({"weight_map":{"a":"s1.safetensors","b":"s2.safetensors",)"
                         R"("c":"s2.safetensors"}})"),
              AllOf(HasSubstr("tensor 'b'"), HasSubstr("is in shard 's1.safetensors'"),
                    HasSubstr("puts it in 's2.safetensors'")));
}

TEST_F(SafetensorsShardedInvalid, SameTensorInTwoShards) {
  shard("s1.safetensors", {{"a", 2}, {"dup", 3}});
  shard("s2.safetensors", {{"dup", 3}, {"c", 1}});
  const std::string msg = open_error(
      R"({"weight_map":{"a":"s1.safetensors","dup":"s1.safetensors","c":"s2.safetensors"}})",
      /*expect_index_named=*/false);
  EXPECT_THAT(
      msg, AllOf(HasSubstr("tensor 'dup'"), HasSubstr("two shards"),
                 HasSubstr(tmp_.file("s1.safetensors")), HasSubstr(tmp_.file("s2.safetensors"))));
}

TEST_F(SafetensorsShardedInvalid, SameTensorTwiceInTheIndex) {
  two_good_shards();
  EXPECT_THAT(open_error(R"({"weight_map":{"a":"s1.safetensors","b":"s1.safetensors",)"
                         R"("c":"s2.safetensors","a":"s2.safetensors"}})"),
              AllOf(HasSubstr("duplicate key 'a'"), HasSubstr("'weight_map'")));
}

TEST_F(SafetensorsShardedInvalid, TotalSizeMismatch) {
  two_good_shards();
  EXPECT_THAT(open_error(R"({"metadata":{"total_size":10},"weight_map":)"
                         R"({"a":"s1.safetensors","b":"s1.safetensors","c":"s2.safetensors"}})"),
              AllOf(HasSubstr("total_size is 10"), HasSubstr("hold 9 bytes")));
}

TEST_F(SafetensorsShardedInvalid, CorruptShardNamesTheShard) {
  sttest::write_file(tmp_.file("s1.safetensors"), {1, 2, 3});
  const std::string msg =
      open_error(R"({"weight_map":{"a":"s1.safetensors"}})", /*expect_index_named=*/false);
  EXPECT_THAT(msg, AllOf(HasSubstr(tmp_.file("s1.safetensors")), HasSubstr("shorter")));
}

}  // namespace
}  // namespace dsv4
