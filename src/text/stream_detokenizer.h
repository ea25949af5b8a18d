#pragma once
// Incremental decoding for generation: ids arrive one at a time and text is released as soon as
// it is final.
//
//   StreamDetokenizer  ids -> text. A byte token can end in the middle of a UTF-8 character; those
//                      trailing bytes are held until the character completes or can no longer
//                      complete (then they become U+FFFD, exactly as decode() would render them).
//                      Every released chunk is valid UTF-8, and the chunks joined equal
//                      Tokenizer::decode of all the ids.
//   StopStringHolder   text -> text. Holds back the end of the text while it could still be the
//                      beginning of a stop string, and reports a stop string as soon as one is
//                      complete, with the text before it. The stop that wins is the one that
//                      completes first (the earliest end; at equal ends the longest), which makes
//                      the result independent of how the text was chunked: it is what a
//                      byte-by-byte check would find. Text before the stop is released; the stop
//                      string and everything after it are not.
// StreamDetokenizer runs a StopStringHolder when given stop strings.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "text/tokenizer.h"

namespace dsv4 {

struct StreamChunk {
  std::string text;         // newly released text (valid UTF-8, possibly empty)
  bool stopped = false;     // a stop string completed; nothing more will be released
  std::size_t stop_index = 0;  // which stop string, when stopped
};

class StopStringHolder {
 public:
  // Throws dsv4::Error for an empty or invalid UTF-8 stop string.
  explicit StopStringHolder(std::vector<std::string> stop_strings);

  // Adds text; returns what is now safe to release, or the text before a completed stop.
  StreamChunk push(std::string_view text);
  // End of the stream: nothing can complete any more, so the held text is released.
  std::string finish();

  bool stopped() const { return stopped_; }
  std::size_t held() const { return pending_.size(); }

 private:
  std::vector<std::string> stops_;
  std::size_t longest_ = 0;
  std::string pending_;  // text not yet released; it holds no complete stop string
  bool stopped_ = false;
};

struct StreamOptions {
  bool skip_special_tokens = false;
  std::vector<std::string> stop_strings;
};

class StreamDetokenizer {
 public:
  // `tokenizer` must outlive this object.
  explicit StreamDetokenizer(const Tokenizer& tokenizer, StreamOptions options = {});

  // Adds one id (dsv4::Error for an id the tokenizer does not have). After a stop, ids are ignored.
  StreamChunk push(std::int32_t id);
  StreamChunk push(std::span<const std::int32_t> ids);
  // End of the stream: an incomplete character becomes U+FFFD, held text is released (and may
  // itself complete a stop string).
  StreamChunk finish();

  bool stopped() const { return holder_.stopped(); }

 private:
  StreamChunk release(std::string text);

  const Tokenizer* tokenizer_;
  bool skip_special_;
  std::string bytes_;  // an incomplete UTF-8 sequence at the end of the decoded bytes
  StopStringHolder holder_;
  bool use_holder_;
};

}  // namespace dsv4
