#include "text/stream_detokenizer.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "text/utf8.h"
#include "text/utf8_lossy.h"
#include "util/error.h"

namespace dsv4 {

StopStringHolder::StopStringHolder(std::vector<std::string> stop_strings) : stops_(std::move(stop_strings)) {
  for (std::size_t i = 0; i < stops_.size(); ++i) {
    if (stops_[i].empty()) fail("stop string {} is empty", i);
    if (!utf8_valid(stops_[i])) fail("stop string {} ({}) is not valid UTF-8", i, nlohmann::json(utf8_lossy(stops_[i])).dump());
    longest_ = std::max(longest_, stops_[i].size());
  }
}

StreamChunk StopStringHolder::push(std::string_view text) {
  StreamChunk out;
  if (stopped_ || text.empty()) return out;
  const std::size_t old = pending_.size();
  pending_.append(text);
  if (stops_.empty()) {
    out.text.swap(pending_);
    return out;
  }
  // The first end position (past what was already searched) where a stop string completes.
  // The held text contains none, so only ends inside the new text can be new.
  for (std::size_t end = old + 1; end <= pending_.size(); ++end) {
    std::size_t best = stops_.size();
    for (std::size_t i = 0; i < stops_.size(); ++i) {
      const std::string& s = stops_[i];
      if (s.size() <= end && pending_.compare(end - s.size(), s.size(), s) == 0 &&
          (best == stops_.size() || s.size() > stops_[best].size()))
        best = i;
    }
    if (best != stops_.size()) {
      out.text = pending_.substr(0, end - stops_[best].size());
      out.stopped = true;
      out.stop_index = best;
      stopped_ = true;
      pending_.clear();
      return out;
    }
  }
  // Hold the longest end of the text that is a proper prefix of some stop string. It starts at
  // a character boundary: it begins with a stop string's first byte, never a continuation byte.
  std::size_t hold = 0;
  const std::size_t max_hold = std::min(pending_.size(), longest_ - 1);
  for (std::size_t k = max_hold; k > 0 && hold == 0; --k)
    for (const std::string& s : stops_)
      if (s.size() > k && pending_.compare(pending_.size() - k, k, s, 0, k) == 0) {
        hold = k;
        break;
      }
  out.text = pending_.substr(0, pending_.size() - hold);
  pending_.erase(0, pending_.size() - hold);
  return out;
}

std::string StopStringHolder::finish() {
  std::string out;
  if (!stopped_) out.swap(pending_);
  pending_.clear();
  return out;
}

StreamDetokenizer::StreamDetokenizer(const Tokenizer& tokenizer, StreamOptions options)
    : tokenizer_(&tokenizer),
      skip_special_(options.skip_special_tokens),
      holder_(options.stop_strings),
      use_holder_(!options.stop_strings.empty()) {}

StreamChunk StreamDetokenizer::release(std::string text) {
  if (!use_holder_) {
    StreamChunk c;
    c.text = std::move(text);
    return c;
  }
  return holder_.push(text);
}

StreamChunk StreamDetokenizer::push(std::int32_t id) {
  const std::string_view piece = tokenizer_->token_bytes(id);  // checks the id even after a stop
  if (holder_.stopped() || (skip_special_ && tokenizer_->is_special(id))) return {};
  bytes_.append(piece);
  const std::size_t keep = utf8_incomplete_suffix(bytes_);
  std::string text = utf8_lossy(std::string_view(bytes_).substr(0, bytes_.size() - keep));
  bytes_.erase(0, bytes_.size() - keep);
  return release(std::move(text));
}

StreamChunk StreamDetokenizer::push(std::span<const std::int32_t> ids) {
  StreamChunk all;
  for (std::int32_t id : ids) {
    StreamChunk c = push(id);
    all.text += c.text;
    if (c.stopped) {
      all.stopped = true;
      all.stop_index = c.stop_index;
      break;
    }
  }
  return all;
}

StreamChunk StreamDetokenizer::finish() {
  if (holder_.stopped()) return {};
  StreamChunk c = release(utf8_lossy(bytes_));
  bytes_.clear();
  if (!c.stopped && use_holder_) c.text += holder_.finish();
  return c;
}

}  // namespace dsv4
