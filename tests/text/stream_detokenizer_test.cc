// Streaming decode (stream_detokenizer.h) and the UTF-8 repair under it (utf8_lossy.h):
//   - from_utf8_lossy's replacement of maximal subparts, on the example of Unicode §3.9;
//   - the incomplete-suffix rule, and that splitting there never changes the decoded text;
//   - StreamDetokenizer: every chunk valid UTF-8, all chunks together equal Tokenizer::decode,
//     on real text and on random byte tokens that split characters;
//   - StopStringHolder: the text before a stop string, nothing of the stop itself, and results
//     independent of chunking (checked against a brute-force scan).
#include "text/stream_detokenizer.h"

#include <gtest/gtest.h>

#include <random>

#include "text/byte_level.h"
#include "text/utf8.h"
#include "text/utf8_lossy.h"
#include "text_test_data.h"
#include "tokenizer_test_util.h"
#include "util/error.h"

namespace dsv4 {
namespace {

using Ids = std::vector<std::int32_t>;

TEST(Utf8Lossy, ReplacesMaximalSubparts) {
  // Unicode 15.0 §3.9, "U+FFFD Substitution of Maximal Subparts":
  // 61 F1 80 80 E1 80 C2 62 80 63 80 BF 64 -> a FFFD FFFD FFFD b FFFD c FFFD FFFD d
  EXPECT_EQ(utf8_lossy("\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64"),
            "a\uFFFD\uFFFD\uFFFDb\uFFFDc\uFFFD\uFFFDd");
  EXPECT_EQ(utf8_lossy("\xED\xA0\x80"), "\uFFFD\uFFFD\uFFFD");  // a surrogate: ED is a subpart alone
  EXPECT_EQ(utf8_lossy("\xC0\xAF"), "\uFFFD\uFFFD");            // overlong lead bytes are never valid
  EXPECT_EQ(utf8_lossy("\xF0\x9F\x98"), "\uFFFD");              // truncated at the end: one U+FFFD
  EXPECT_EQ(utf8_lossy("ok \xE4\xB8\xAD"), "ok 中");
  EXPECT_EQ(utf8_first_invalid("abc\xFF"), 3u);
  EXPECT_EQ(utf8_first_invalid("abcdefghijk"), 11u);
}

TEST(Utf8Lossy, IncompleteSuffix) {
  EXPECT_EQ(utf8_incomplete_suffix(""), 0u);
  EXPECT_EQ(utf8_incomplete_suffix("a"), 0u);
  EXPECT_EQ(utf8_incomplete_suffix("\xE4"), 1u);
  EXPECT_EQ(utf8_incomplete_suffix("a\xE4\xB8"), 2u);
  EXPECT_EQ(utf8_incomplete_suffix("\xE4\xB8\xAD"), 0u);
  EXPECT_EQ(utf8_incomplete_suffix("\xF0\x9F\x98"), 3u);
  EXPECT_EQ(utf8_incomplete_suffix("\xF0\x80"), 0u);  // F0 80 can never become valid
  EXPECT_EQ(utf8_incomplete_suffix("\xED\xA0"), 0u);  // nor a surrogate
  EXPECT_EQ(utf8_incomplete_suffix("\xF4\x90"), 0u);  // nor a code point above U+10FFFF
  EXPECT_EQ(utf8_incomplete_suffix("\xC1"), 0u);
  EXPECT_EQ(utf8_incomplete_suffix("a\x80"), 0u);
  EXPECT_EQ(utf8_incomplete_suffix("\x80\x80\x80\x80"), 0u);
}

TEST(Utf8Lossy, SplittingAtTheIncompleteSuffixKeepsTheText) {
  std::mt19937 rng(7);
  const unsigned char alphabet[] = {'a', 0x80, 0x9F, 0xA0, 0xBF, 0xC2, 0xDF, 0xE0, 0xE4, 0xED, 0xF0, 0xF4, 0xF5, 0xFF, 0xB8, 0xAD};
  for (int t = 0; t < 20000; ++t) {
    std::string a, b;
    for (int i = rng() % 7; i > 0; --i) a += static_cast<char>(alphabet[rng() % sizeof alphabet]);
    for (int i = rng() % 7; i > 0; --i) b += static_cast<char>(alphabet[rng() % sizeof alphabet]);
    const std::size_t k = utf8_incomplete_suffix(a);
    ASSERT_LE(k, a.size());
    EXPECT_EQ(utf8_lossy(a + b), utf8_lossy(a.substr(0, a.size() - k)) + utf8_lossy(a.substr(a.size() - k) + b));
  }
}

// Streams ids one at a time; checks each chunk and returns the whole text.
std::string stream_all(const Tokenizer& tok, const Ids& ids, bool skip_special = false) {
  StreamOptions opt;
  opt.skip_special_tokens = skip_special;
  StreamDetokenizer s(tok, opt);
  std::string all;
  for (std::int32_t id : ids) {
    const StreamChunk c = s.push(id);
    EXPECT_TRUE(utf8_valid(c.text)) << test::show_text(c.text);
    EXPECT_FALSE(c.stopped);
    all += c.text;
  }
  const StreamChunk last = s.finish();
  EXPECT_TRUE(utf8_valid(last.text));
  return all + last.text;
}

TEST(StreamDetokenizer, ChunksJoinToDecode) {
  const Tokenizer& tok = test::real_tokenizer("tokenizer-v41.json");
  for (const std::string& text : {std::string("Hello, world!"), std::string("中文テスト・日本 👨‍👩‍👧‍👦 e\u0301"),
                                 std::string("<｜User｜>hi<｜Assistant｜><think>x</think>y<｜end▁of▁sentence｜>"),
                                 std::string("\U00010D4A\U0002EBF0 \u0e01\u0e34 \uFFFD")}) {
    const Ids ids = tok.encode(text);
    EXPECT_EQ(stream_all(tok, ids), text);
    EXPECT_EQ(stream_all(tok, ids, true), tok.decode(ids, true));
  }
  // Random ids, a third of them single bytes >= 0x80 that split characters and form invalid
  // sequences: the stream still equals decode(), U+FFFD for U+FFFD.
  std::vector<std::int32_t> byte_ids;
  for (int b = 0x80; b < 0x100; ++b) {
    std::string ch;
    utf8_append(ch, byte_level_char(static_cast<std::uint8_t>(b)));
    byte_ids.push_back(*tok.token_to_id(ch));
  }
  std::mt19937 rng(11);
  for (int t = 0; t < 300; ++t) {
    Ids ids;
    for (int i = 0, n = 1 + rng() % 30; i < n; ++i)
      ids.push_back(rng() % 3 == 0 ? static_cast<std::int32_t>(rng() % tok.size()) : byte_ids[rng() % byte_ids.size()]);
    EXPECT_EQ(stream_all(tok, ids), tok.decode(ids)) << test::show_ids(ids);
    EXPECT_EQ(stream_all(tok, ids, true), tok.decode(ids, true)) << test::show_ids(ids);
  }
}

TEST(StreamDetokenizer, HoldsAPartialCharacterUntilItCompletes) {
  const Tokenizer& tok = test::real_tokenizer("tokenizer.json");
  auto byte_id = [&](std::uint8_t b) {
    std::string s;
    utf8_append(s, byte_level_char(b));
    return *tok.token_to_id(s);
  };
  StreamDetokenizer s(tok);
  EXPECT_EQ(s.push(byte_id(0xE4)).text, "");
  EXPECT_EQ(s.push(byte_id(0xB8)).text, "");
  EXPECT_EQ(s.push(byte_id(0xAD)).text, "中");
  EXPECT_EQ(s.push(byte_id(0xE4)).text, "");
  EXPECT_EQ(s.push(byte_id('x')).text, "\uFFFDx");  // can no longer complete
  EXPECT_EQ(s.push(byte_id(0xF0)).text, "");
  EXPECT_EQ(s.finish().text, "\uFFFD");  // the end of the stream
  EXPECT_THROW(s.push(static_cast<std::int32_t>(tok.size())), Error);
}

// The brute-force reference of stop-string semantics: the first end position where a stop
// string completes (the longest one at that end) and the text before it.
struct Stop {
  bool found = false;
  std::size_t index = 0;
  std::string before;
};
Stop first_stop(const std::string& text, const std::vector<std::string>& stops) {
  for (std::size_t end = 1; end <= text.size(); ++end) {
    std::size_t best = stops.size();
    for (std::size_t i = 0; i < stops.size(); ++i)
      if (stops[i].size() <= end && text.compare(end - stops[i].size(), stops[i].size(), stops[i]) == 0 &&
          (best == stops.size() || stops[i].size() > stops[best].size()))
        best = i;
    if (best < stops.size()) return {true, best, text.substr(0, end - stops[best].size())};
  }
  return {false, 0, text};
}

TEST(StopStringHolder, ReleasesTextBeforeTheStop) {
  StopStringHolder h({"STOP"});
  StreamChunk c = h.push("Hel");
  EXPECT_EQ(c.text, "Hel");
  c = h.push("lo ST");
  EXPECT_EQ(c.text, "lo ");  // "ST" might become "STOP"
  EXPECT_EQ(h.held(), 2u);
  c = h.push("OP and more");
  EXPECT_TRUE(c.stopped);
  EXPECT_EQ(c.text, "");
  EXPECT_TRUE(h.stopped());
  EXPECT_EQ(h.push("ignored").text, "");
  EXPECT_EQ(h.finish(), "");
}

TEST(StopStringHolder, HeldTextIsReleasedWhenItCannotStop) {
  StopStringHolder h({"STOP", "\n\n"});
  EXPECT_EQ(h.push("S").text, "");
  EXPECT_EQ(h.push("x").text, "Sx");
  EXPECT_EQ(h.push("a\n").text, "a");
  EXPECT_EQ(h.push("b").text, "\nb");
  EXPECT_EQ(h.push("ST").text, "");
  EXPECT_EQ(h.finish(), "ST");  // end of stream: nothing can complete any more
}

TEST(StopStringHolder, FirstCompletedStopWins) {
  {
    StopStringHolder h({"abcd", "bc"});  // "bc" completes first although "abcd" starts earlier
    const StreamChunk c = h.push("xabcd");
    EXPECT_TRUE(c.stopped);
    EXPECT_EQ(c.stop_index, 1u);
    EXPECT_EQ(c.text, "xa");
  }
  {
    StopStringHolder h({"c", "bc"});  // same end: the longer one, so less text is released
    const StreamChunk c = h.push("abc");
    EXPECT_EQ(c.stop_index, 1u);
    EXPECT_EQ(c.text, "a");
  }
  EXPECT_THROW(StopStringHolder({""}), Error);
  EXPECT_THROW(StopStringHolder({"\xFF"}), Error);
}

TEST(StopStringHolder, ResultDoesNotDependOnChunking) {
  std::mt19937 rng(3);
  const std::vector<std::string> parts = {"a", "b", "ab", "中", "。", "\n", " "};
  for (int t = 0; t < 3000; ++t) {
    std::vector<std::string> stops;
    for (int i = 0, n = 1 + rng() % 3; i < n; ++i) {
      std::string s;
      for (int j = 0, m = 1 + rng() % 3; j < m; ++j) s += parts[rng() % parts.size()];
      stops.push_back(s);
    }
    std::string text;
    for (int j = 0, m = rng() % 12; j < m; ++j) text += parts[rng() % parts.size()];
    const Stop want = first_stop(text, stops);

    // Feed the text in random chunks cut at character boundaries.
    StopStringHolder h(stops);
    std::string got;
    bool stopped = false;
    std::size_t index = 0, p = 0;
    while (p < text.size() && !stopped) {
      std::size_t q = std::min(text.size(), p + 1 + rng() % 5);
      while (q < text.size() && (static_cast<unsigned char>(text[q]) & 0xC0) == 0x80) ++q;
      const StreamChunk c = h.push(std::string_view(text).substr(p, q - p));
      EXPECT_TRUE(utf8_valid(c.text));
      got += c.text;
      stopped = c.stopped;
      index = c.stop_index;
      p = q;
    }
    if (!stopped) got += h.finish();
    EXPECT_EQ(stopped, want.found) << test::show_text(text);
    EXPECT_EQ(got, want.before) << test::show_text(text);
    if (want.found) {
      EXPECT_EQ(stops[index], stops[want.index]);
    }
  }
}

TEST(StreamDetokenizer, StopsOnStopStrings) {
  const Tokenizer& tok = test::real_tokenizer("tokenizer.json");
  const std::string text = "line one\n\nline two 中文 end";
  for (const auto& [stop, before] : std::vector<std::pair<std::string, std::string>>{
           {"\n\n", "line one"}, {"中", "line one\n\nline two "}, {"two 中文 e", "line one\n\nline "}, {"absent", text}}) {
    StreamOptions opt;
    opt.stop_strings = {stop};
    StreamDetokenizer s(tok, opt);
    std::string got;
    bool stopped = false;
    for (std::int32_t id : tok.encode(text)) {
      const StreamChunk c = s.push(id);
      got += c.text;
      if (c.stopped) {
        stopped = true;
        break;
      }
    }
    if (!stopped) {
      const StreamChunk c = s.finish();
      got += c.text;
      stopped = c.stopped;
    }
    EXPECT_EQ(got, before) << stop;
    EXPECT_EQ(stopped, before != text) << stop;
  }
}

}  // namespace
}  // namespace dsv4
