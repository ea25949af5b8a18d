// Round trips through SafetensorsWriter and the reader, and the reader's API on valid files.
#include "io/safetensors.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "io/safetensors_writer.h"
#include "safetensors_test_util.h"

namespace dsv4 {
namespace {

using sttest::error_of;
using sttest::pattern;
using sttest::TempDir;
using ::testing::HasSubstr;

TensorFill pattern_fill(std::size_t k) {
  return [k](std::span<std::uint8_t> dst, std::uint64_t off) {
    for (std::size_t i = 0; i < dst.size(); ++i) dst[i] = pattern(k, off + i);
  };
}

void expect_pattern(const TensorView& t, std::size_t k) {
  for (std::size_t i = 0; i < t.bytes.size(); ++i)
    ASSERT_EQ(t.bytes[i], pattern(k, i)) << t.name << " byte " << i;
}

constexpr DType kAll[] = {DType::BF16,    DType::F16, DType::F32, DType::F64, DType::F8_E4M3,
                          DType::F8_E8M0, DType::I8,  DType::U8,  DType::I32, DType::I64};

class SafetensorsDTypeRoundTrip : public ::testing::TestWithParam<DType> {};

TEST_P(SafetensorsDTypeRoundTrip, MatrixScalarAndEmpty) {
  const DType dt = GetParam();
  TempDir tmp;
  const std::string path = tmp.file("t.safetensors");
  SafetensorsWriter w;
  w.add("matrix", dt, {3, 5}, pattern_fill(0));
  w.add("scalar", dt, {}, pattern_fill(1));
  w.add("empty", dt, {0}, nullptr);
  w.add("empty2d", dt, {4, 0}, pattern_fill(3));
  w.write(path);

  SafetensorsFile f(path);
  ASSERT_EQ(f.tensors().size(), 4u);
  const std::size_t es = dtype_size(dt);

  const TensorView* m = f.find("matrix");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->dtype, dt);
  EXPECT_EQ(m->shape, (std::vector<std::int64_t>{3, 5}));
  EXPECT_EQ(m->numel(), 15);
  EXPECT_EQ(m->bytes.size(), 15 * es);
  EXPECT_EQ(m->file, &f.path());
  expect_pattern(*m, 0);

  const TensorView* s = f.find("scalar");
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(s->shape.empty());
  EXPECT_EQ(s->numel(), 1);
  EXPECT_EQ(s->bytes.size(), es);
  expect_pattern(*s, 1);

