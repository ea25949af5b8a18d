#pragma once
// Streaming parser for DeepSeek V4 / V4.1 model output (spec chat-encoding.md §11): splits the
// generated text into reasoning, content and DSML tool calls, incrementally, so that a server can
// turn each fed chunk straight into OpenAI streaming deltas. docs/output-parser.md has the rules
// with examples; this header is the contract.
//
// Well-formed output is what R's strict reference parser accepts (§11.1):
//   thinking: REASONING "</think>" CONTENT ["\n\n" CALLS] EOS
//   chat:     CONTENT ["\n\n" CALLS] EOS
//   CALLS  = "<｜DSML｜ calls>\n" INVOKE ("\n" INVOKE)* "\n</｜DSML｜ calls>"
//   INVOKE = "<｜DSML｜ invoke name=\"N\">\n" (PARAM ("\n" PARAM)*)? "\n</｜DSML｜ invoke>"
//   PARAM  = "<｜DSML｜ parameter name=\"K\" string=\"true|false\">" VALUE "</｜DSML｜ parameter>"
// (V4 0731 spells the tags without the space and names the block "tool_calls"; see
// output_markup.h.) For such input the result equals R's: reasoning_content, content without the
// "\n\n" separator, and per call its name and R's arguments string.
//
// Anything else is parsed leniently, following vLLM where the spec says to (§11.2), and never
// loses a byte: every input byte ends up in reasoning_content, content, a tool call's `raw`, or is
// recognised markup, and ParsedOutput::spans records which (check_output_spans verifies it).
// Each deviation from the well-formed shape adds an OutputWarning. The fallbacks:
//  * Thinking mode, no "</think>" by the end (or by EOS): everything is reasoning, content is
//    empty (vLLM; spec §11.2 recommendation). Warning unclosed_reasoning.
//  * A calls opener inside reasoning ends the reasoning and the calls are parsed as tool calls
//    (vLLM; R rejects this). Warning calls_in_reasoning.
//  * A duplicate "<think>" inside reasoning and a stray "</think>" in content are markup, not
//    text (vLLM drops them); a "<think>" in content starts reasoning again (vLLM). Warnings
//    stray_think_open, stray_think_close, reasoning_reopened.
//  * The "\n\n" before a calls opener is markup (R). Up to two LFs directly before the opener
//    are taken as the separator; other whitespace stays in the text.
//  * Inside a calls block, whitespace between tags is markup. Any other text there that is not
//    part of a well-formed call (prose between invokes, junk between parameters, a stray close
//    tag) goes to content, in order, with leading/trailing whitespace of the run kept as markup.
//    Warning stray_text_in_calls.
//  * Tag headers end at the first '>'. An invoke header without exactly one non-empty `name`
//    attribute, or with a '<' before its '>', is not a call: its bytes go to content (warning
//    malformed_invoke). A parameter header needs `name` and may have `string`; anything else, a
//    `string` other than true/false, or a name the call already has, goes to content with its
//    value and close tag (warnings malformed_parameter, duplicate_parameter).
//  * Values: string="true" -> the raw text as a JSON string. string="false" -> the trimmed text
//    verbatim if it is valid JSON, else the raw text as a JSON string (warning
//    invalid_json_value; vLLM does the same: "[broken" stays a string). No string attribute ->
//    treated like "false" (vLLM), warning untyped_parameter.
//  * A parameter may end at the next parameter, "</｜DSML｜ invoke>" or the calls closer instead
//    of its close tag (vLLM); an invoke may end at the calls closer. Warnings
//    missing_parameter_close, missing_invoke_close. The call stands.
//  * An invoke still open at EOS or at finish() (stop by length) depends on call_streaming:
//    whole_invoke: it is not a call; its raw bytes go to content. incremental: the call was
//    already streamed, so it ends with complete = false and the arguments hold the parameters
//    seen so far (an open value is closed as it stands). Warning unterminated_invoke.
//  * A calls block with no closer by EOS / finish keeps its complete calls. Warning
//    missing_calls_close.
//  * Text after "</｜DSML｜ calls>" (other than whitespace and EOS) is content again, tags
//    included, so a second calls block is parsed too (R rejects it). Warning text_after_calls.
//  * The EOS text "<｜end▁of▁sentence｜>" is markup and ends the turn; servers normally strip it
//    before parsing. Text after it is content, verbatim, with no tag recognised. Warning
//    text_after_eos.
//  * Bytes that are not UTF-8 pass through text fields unchanged; in JSON they become U+FFFD. A
//    character split at the end of the input is flushed as it is. Warning incomplete_utf8.
//
// Incrementality: feed() holds back only bytes that may still be the start of a tag (a partial
// "<｜DSML｜…", "</think>", EOS), up to two trailing LFs that may be a calls separator, and an
// incomplete UTF-8 character; inside a tag header or a string="false" value it waits for the end.
// The committed result never depends on how the input was chunked: feeding any split gives the
// same ParsedOutput as one call to parse_output, and the deltas concatenate to it.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "text/output_markup.h"

