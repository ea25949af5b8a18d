// Every way a single safetensors file can be malformed, each built byte by byte (no writer), must
// produce a dsv4::Error naming the file and the tensor / rule.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "io/safetensors.h"
#include "safetensors_test_util.h"

namespace dsv4 {
namespace {

using sttest::error_of;
using ::testing::AllOf;
using ::testing::HasSubstr;

class SafetensorsInvalid : public ::testing::Test {
 protected:
  // Writes `img` to a file, opens it, and returns the error message, which must name the file.
  std::string open_error(const std::vector<std::uint8_t>& img) {
    const std::string path = tmp_.file("bad.safetensors");
    sttest::write_file(path, img);
    std::string msg = error_of([&] { SafetensorsFile f(path); });
    EXPECT_THAT(msg, HasSubstr(path));
    // The in-memory parser (the fuzz entry point) reports the same error with the label.
    std::string mem = error_of([&] { parse_safetensors(img, "LABEL"); });
    EXPECT_THAT(mem, HasSubstr("LABEL"));
    return msg;
  }
  std::string header_error(std::string_view header, std::size_t data_size) {
    return open_error(sttest::raw_image(header, data_size));
  }
  // One tensor "w" with the given entry JSON and data size.
  std::string entry_error(std::string_view entry, std::size_t data_size) {
    return header_error("{\"w\":" + std::string(entry) + "}", data_size);
  }