  for (const char* name : {"empty", "empty2d"}) {
    const TensorView* e = f.find(name);
    ASSERT_NE(e, nullptr) << name;
    EXPECT_EQ(e->numel(), 0);
    EXPECT_TRUE(e->bytes.empty());
    EXPECT_EQ(e->dtype, dt);
  }
  EXPECT_EQ(f.data_bytes(), 16 * es);
}

INSTANTIATE_TEST_SUITE_P(SafetensorsAllDTypes, SafetensorsDTypeRoundTrip, ::testing::ValuesIn(kAll),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(SafetensorsWriter, HeaderIsPaddedSortedAndDataInRegistrationOrder) {
  TempDir tmp;
  const std::string path = tmp.file("t.safetensors");
  SafetensorsWriter w;
  w.set_metadata({{"format", "pt"}});
  w.add("z.first", DType::U8, {3}, pattern_fill(0));
  w.add("a.second", DType::F32, {2}, pattern_fill(1));
  const std::string json =
      "{\"__metadata__\":{\"format\":\"pt\"},"
      "\"a.second\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[3,11]},"
      "\"z.first\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[0,3]}}";
  EXPECT_EQ(w.header(), json + std::string((8 - json.size() % 8) % 8, ' '));
  EXPECT_EQ(w.header().size() % 8, 0u);
  w.write(path);

  const auto bytes = sttest::read_file(path);
  ASSERT_GE(bytes.size(), 8u);
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[i];
  EXPECT_EQ(n, w.header().size());
  EXPECT_EQ(bytes.size(), 8 + n + 11);

  SafetensorsFile f(path);
  EXPECT_EQ(f.metadata().at("format"), "pt");
  EXPECT_EQ(f.data_offset(), 8 + n);
  ASSERT_EQ(f.tensors().size(), 2u);
  EXPECT_EQ(f.tensors()[0].name, "z.first");  // tensors() is in file order
  EXPECT_EQ(f.tensors()[1].name, "a.second");
  EXPECT_EQ(f.tensors()[1].file_offset, 8 + n + 3);
  expect_pattern(f.tensors()[0], 0);
  expect_pattern(f.tensors()[1], 1);
}

TEST(SafetensorsWriter, OutputIsDeterministic) {
  TempDir tmp;
  auto make = [&](const std::string& path) {
    SafetensorsWriter w;
    w.set_metadata({{"b", "2"}, {"a", "1"}});
    for (std::size_t k = 0; k < 5; ++k)
      w.add(fmt::format("t{}", k), DType::BF16, {static_cast<std::int64_t>(k + 1), 3},
            pattern_fill(k));
    w.write(path);
  };
  make(tmp.file("a.safetensors"));
  make(tmp.file("b.safetensors"));
  EXPECT_EQ(sttest::read_file(tmp.file("a.safetensors")),
            sttest::read_file(tmp.file("b.safetensors")));
}

TEST(SafetensorsWriter, StreamsLargeTensorsInConsecutiveChunks) {
  TempDir tmp;
  const std::string path = tmp.file("big.safetensors");
  const std::int64_t rows = 1024, cols = 2600;  // 10.6 MB of F32: three chunks
  const std::uint64_t total = static_cast<std::uint64_t>(rows * cols * 4);
  std::vector<std::pair<std::uint64_t, std::size_t>> calls;
  SafetensorsWriter w;
  w.add("big", DType::F32, {rows, cols}, [&](std::span<std::uint8_t> dst, std::uint64_t off) {
    calls.emplace_back(off, dst.size());
    for (std::size_t i = 0; i < dst.size(); ++i) dst[i] = pattern(9, off + i);
  });
  w.write(path);

  ASSERT_EQ(calls.size(), 3u);
  std::uint64_t next = 0;
  for (const auto& [off, n] : calls) {
    EXPECT_EQ(off, next);
    EXPECT_LE(n, SafetensorsWriter::kChunkBytes);
    next += n;
  }
  EXPECT_EQ(next, total);
  SafetensorsFile f(path);
  ASSERT_NE(f.find("big"), nullptr);
  expect_pattern(*f.find("big"), 9);
}

TEST(SafetensorsWriter, UntouchedBytesAreZero) {
  TempDir tmp;
  SafetensorsWriter w;
  w.add("lazy", DType::U8, {16}, [](std::span<std::uint8_t> dst, std::uint64_t) { dst[0] = 5; });
  w.write(tmp.file("z.safetensors"));
  SafetensorsFile f(tmp.file("z.safetensors"));
  const auto b = f.find("lazy")->bytes;
  EXPECT_EQ(b[0], 5);
  for (std::size_t i = 1; i < b.size(); ++i) EXPECT_EQ(b[i], 0) << i;
}

TEST(SafetensorsWriter, AddBytesRoundTripsAndChecksSize) {
  TempDir tmp;
  const std::vector<std::uint8_t> data = {1, 2, 3, 4, 5, 6, 7, 8};
  SafetensorsWriter w;
  w.add_bytes("x", DType::I32, {2}, data);
  EXPECT_THAT(error_of([&] { w.add_bytes("y", DType::I32, {3}, data); }),
              AllOf(HasSubstr("'y'"), HasSubstr("8 bytes given"), HasSubstr("12")));
  w.write(tmp.file("b.safetensors"));
  SafetensorsFile f(tmp.file("b.safetensors"));
  const auto b = f.find("x")->bytes;
  EXPECT_EQ(std::vector<std::uint8_t>(b.begin(), b.end()), data);
}

TEST(SafetensorsWriter, RejectsBadRegistrations) {
  SafetensorsWriter w;
  w.add("a", DType::U8, {1}, pattern_fill(0));
  EXPECT_THAT(error_of([&] { w.add("a", DType::U8, {1}, pattern_fill(0)); }),
              AllOf(HasSubstr("'a'"), HasSubstr("twice")));
  EXPECT_THAT(error_of([&] { w.add("__metadata__", DType::U8, {1}, pattern_fill(0)); }),
              HasSubstr("reserved"));
  EXPECT_THAT(error_of([&] {
                w.add("neg", DType::U8, {2, -1}, pattern_fill(0));
              }),
              AllOf(HasSubstr("'neg'"), HasSubstr("negative")));
  EXPECT_THAT(
      error_of([&] {
        w.add("huge", DType::F64, {std::int64_t{1} << 40, std::int64_t{1} << 30}, pattern_fill(0));
      }),
      AllOf(HasSubstr("'huge'"), HasSubstr("overflow")));
  EXPECT_THAT(error_of([&] { w.add(std::string("bad\xff", 4), DType::U8, {1}, pattern_fill(0)); }),
              HasSubstr("UTF-8"));
  EXPECT_THAT(error_of([&] { w.add("nofill", DType::U8, {1}, nullptr); }), HasSubstr("'nofill'"));
  EXPECT_EQ(w.tensor_count(), 1u);
}

TEST(SafetensorsWriter, FailedFillLeavesNoFileBehind) {
  TempDir tmp;
  const std::string path = tmp.file("fail.safetensors");
  sttest::write_text(path, "previous contents");
  SafetensorsWriter w;
  w.add("boom", DType::U8, {100}, [](std::span<std::uint8_t>, std::uint64_t) {
    throw std::runtime_error("source unavailable");
  });
  EXPECT_THROW(w.write(path), std::runtime_error);
  // The old file is untouched and no temporary is left in the directory.
  const auto old = sttest::read_file(path);
  EXPECT_EQ(std::string(old.begin(), old.end()), "previous contents");
  std::size_t entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(tmp.path())) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 1u);
}