namespace dsv4 {

// How tool calls are streamed.
enum class CallStreaming {
  whole_invoke,  // a call is emitted once its invoke is closed: start, all arguments, end in one
                 // delta (sglang). An unterminated invoke falls back to content.
  incremental,   // the call starts as soon as its invoke header is read, and string="true"
                 // values stream as they arrive (vLLM). An unterminated call ends incomplete.
};

struct OutputParserOptions {
  ChatProfile dsml = ChatProfile::V41;
  // True when the prompt ended with "<think>" (thinking mode): the output starts inside
  // reasoning. False in chat mode, whose prompt ended with "</think>".
  bool thinking_started = true;
  CallStreaming call_streaming = CallStreaming::whole_invoke;
};

enum class OutputWarningKind : std::uint8_t {
  unclosed_reasoning,
  calls_in_reasoning,
  stray_think_open,
  stray_think_close,
  reasoning_reopened,
  stray_text_in_calls,
  malformed_invoke,
  malformed_parameter,
  duplicate_parameter,
  untyped_parameter,
  invalid_json_value,
  missing_parameter_close,
  missing_invoke_close,
  unterminated_invoke,
  missing_calls_close,
  text_after_calls,
  text_after_eos,
  incomplete_utf8,
};

const char* to_string(OutputWarningKind kind);

struct OutputWarning {
  OutputWarningKind kind;
  std::size_t offset;   // byte offset in the whole output where the deviation was seen
  std::string message;  // human-readable, names the fallback taken
  friend bool operator==(const OutputWarning&, const OutputWarning&) = default;
};

// What a run of input bytes became. Spans tile the input in order; adjacent spans of the same
// kind (and call) are merged.
enum class SpanKind : std::uint8_t { reasoning, content, markup, tool_call };

struct OutputSpan {
  SpanKind kind;
  std::size_t begin;
  std::size_t end;
  std::size_t call = 0;  // index into tool_calls, for SpanKind::tool_call
  friend bool operator==(const OutputSpan&, const OutputSpan&) = default;
};

// A piece of one tool call within a delta. OpenAI mapping: delta.tool_calls[{index, id and type
// when `begins`, function: {name when `begins`, arguments}}]. The `arguments` fragments of one
// call concatenate to its final JSON arguments string ("{" comes with the start, "}" with the end).
struct ToolCallDelta {
  std::size_t index = 0;
  bool begins = false;    // first fragment: `name` is set
  std::string name;
  std::string arguments;  // JSON text fragment
  std::string raw;        // the input bytes of the call covered by this fragment
  bool ends = false;      // last fragment of the call
  bool complete = false;  // with `ends`: false if the invoke was cut off (incremental mode only)
  friend bool operator==(const ToolCallDelta&, const ToolCallDelta&) = default;
};

// What one feed() / finish() committed: text appended to each field, tool-call fragments in
// order, and the warnings raised.
struct ParseDelta {
  std::string reasoning;
  std::string content;
  std::vector<ToolCallDelta> tool_calls;
  std::vector<OutputWarning> warnings;
  // The input this delta covers, in order: which says how its reasoning, content and call
  // fragments interleave (a consumer that emits blocks in output order, like Anthropic's stream,
  // needs it). The reasoning and content spans' bytes are those fields, byte for byte.
  std::vector<OutputSpan> spans;
  bool empty() const {
    return reasoning.empty() && content.empty() && tool_calls.empty() && warnings.empty();
  }
};

struct ParsedToolCall {
  std::string name;
  std::string arguments;  // a JSON object, always valid JSON
  std::string raw;        // the input bytes of the call (its tags, names and values)
  bool complete = true;
  friend bool operator==(const ParsedToolCall&, const ParsedToolCall&) = default;
};

struct ParsedOutput {
  std::string reasoning_content;
  std::string content;
  std::vector<ParsedToolCall> tool_calls;
  std::vector<OutputWarning> warnings;
  std::vector<OutputSpan> spans;
  bool saw_eos = false;  // the EOS text appeared in the output
  friend bool operator==(const ParsedOutput&, const ParsedOutput&) = default;
};

class OutputParser {
 public:
  explicit OutputParser(OutputParserOptions options = {});