  sttest::TempDir tmp_;
};

TEST_F(SafetensorsInvalid, ShorterThanEightBytes) {
  EXPECT_THAT(open_error({1, 2, 3, 4, 5}), HasSubstr("shorter than the 8-byte"));
  EXPECT_THAT(open_error({}), HasSubstr("0 bytes"));
}

TEST_F(SafetensorsInvalid, HeaderLengthBeyondFile) {
  EXPECT_THAT(open_error(sttest::raw_image("{}", 0, 100)), HasSubstr("truncated"));
  EXPECT_THAT(open_error(sttest::raw_image("{}", 0, 3)), HasSubstr("truncated"));
  EXPECT_THAT(open_error(sttest::raw_image("{}", 0, 1)), HasSubstr("invalid JSON"));
}

TEST_F(SafetensorsInvalid, AbsurdHeaderLength) {
  EXPECT_THAT(open_error(sttest::raw_image("{}", 0, std::uint64_t{1} << 62)),
              AllOf(HasSubstr("exceeds the limit"), HasSubstr("4611686018427387904")));
  EXPECT_THAT(open_error(sttest::raw_image("{}", 0, ~std::uint64_t{0})), HasSubstr("limit"));
}

TEST_F(SafetensorsInvalid, BadJson) {
  EXPECT_THAT(header_error("{\"w\": ", 0), HasSubstr("invalid JSON"));
  EXPECT_THAT(header_error("", 0), HasSubstr("invalid JSON"));
  EXPECT_THAT(header_error("{} trailing", 0), HasSubstr("invalid JSON"));
  EXPECT_THAT(header_error(std::string("{\"w\xff\":1}", 8), 0), HasSubstr("invalid JSON"));
  EXPECT_THAT(header_error(std::string("{}\0\0", 4), 0), HasSubstr("invalid JSON"));
}

TEST_F(SafetensorsInvalid, TooDeeplyNested) {
  EXPECT_THAT(header_error("{\"w\":" + std::string(100, '[') + std::string(100, ']') + "}", 0),
              HasSubstr("nested deeper"));
  EXPECT_THAT(header_error(std::string(1000000, '['), 0), HasSubstr("nested deeper"));
}

TEST_F(SafetensorsInvalid, NotAnObject) {
  EXPECT_THAT(header_error("[1,2]", 0), HasSubstr("must be a JSON object"));
  EXPECT_THAT(header_error("\"x\"", 0), HasSubstr("must be a JSON object"));
}

TEST_F(SafetensorsInvalid, EntryNotAnObject) {
  EXPECT_THAT(entry_error("5", 0), AllOf(HasSubstr("tensor 'w'"), HasSubstr("must be an object")));
}

TEST_F(SafetensorsInvalid, WrongFieldTypes) {
  EXPECT_THAT(entry_error(R"({"dtype":5,"shape":[],"data_offsets":[0,1]})", 1),
              AllOf(HasSubstr("tensor 'w'"), HasSubstr("\"dtype\" must be a string")));
  EXPECT_THAT(entry_error(R"({"dtype":"U8","shape":"1","data_offsets":[0,1]})", 1),
              AllOf(HasSubstr("tensor 'w'"), HasSubstr("\"shape\" must be an array")));
  EXPECT_THAT(entry_error(R"({"dtype":"U8","shape":[1.0],"data_offsets":[0,1]})", 1),
              AllOf(HasSubstr("tensor 'w'"), HasSubstr("shape[0] must be a non-negative integer")));
  EXPECT_THAT(entry_error(R"({"dtype":"U8","shape":[true],"data_offsets":[0,1]})", 1),
              HasSubstr("shape[0] must be a non-negative integer"));
  EXPECT_THAT(entry_error(R"({"dtype":"U8","shape":[1],"data_offsets":[0]})", 1),
              AllOf(HasSubstr("tensor 'w'"), HasSubstr("\"data_offsets\" must be an array")));
  EXPECT_THAT(entry_error(R"({"dtype":"U8","shape":[1],"data_offsets":[0,1,2]})", 1),
              HasSubstr("\"data_offsets\" must be an array"));
  EXPECT_THAT(entry_error(R"({"dtype":"U8","shape":[1],"data_offsets":{"a":1}})", 1),
              HasSubstr("\"data_offsets\" must be an array"));
  EXPECT_THAT(entry_error(R"({"dtype":"U8","shape":[1],"data_offsets":["0",1]})", 1),
              AllOf(HasSubstr("tensor 'w'"), HasSubstr("two non-negative integers")));
  EXPECT_THAT(entry_error(R"({"dtype":"U8","shape":[1],"data_offsets":[-1,0]})", 1),
              HasSubstr("two non-negative integers"));
  EXPECT_THAT(entry_error(R"({"dtype":"U8","shape":[1],"data_offsets":[0,1e0]})", 1),
              HasSubstr("two non-negative integers"));
}

TEST_F(SafetensorsInvalid, MissingFields) {
  EXPECT_THAT(entry_error(R"({"shape":[1],"data_offsets":[0,1]})", 1),
              AllOf(HasSubstr("tensor 'w'"), HasSubstr("missing field \"dtype\"")));
  EXPECT_THAT(entry_error(R"({"dtype":"U8","data_offsets":[0,1]})", 1),
              AllOf(HasSubstr("tensor 'w'"), HasSubstr("missing field \"shape\"")));
  EXPECT_THAT(entry_error(R"({"dtype":"U8","shape":[1]})", 1),
              AllOf(HasSubstr("tensor 'w'"), HasSubstr("missing field \"data_offsets\"")));
}

TEST_F(SafetensorsInvalid, ExtraField) {
  EXPECT_THAT(entry_error(R"({"dtype":"U8","shape":[1],"data_offsets":[0,1],"offset":0})", 1),
              AllOf(HasSubstr("tensor 'w'"), HasSubstr("unexpected field \"offset\"")));
}

TEST_F(SafetensorsInvalid, UnknownDtype) {
  EXPECT_THAT(entry_error(R"({"dtype":"F8_E5M2","shape":[1],"data_offsets":[0,1]})", 1),
              AllOf(HasSubstr("tensor 'w'"), HasSubstr("unknown dtype \"F8_E5M2\""),
                    HasSubstr("BF16, F16, F32, F64, F8_E4M3, F8_E8M0, I8, U8, I32, I64")));
  EXPECT_THAT(entry_error(R"({"dtype":"bf16","shape":[1],"data_offsets":[0,2]})", 2),
              HasSubstr("unknown dtype"));
}

TEST_F(SafetensorsInvalid, NegativeDim) {
  EXPECT_THAT(entry_error(R"({"dtype":"U8","shape":[2,-3],"data_offsets":[0,6]})", 6),
              AllOf(HasSubstr("tensor 'w'"), HasSubstr("shape[1] = -3 is negative")));
}

TEST_F(SafetensorsInvalid, OverflowingShape) {
  // Element count overflows.
  EXPECT_THAT(
      entry_error(R"({"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,0]})", 0),
      AllOf(HasSubstr("tensor 'w'"), HasSubstr("overflows")));
  // Element count fits, bytes do not.
  EXPECT_THAT(
      entry_error(R"({"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,0]})", 0),
      AllOf(HasSubstr("tensor 'w'"), HasSubstr("overflows")));
  // A dim beyond int64.
  EXPECT_THAT(
      entry_error(R"({"dtype":"U8","shape":[9223372036854775808],"data_offsets":[0,0]})", 0),
      AllOf(HasSubstr("tensor 'w'"), HasSubstr("too large")));
  // A dim beyond uint64 parses as a float.
  EXPECT_THAT(
      entry_error(R"({"dtype":"U8","shape":[99999999999999999999],"data_offsets":[0,0]})", 0),
      HasSubstr("non-negative integer"));
  // Overflow is checked at every step, even when a later dim is 0.
  EXPECT_THAT(
      entry_error(R"({"dtype":"U8","shape":[9223372036854775807,2,0],"data_offsets":[0,0]})", 0),
      HasSubstr("overflows"));
}