TEST(SafetensorsWriter, EmptyFileRoundTrips) {
  TempDir tmp;
  SafetensorsWriter w;
  w.write(tmp.file("e.safetensors"));
  const auto bytes = sttest::read_file(tmp.file("e.safetensors"));
  EXPECT_EQ(bytes.size(), 16u);  // length + "{}" padded to 8
  SafetensorsFile f(tmp.file("e.safetensors"));
  EXPECT_TRUE(f.tensors().empty());
  EXPECT_TRUE(f.metadata().empty());
  EXPECT_EQ(f.data_bytes(), 0u);
}

TEST(SafetensorsReader, ViewsPointIntoTheMapAndSurviveMoves) {
  TempDir tmp;
  const std::string path = tmp.file("m.safetensors");
  SafetensorsWriter w;
  w.add("a", DType::U8, {3}, pattern_fill(0));  // odd size: "b" is misaligned on purpose
  w.add("b", DType::F32, {4}, pattern_fill(1));
  w.write(path);

  SafetensorsFile f(path);
  const auto whole = f.file_bytes();
  const TensorView* b = f.find("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->bytes.data(), whole.data() + b->file_offset);             // no copy
  EXPECT_NE(reinterpret_cast<std::uintptr_t>(b->bytes.data()) % 4, 0u);  // not 4-aligned
  float v0;
  std::memcpy(&v0, b->bytes.data(), sizeof v0);  // how kernels must read: unaligned-safe
  (void)v0;

  SafetensorsFile moved = std::move(f);
  EXPECT_EQ(moved.find("b"), b);  // same view object, same address
  EXPECT_EQ(b->file, &moved.path());
  EXPECT_EQ(*b->file, path);
  expect_pattern(*b, 1);
}

TEST(SafetensorsReader, ParseAcceptsHandBuiltFileWithPaddingAndZeroSizeTensors) {
  // Hand-built: zero-size tensors at offset 0, between, and at the end; header padded with spaces.
  const std::string header = R"({"e0":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},)"
                             R"("a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                             R"("e1":{"dtype":"I64","shape":[3,0],"data_offsets":[2,2]},)"
                             R"("e2":{"dtype":"BF16","shape":[0],"data_offsets":[2,2]},)"
                             R"("b":{"dtype":"BF16","shape":[],"data_offsets":[2,4]},)"
                             R"("e3":{"dtype":"U8","shape":[0],"data_offsets":[4,4]},)"
                             R"("__metadata__":{"k":"v"}}      )";
  const auto img = sttest::raw_image(header, 4);
  const SafetensorsHeader h = parse_safetensors(img, "hand.safetensors");
  ASSERT_EQ(h.tensors.size(), 6u);
  EXPECT_EQ(h.data_offset, 8 + header.size());
  EXPECT_EQ(h.metadata.at("k"), "v");
  std::vector<std::string> order;
  for (const auto& t : h.tensors) order.push_back(t.name);
  EXPECT_EQ(order, (std::vector<std::string>{"e0", "a", "e1", "e2", "b", "e3"}));
  EXPECT_EQ(h.tensors[1].bytes.data(), img.data() + 8 + header.size());
  EXPECT_EQ(h.tensors[4].bytes.size(), 2u);
  EXPECT_EQ(h.tensors[4].bytes[0], img[8 + header.size() + 2]);
  EXPECT_EQ(h.tensors[0].file, nullptr);
}

TEST(SafetensorsReader, TensorByteSize) {
  EXPECT_EQ(tensor_byte_size(DType::BF16, std::vector<std::int64_t>{}), 2u);
  EXPECT_EQ(tensor_byte_size(DType::F32, std::vector<std::int64_t>{2, 3}), 24u);
  EXPECT_EQ(tensor_byte_size(DType::F32, std::vector<std::int64_t>{0, 1}), 0u);
  EXPECT_FALSE(tensor_byte_size(DType::U8, std::vector<std::int64_t>{-1}));
  EXPECT_FALSE(tensor_byte_size(DType::U8, std::vector<std::int64_t>{1LL << 32, 1LL << 32}));
  EXPECT_FALSE(tensor_byte_size(DType::I64, std::vector<std::int64_t>{1LL << 61}));
  EXPECT_EQ(tensor_byte_size(DType::I64, std::vector<std::int64_t>{1LL << 59}), 1ull << 62);
  // Spec §3.1: a routed expert's packed-FP4 w1 weight.
  EXPECT_EQ(tensor_byte_size(DType::I8, std::vector<std::int64_t>{2304, 2560}), 5898240u);
}

}  // namespace
}  // namespace dsv4