  // Parses the next chunk (any split, even inside a UTF-8 character or a tag) and returns what
  // it committed. Throws dsv4::Error after finish().
  ParseDelta feed(std::string_view chunk);
  // Ends the input: flushes everything held back and resolves whatever is still open by the
  // rules above. Throws dsv4::Error if called twice.
  ParseDelta finish();

  // Everything committed so far (after finish(): the whole result).
  const ParsedOutput& result() const { return result_; }
  bool finished() const { return finished_; }

 private:
  enum class State : std::uint8_t {
    reasoning, content, calls, invoke_header, invoke_body, param_header, param_value,
    after_calls, done
  };
  // Output under construction: the public delta plus the spans it covers.
  struct Sink {
    ParseDelta delta;
    std::vector<OutputSpan> spans;
  };

  bool step(bool at_end);
  bool step_text(bool at_end);
  bool step_calls(bool at_end);
  bool step_header(bool at_end);
  bool step_invoke_body(bool at_end);
  bool step_value(bool at_end);
  bool step_after_calls();
  void on_text_marker(std::string_view marker);
  bool take_between(std::size_t avail, bool terminated, SpanKind space_kind);
  // The body of the calls / invoke states: takes the text before the next of `markers` (the
  // part that can no longer start one) with take_between; returns the marker found at the
  // cursor, or nullopt when none is complete yet. `progressed`: whether anything was taken.
  std::optional<std::string_view> take_to_marker(bool at_end,
                                                 const std::vector<std::string_view>& markers,
                                                 SpanKind space_kind, bool& progressed);
  void take(std::size_t n, SpanKind kind);
  void take_text(std::size_t n);
  void warn(OutputWarningKind kind, std::size_t offset, std::string message);
  void begin_call(std::string_view name);
  void end_call(bool complete);
  void cut_call();
  ToolCallDelta& call_delta();
  void append_arguments(std::string_view fragment) { call_delta().arguments += fragment; }
  Sink& sink() { return buffering_ ? pending_ : main_; }
  std::string_view rest() const { return std::string_view(buf_).substr(pos_); }
  ParseDelta flush();

  OutputParserOptions options_;
  DsmlTags tags_;  // views of static strings, so a parser can be copied and moved
  // Marker sets per state; see find_first_marker for the invariant they satisfy.
  std::vector<std::string_view> text_markers_, calls_markers_, invoke_markers_, value_markers_;
  std::size_t value_marker_max_ = 0;  // longest of value_markers_

  std::string buf_;         // unconsumed input starts at buf_[pos_]
  std::size_t pos_ = 0;
  std::size_t offset_ = 0;  // absolute input offset of buf_[pos_]
  std::size_t scan_ = 0;    // in header / typed-value states: rest() before this has no match
  std::string tail_;        // the last (up to 3) input bytes, for the incomplete_utf8 check
  State state_;
  bool junk_ = false;       // inside a run of stray text in a calls block
  bool after_calls_ = false;
  bool warned_after_eos_ = false;
  bool finished_ = false;

  // The open invoke.
  bool in_invoke_ = false;
  bool buffering_ = false;        // whole_invoke mode: its output waits in pending_
  std::size_t call_index_ = 0;    // index the open (or next) call gets
  std::size_t invoke_start_ = 0;  // offset of its "<｜DSML｜ invoke"
  std::string invoke_text_;       // whole_invoke mode: every byte consumed since then
  std::vector<std::string> param_names_;
  bool value_is_string_ = false;  // the open parameter is string="true"

  Sink main_;
  Sink pending_;
  ParsedOutput result_;
};

// feed(text) + finish() on a fresh parser.
ParsedOutput parse_output(std::string_view text, const OutputParserOptions& options = {});

// Checks the losslessness contract of `out` against the `input` it was parsed from: the spans
// tile the input; the reasoning, content and tool_call spans, read in order, are exactly
// reasoning_content, content and each call's raw; markup spans hold only markup strings of the
// version and whitespace; every call's arguments is a JSON object. Returns "" if all hold, else a
// description of the first violation.
std::string check_output_spans(std::string_view input, const ParsedOutput& out,
                               ChatProfile version);

}  // namespace dsv4