TEST_F(SafetensorsInvalid, SizeMismatch) {
  EXPECT_THAT(entry_error(R"({"dtype":"F32","shape":[2,2],"data_offsets":[0,8]})", 8),
              AllOf(HasSubstr("tensor 'w'"), HasSubstr("needs 16 bytes"), HasSubstr("span 8")));
}

TEST_F(SafetensorsInvalid, BeginAfterEnd) {
  EXPECT_THAT(entry_error(R"({"dtype":"U8","shape":[0],"data_offsets":[4,2]})", 4),
              AllOf(HasSubstr("tensor 'w'"), HasSubstr("begin 4 > end 2")));
}

TEST_F(SafetensorsInvalid, EndBeyondDataSection) {
  EXPECT_THAT(
      entry_error(R"({"dtype":"F32","shape":[4],"data_offsets":[0,16]})", 10),
      AllOf(HasSubstr("tensor 'w'"), HasSubstr("beyond the data section"), HasSubstr("truncated")));
  EXPECT_THAT(
      entry_error(
          R"({"dtype":"U8","shape":[1],"data_offsets":[18446744073709551614,18446744073709551615]})",
          1),
      AllOf(HasSubstr("tensor 'w'"), HasSubstr("beyond the data section")));
}

TEST_F(SafetensorsInvalid, Overlap) {
  EXPECT_THAT(header_error(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                           R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                           12),
              AllOf(HasSubstr("tensor 'b'"), HasSubstr("overlaps tensor 'a'")));
  // Identical ranges, and a zero-size tensor strictly inside another.
  EXPECT_THAT(header_error(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                           R"("b":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})",
                           4),
              HasSubstr("overlaps"));
  EXPECT_THAT(header_error(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                           R"("z":{"dtype":"U8","shape":[0],"data_offsets":[2,2]}})",
                           4),
              AllOf(HasSubstr("tensor 'z'"), HasSubstr("overlaps tensor 'a'")));
}

TEST_F(SafetensorsInvalid, Hole) {
  EXPECT_THAT(header_error(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                           R"("b":{"dtype":"U8","shape":[4],"data_offsets":[8,12]}})",
                           12),
              AllOf(HasSubstr("hole"), HasSubstr("[4, 8)"), HasSubstr("tensor 'a'"),
                    HasSubstr("tensor 'b'")));
  EXPECT_THAT(entry_error(R"({"dtype":"U8","shape":[4],"data_offsets":[4,8]})", 8),
              AllOf(HasSubstr("hole"), HasSubstr("[0, 4)"), HasSubstr("tensor 'w'")));
}

TEST_F(SafetensorsInvalid, DataSectionNotFullyCovered) {
  EXPECT_THAT(entry_error(R"({"dtype":"U8","shape":[4],"data_offsets":[0,4]})", 7),
              AllOf(HasSubstr("3 trailing bytes"), HasSubstr("tensor 'w'")));
  EXPECT_THAT(header_error("{}", 5), HasSubstr("lists no tensors"));
  EXPECT_THAT(header_error(R"({"__metadata__":{}})", 1), HasSubstr("lists no tensors"));
}

TEST_F(SafetensorsInvalid, DuplicateTensorName) {
  EXPECT_THAT(header_error(R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                           R"("w":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
                           2),
              AllOf(HasSubstr("duplicate key 'w'"), HasSubstr("top-level")));
}

TEST_F(SafetensorsInvalid, DuplicateFieldInEntry) {
  EXPECT_THAT(entry_error(R"({"dtype":"U8","dtype":"U8","shape":[1],"data_offsets":[0,1]})", 1),
              AllOf(HasSubstr("duplicate key 'dtype'"), HasSubstr("'w'")));
}

TEST_F(SafetensorsInvalid, BadMetadata) {
  EXPECT_THAT(header_error(R"({"__metadata__":{"format":1}})", 0),
              AllOf(HasSubstr("__metadata__"), HasSubstr("\"format\" must be a string")));
  EXPECT_THAT(header_error(R"({"__metadata__":["pt"]})", 0),
              AllOf(HasSubstr("__metadata__"), HasSubstr("must be an object")));
  EXPECT_THAT(header_error(R"({"__metadata__":{"a":"1","a":"2"}})", 0),
              AllOf(HasSubstr("duplicate key 'a'"), HasSubstr("'__metadata__'")));
}

TEST_F(SafetensorsInvalid, MissingFileNamesThePath) {
  const std::string path = tmp_.file("absent.safetensors");
  EXPECT_THAT(error_of([&] { SafetensorsFile f(path); }), HasSubstr(path));
}

}  // namespace
}  // namespace dsv4
