#pragma once
// The markup vocabulary of DeepSeek V4 / V4.1 model output (spec chat-encoding.md §1, §7.3, §11)
// and the byte-level search the streaming output parser does over it.
//
// The markup is: the reasoning tags "<think>" / "</think>", the end-of-sentence token text, and
// the six DSML tool-call tags. V4.1 spells the DSML tags with a space after the "｜DSML｜" marker
// and names the block "calls" ("<｜DSML｜ calls>"); V4 (0731) has no space and names it
// "tool_calls" ("<｜DSML｜tool_calls>"). Only the tag spelling differs; the grammar is the same.
//
// Everything here works on bytes, not code points: every tag is valid UTF-8 and starts with the
// ASCII byte '<', so a match can never begin inside a multi-byte character.
#include <cstddef>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "text/chat_tokens.h"

namespace dsv4 {

inline constexpr std::string_view kThinkOpen = chat_token::kThinkOpen;
inline constexpr std::string_view kThinkClose = chat_token::kThinkClose;
inline constexpr std::string_view kEndOfSentence = chat_token::kEos;

// Which DSML tag spelling the model emits is the chat profile's (chat_tokens.h): V41
// "<｜DSML｜ calls>", "<｜DSML｜ invoke", ...; V4 (0731) "<｜DSML｜tool_calls>", "<｜DSML｜invoke", ...

// The six DSML tags. The two openers that carry attributes (invoke, parameter) are given without
// their attributes and closing '>': `<｜DSML｜ invoke` + ` name="get_weather"` + `>`.
struct DsmlTags {
  std::string_view calls_open;    // "<｜DSML｜ calls>"
  std::string_view calls_close;   // "</｜DSML｜ calls>"
  std::string_view invoke_open;   // "<｜DSML｜ invoke"
  std::string_view invoke_close;  // "</｜DSML｜ invoke>"
  std::string_view param_open;    // "<｜DSML｜ parameter"
  std::string_view param_close;   // "</｜DSML｜ parameter>"
};

const DsmlTags& dsml_tags(ChatProfile version);

// Every markup string of a version (think tags, EOS, the six DSML tags), for checks that want to
// know whether some bytes are "only markup".
std::vector<std::string_view> all_markup(ChatProfile version);

// One attribute of a DSML tag header, `key="value"`; both views point into the header text.
struct DsmlAttribute {
  std::string_view key;
  std::string_view value;
};

// Parses the attribute part of a tag header: the bytes between the tag name and the header's
// closing '>', e.g. ` name="x" string="true"`. Accepted: zero or more attributes, each preceded
// by at least one whitespace byte (space, tab, LF, CR), keys of [A-Za-z0-9_-]+, values in ASCII
// double quotes that contain no '"' (no escapes exist in DSML), optional trailing whitespace.
// Returns nullopt for anything else, including a key given twice.
std::optional<std::vector<DsmlAttribute>> parse_dsml_attributes(std::string_view text);

// A match of one marker out of a set: `which` indexes the set, `pos` is the byte offset.
struct MarkerHit {
  std::size_t pos = 0;
  std::size_t which = 0;
};

// The earliest occurrence at or after `from` of any of `markers` (the first listed wins a tie).
// Invariant the streaming parser relies on: within one set no marker is a substring of another,
// so a match found in a prefix of the stream is the match the whole stream has there.
std::optional<MarkerHit> find_first_marker(std::string_view text,
                                           std::span<const std::string_view> markers,
                                           std::size_t from = 0);

// Length of the longest proper suffix of `text` that is a prefix of some marker: the bytes that
// might still turn into a marker when more input arrives and so must not be emitted yet.
std::size_t partial_marker_suffix(std::string_view text, std::span<const std::string_view> markers);

// Length (0..3) of a trailing UTF-8 sequence that is incomplete but could still become a
// well-formed character (strict rules of utf8.h): a valid lead byte followed by fewer
// continuation bytes than it needs, each in its allowed range. A delta that ends before these
// bytes never splits a character. Bytes that can never be completed are not counted.
std::size_t incomplete_utf8_suffix(std::string_view text);

// True for the whitespace bytes DSML allows between tags and attributes: space, tab, LF, CR.
constexpr bool is_markup_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

}  // namespace dsv4
