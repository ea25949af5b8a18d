#include "text/output_parser.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "text/output_json.h"
#include "util/error.h"

// How the parser works. buf_[pos_..] holds input not yet consumed. Each step looks, in the
// current state, for the earliest marker of that state's set; the bytes before it are classified
// (text, whitespace between tags, stray text, parameter value) and consumed with take(), which
// appends them to the right field of the current Sink and records their span. When no marker is
// found, only the bytes that can no longer become part of one are consumed; the rest waits for
// the next feed(). Because no marker of a set is a substring of another (output_markup.h) and
// every decision is made only once the bytes it depends on are present, the sequence of
// take() calls, and so the result, is the same for every chunking of the input.
//
// In whole_invoke mode the output of an open invoke goes to pending_ instead of main_; the invoke
// close moves it over, a cut-off invoke throws it away and re-reads the invoke's bytes as content.

namespace dsv4 {

namespace {

void add_span(std::vector<OutputSpan>& spans, const OutputSpan& s) {
  if (s.end == s.begin) return;
  if (!spans.empty()) {
    OutputSpan& b = spans.back();
    if (b.kind == s.kind && b.call == s.call && b.end == s.begin) {
      b.end = s.end;
      return;
    }
  }
  spans.push_back(s);
}

// Appends tool-call fragments, merging a fragment into the previous one of the same open call.
void add_call_delta(std::vector<ToolCallDelta>& v, ToolCallDelta&& d) {
  if (!v.empty() && v.back().index == d.index && !v.back().ends && !d.begins) {
    ToolCallDelta& b = v.back();
    b.arguments += d.arguments;
    b.raw += d.raw;
    b.ends = d.ends;
    b.complete = d.complete;
    return;
  }
  v.push_back(std::move(d));
}

// How much of v can be consumed when no marker was found in it: all of it at the end of the
// input, else all but a possible marker start or an incomplete UTF-8 character.
std::size_t safe_length(std::string_view v, std::span<const std::string_view> markers,
                        bool at_end) {
  if (at_end) return v.size();
  return v.size() - std::max(partial_marker_suffix(v, markers), incomplete_utf8_suffix(v));
}

}  // namespace

const char* to_string(OutputWarningKind kind) {
  switch (kind) {
    case OutputWarningKind::unclosed_reasoning: return "unclosed_reasoning";
    case OutputWarningKind::calls_in_reasoning: return "calls_in_reasoning";
    case OutputWarningKind::stray_think_open: return "stray_think_open";
    case OutputWarningKind::stray_think_close: return "stray_think_close";
    case OutputWarningKind::reasoning_reopened: return "reasoning_reopened";
    case OutputWarningKind::stray_text_in_calls: return "stray_text_in_calls";
    case OutputWarningKind::malformed_invoke: return "malformed_invoke";
    case OutputWarningKind::malformed_parameter: return "malformed_parameter";
    case OutputWarningKind::duplicate_parameter: return "duplicate_parameter";
    case OutputWarningKind::untyped_parameter: return "untyped_parameter";
    case OutputWarningKind::invalid_json_value: return "invalid_json_value";
    case OutputWarningKind::missing_parameter_close: return "missing_parameter_close";
    case OutputWarningKind::missing_invoke_close: return "missing_invoke_close";
    case OutputWarningKind::unterminated_invoke: return "unterminated_invoke";
    case OutputWarningKind::missing_calls_close: return "missing_calls_close";
    case OutputWarningKind::text_after_calls: return "text_after_calls";
    case OutputWarningKind::text_after_eos: return "text_after_eos";
    case OutputWarningKind::incomplete_utf8: return "incomplete_utf8";
  }
  return "unknown";
}

OutputParser::OutputParser(OutputParserOptions options)
    : options_(options),
      tags_(dsml_tags(options.dsml)),
      state_(options.thinking_started ? State::reasoning : State::content) {
  text_markers_ = {kThinkClose, kThinkOpen, tags_.calls_open, kEndOfSentence};
  calls_markers_ = {tags_.invoke_open, tags_.calls_close, kEndOfSentence};
  invoke_markers_ = {tags_.param_open, tags_.invoke_close, tags_.calls_close, kEndOfSentence};
  value_markers_ = {tags_.param_close, tags_.param_open, tags_.invoke_close, tags_.calls_close,
                    kEndOfSentence};
  for (std::string_view m : value_markers_)
    value_marker_max_ = std::max(value_marker_max_, m.size());
}

ParseDelta OutputParser::feed(std::string_view chunk) {
  if (finished_) fail("OutputParser::feed called after finish()");
  buf_.append(chunk);
  tail_.append(chunk.substr(chunk.size() > 3 ? chunk.size() - 3 : 0));
  if (tail_.size() > 3) tail_.erase(0, tail_.size() - 3);
  while (step(false)) {
  }
  buf_.erase(0, pos_);  // rest() and scan_ are relative to pos_, so they are unaffected
  pos_ = 0;
  return flush();
}

ParseDelta OutputParser::finish() {
  if (finished_) fail("OutputParser::finish called twice");
  while (step(true)) {
  }
  // At the end every byte has been consumed and only these states can remain open.
  switch (state_) {
    case State::reasoning:
      warn(OutputWarningKind::unclosed_reasoning, offset_,
           "the output ended inside reasoning (no </think>): all of it is reasoning_content");
      break;
    case State::invoke_body:
      cut_call();
      [[fallthrough]];
    case State::calls:
      warn(OutputWarningKind::missing_calls_close, offset_,
           "the output ended inside a tool-call block: its complete calls are kept");
      break;
    default:
      break;
  }
  if (const std::size_t n = incomplete_utf8_suffix(tail_); n > 0)
    warn(OutputWarningKind::incomplete_utf8, offset_ - n,
         "the output ends inside a UTF-8 character: its bytes are kept as they are");
  finished_ = true;
  buf_.clear();
  pos_ = 0;
  return flush();
}

bool OutputParser::step(bool at_end) {
  switch (state_) {
    case State::reasoning:
    case State::content:
    case State::done: return step_text(at_end);
    case State::calls: return step_calls(at_end);
    case State::invoke_header:
    case State::param_header: return step_header(at_end);
    case State::invoke_body: return step_invoke_body(at_end);
    case State::param_value: return step_value(at_end);
    case State::after_calls: return step_after_calls();
  }
  return false;
}

bool OutputParser::step_text(bool at_end) {
  const std::string_view v = rest();
  if (v.empty()) return false;
  // After EOS nothing is markup any more.
  const std::span<const std::string_view> markers =
      state_ == State::done ? std::span<const std::string_view>() : text_markers_;
  const auto hit = find_first_marker(v, markers);
  if (!hit) {
    std::size_t end = safe_length(v, markers, at_end);
    // Up to two LFs just before a possible calls opener may turn out to be its separator.
    if (!at_end && state_ != State::done)
      for (int i = 0; i < 2 && end > 0 && v[end - 1] == '\n'; ++i) --end;
    if (end == 0) return false;
    take_text(end);
    return true;
  }
  const std::string_view marker = markers[hit->which];
  std::size_t sep = 0;
  if (marker == tags_.calls_open)
    while (sep < 2 && sep < hit->pos && v[hit->pos - 1 - sep] == '\n') ++sep;
  take_text(hit->pos - sep);
  take(sep, SpanKind::markup);
  on_text_marker(marker);
  return true;
}

void OutputParser::on_text_marker(std::string_view marker) {
  const std::size_t at = offset_;
  const bool in_reasoning = state_ == State::reasoning;
  take(marker.size(), SpanKind::markup);
  if (marker == kThinkClose) {
    if (in_reasoning)
      state_ = State::content;
    else
      warn(OutputWarningKind::stray_think_close, at,
           "a </think> outside reasoning is dropped as markup");
  } else if (marker == kThinkOpen) {
    if (in_reasoning) {
      warn(OutputWarningKind::stray_think_open, at,
           "a <think> inside reasoning is dropped as markup");
    } else {
      warn(OutputWarningKind::reasoning_reopened, at,
           "a <think> in content starts reasoning again");
      state_ = State::reasoning;
    }
  } else if (marker == tags_.calls_open) {
    if (in_reasoning)
      warn(OutputWarningKind::calls_in_reasoning, at,
           "a tool-call block opened inside reasoning ends the reasoning");
    state_ = State::calls;
    junk_ = false;
    after_calls_ = false;
  } else {  // EOS
    if (in_reasoning)
      warn(OutputWarningKind::unclosed_reasoning, at,
           "EOS inside reasoning (no </think>): all of it is reasoning_content");
    state_ = State::done;
    result_.saw_eos = true;
  }
}

void OutputParser::take_text(std::size_t n) {
  if (n == 0) return;
  if (state_ == State::reasoning) {
    take(n, SpanKind::reasoning);
    return;
  }
  if (state_ == State::done && !warned_after_eos_) {
    warned_after_eos_ = true;
    warn(OutputWarningKind::text_after_eos, offset_,
         "text after <｜end▁of▁sentence｜> is kept as content, with no tags recognised");
  }
  if (state_ == State::content && after_calls_) {
    after_calls_ = false;
    warn(OutputWarningKind::text_after_calls, offset_,
         "text after a tool-call block is kept as content");
  }
  take(n, SpanKind::content);
}

bool OutputParser::take_between(std::size_t avail, bool terminated, SpanKind space_kind) {
  // Whitespace around a run of stray text is markup (or part of the call); the run itself,
  // with the whitespace inside it, is content. Trailing whitespace waits until it is known
  // whether more stray text follows (then it is inside the run) or a tag (then it is not).
  const std::size_t before = pos_;
  const std::string_view t = rest().substr(0, avail);
  std::size_t i = 0;
  if (!junk_) {
    while (i < t.size() && is_markup_space(t[i])) ++i;
    take(i, space_kind);
  }
  std::size_t last = t.size();
  while (last > i && is_markup_space(t[last - 1])) --last;
  if (last > i) {
    if (!junk_) {
      junk_ = true;
      warn(OutputWarningKind::stray_text_in_calls, offset_,
           in_invoke_ ? "text between the parameters of a call is kept as content"
                      : "text in a tool-call block outside any invoke is kept as content");
    }
    take(last - i, SpanKind::content);
  }
  if (terminated) take(t.size() - last, space_kind);
  return pos_ != before;
}

std::optional<std::string_view> OutputParser::take_to_marker(
    bool at_end, const std::vector<std::string_view>& markers, SpanKind space_kind,
    bool& progressed) {
  progressed = false;
  const std::string_view v = rest();
  if (v.empty()) return std::nullopt;
  const auto hit = find_first_marker(v, markers);
  const std::size_t avail = hit ? hit->pos : safe_length(v, markers, at_end);
  progressed = take_between(avail, hit.has_value() || at_end, space_kind);
  if (!hit) return std::nullopt;
  junk_ = false;
  return markers[hit->which];
}

bool OutputParser::step_calls(bool at_end) {
  bool progressed = false;
  const auto marker = take_to_marker(at_end, calls_markers_, SpanKind::markup, progressed);
  if (!marker) return progressed;
  const std::string_view m = *marker;
  if (m == tags_.invoke_open) {
    state_ = State::invoke_header;
    scan_ = 0;
  } else if (m == tags_.calls_close) {
    take(m.size(), SpanKind::markup);
    state_ = State::after_calls;
    after_calls_ = true;
  } else {  // EOS
    warn(OutputWarningKind::missing_calls_close, offset_,
         "EOS inside a tool-call block: its complete calls are kept");
    take(m.size(), SpanKind::markup);
    state_ = State::done;
    result_.saw_eos = true;
  }
  return true;
}

bool OutputParser::step_header(bool at_end) {
  const bool invoke = state_ == State::invoke_header;
  const std::string_view v = rest();  // starts with the tag
  const std::string_view tag = invoke ? tags_.invoke_open : tags_.param_open;
  const std::size_t q = v.find_first_of("<>", std::max(scan_, tag.size()));
  if (q == std::string_view::npos) {
    if (!at_end) {
      scan_ = v.size();
      return false;
    }
    if (invoke) {
      warn(OutputWarningKind::unterminated_invoke, offset_,
           "the output ended inside an invoke header: it is kept as content");
      take(v.size(), SpanKind::content);
      junk_ = true;
      state_ = State::calls;
    } else {
      take(v.size(), SpanKind::tool_call);  // part of a call that finish() will cut
      state_ = State::invoke_body;
    }
    return true;
  }
  const auto malformed = [&](OutputWarningKind kind, std::size_t n, const char* why) {
    warn(kind, offset_,
         fmt::format("{} header {}: kept as content", invoke ? "invoke" : "parameter", why));
    take(n, SpanKind::content);
    junk_ = true;
    state_ = invoke ? State::calls : State::invoke_body;
    return true;
  };
  const OutputWarningKind bad =
      invoke ? OutputWarningKind::malformed_invoke : OutputWarningKind::malformed_parameter;
  if (v[q] == '<') return malformed(bad, q, "has a '<' before its '>'");
  const auto attrs = parse_dsml_attributes(v.substr(tag.size(), q - tag.size()));
  if (invoke) {
    if (!attrs || attrs->size() != 1 || (*attrs)[0].key != "name" || (*attrs)[0].value.empty())
      return malformed(bad, q + 1, "is not exactly one non-empty name=\"...\"");
    begin_call((*attrs)[0].value);
    take(q + 1, SpanKind::tool_call);
    state_ = State::invoke_body;
    junk_ = false;
    return true;
  }
  std::optional<std::string_view> name, type;
  bool ok = attrs.has_value();
  if (ok) {
    for (const DsmlAttribute& a : *attrs) {
      if (a.key == "name") name = a.value;
      else if (a.key == "string") type = a.value;
      else ok = false;
    }
  }
  if (!ok || !name || (type && *type != "true" && *type != "false"))
    return malformed(bad, q + 1, "is not name=\"...\" with an optional string=\"true|false\"");
  if (std::find(param_names_.begin(), param_names_.end(), *name) != param_names_.end())
    return malformed(OutputWarningKind::duplicate_parameter, q + 1,
                     "repeats a parameter name of the same call");
  if (!type)
    warn(OutputWarningKind::untyped_parameter, offset_,
         "a parameter without a string attribute is read as JSON");
  std::string fragment = param_names_.empty() ? "" : ", ";
  fragment += json_quote(*name);
  fragment += ": ";
  value_is_string_ = type && *type == "true";
  if (value_is_string_) fragment += '"';
  append_arguments(fragment);
  param_names_.emplace_back(*name);
  take(q + 1, SpanKind::tool_call);
  state_ = State::param_value;
  scan_ = 0;
  return true;
}

bool OutputParser::step_invoke_body(bool at_end) {
  bool progressed = false;
  const auto marker = take_to_marker(at_end, invoke_markers_, SpanKind::tool_call, progressed);
  if (!marker) return progressed;
  const std::string_view m = *marker;
  if (m == tags_.param_open) {
    state_ = State::param_header;
    scan_ = 0;
  } else if (m == tags_.invoke_close) {
    take(m.size(), SpanKind::tool_call);
    end_call(true);
    state_ = State::calls;
  } else if (m == tags_.calls_close) {
    warn(OutputWarningKind::missing_invoke_close, offset_,
         "an invoke without its close tag ends at the calls closer");
    end_call(true);
    take(m.size(), SpanKind::markup);
    state_ = State::after_calls;
    after_calls_ = true;
  } else {  // EOS
    cut_call();
    warn(OutputWarningKind::missing_calls_close, offset_,
         "EOS inside a tool-call block: its complete calls are kept");
    take(m.size(), SpanKind::markup);
    state_ = State::done;
    result_.saw_eos = true;
  }
  return true;
}

bool OutputParser::step_value(bool at_end) {
  const std::string_view v = rest();
  if (v.empty() && !at_end) return false;
  const auto hit = find_first_marker(v, value_markers_, value_is_string_ ? 0 : scan_);
  if (value_is_string_) {
    // A string value streams: each piece is escaped as it becomes safe to emit.
    const std::size_t avail = hit ? hit->pos : safe_length(v, value_markers_, at_end);
    std::string fragment;
    append_json_string_body(fragment, v.substr(0, avail));
    if (!hit && !at_end) {
      if (avail == 0) return false;
      append_arguments(fragment);
      take(avail, SpanKind::tool_call);
      return true;
    }
    fragment += '"';
    append_arguments(fragment);
    take(avail, SpanKind::tool_call);
  } else {
    // A typed value is only known to be JSON or not once all of it is there.
    if (!hit && !at_end) {
      scan_ = v.size() >= value_marker_max_ ? v.size() - value_marker_max_ + 1 : 0;
      return false;
    }
    const std::size_t end = hit ? hit->pos : v.size();
    std::string fragment;
    if (!append_json_typed_value(fragment, v.substr(0, end)))
      warn(OutputWarningKind::invalid_json_value, offset_,
           "a typed (string=\"false\") value that is not valid JSON is kept as a JSON string");
    append_arguments(fragment);
    take(end, SpanKind::tool_call);
  }
  state_ = State::invoke_body;
  if (hit) {
    const std::string_view m = value_markers_[hit->which];
    if (m == tags_.param_close)
      take(m.size(), SpanKind::tool_call);
    else if (m != kEndOfSentence)  // at EOS, unterminated_invoke says it all
      warn(OutputWarningKind::missing_parameter_close, offset_,
           "a parameter without its close tag ends at the next tag");
  }
  return true;
}

bool OutputParser::step_after_calls() {
  const std::string_view v = rest();
  if (v.empty()) return false;
  std::size_t i = 0;
  while (i < v.size() && is_markup_space(v[i])) ++i;
  take(i, SpanKind::markup);
  if (i < v.size()) state_ = State::content;  // after_calls_ makes its first text warn
  return true;
}

void OutputParser::take(std::size_t n, SpanKind kind) {
  if (n == 0) return;
  const std::string_view bytes = rest().substr(0, n);
  Sink& s = sink();
  switch (kind) {
    case SpanKind::reasoning: s.delta.reasoning += bytes; break;
    case SpanKind::content: s.delta.content += bytes; break;
    case SpanKind::tool_call: call_delta().raw += bytes; break;
    case SpanKind::markup: break;
  }
  add_span(s.spans, {kind, offset_, offset_ + n, kind == SpanKind::tool_call ? call_index_ : 0});
  if (buffering_) invoke_text_ += bytes;
  pos_ += n;
  offset_ += n;
}

void OutputParser::warn(OutputWarningKind kind, std::size_t offset, std::string message) {
  sink().delta.warnings.push_back({kind, offset, std::move(message)});
}

ToolCallDelta& OutputParser::call_delta() {
  std::vector<ToolCallDelta>& v = sink().delta.tool_calls;
  if (v.empty() || v.back().index != call_index_ || v.back().ends) {
    v.emplace_back();
    v.back().index = call_index_;
  }
  return v.back();
}

void OutputParser::begin_call(std::string_view name) {
  in_invoke_ = true;
  buffering_ = options_.call_streaming == CallStreaming::whole_invoke;
  invoke_start_ = offset_;
  invoke_text_.clear();
  param_names_.clear();
  ToolCallDelta& d = call_delta();
  d.begins = true;
  d.name = std::string(name);
  d.arguments += '{';  // a fresh fragment: it starts the arguments object
}

void OutputParser::end_call(bool complete) {
  ToolCallDelta& d = call_delta();
  d.arguments += '}';
  d.ends = true;
  d.complete = complete;
  if (buffering_) {
    Sink p = std::move(pending_);
    pending_ = Sink{};
    main_.delta.reasoning += p.delta.reasoning;
    main_.delta.content += p.delta.content;
    for (ToolCallDelta& c : p.delta.tool_calls)
      add_call_delta(main_.delta.tool_calls, std::move(c));
    for (OutputWarning& w : p.delta.warnings) main_.delta.warnings.push_back(std::move(w));
    for (const OutputSpan& s : p.spans) add_span(main_.spans, s);
  }
  buffering_ = false;
  in_invoke_ = false;
  invoke_text_.clear();
  param_names_.clear();
  ++call_index_;
}

void OutputParser::cut_call() {
  if (!buffering_) {
    warn(OutputWarningKind::unterminated_invoke, invoke_start_,
         "an invoke still open at the end of the output ends the call incomplete");
    end_call(false);
    return;
  }
  // whole_invoke: nothing of the call was emitted; its bytes become content, in place.
  pending_ = Sink{};
  buffering_ = false;
  in_invoke_ = false;
  main_.delta.content += invoke_text_;
  add_span(main_.spans, {SpanKind::content, invoke_start_, offset_, 0});
  invoke_text_.clear();
  param_names_.clear();
  warn(OutputWarningKind::unterminated_invoke, invoke_start_,
       "an invoke still open at the end of the output is not a call: its text is kept as content");
}

ParseDelta OutputParser::flush() {
  Sink s = std::move(main_);
  main_ = Sink{};
  result_.reasoning_content += s.delta.reasoning;
  result_.content += s.delta.content;
  for (const ToolCallDelta& d : s.delta.tool_calls) {
    if (d.begins) result_.tool_calls.push_back({d.name, "", "", false});
    ParsedToolCall& c = result_.tool_calls.at(d.index);
    c.arguments += d.arguments;
    c.raw += d.raw;
    if (d.ends) c.complete = d.complete;
  }
  result_.warnings.insert(result_.warnings.end(), s.delta.warnings.begin(), s.delta.warnings.end());
  for (const OutputSpan& sp : s.spans) add_span(result_.spans, sp);
  s.delta.spans = std::move(s.spans);
  return std::move(s.delta);
}

ParsedOutput parse_output(std::string_view text, const OutputParserOptions& options) {
  OutputParser p(options);
  p.feed(text);
  p.finish();
  return p.result();
}

std::string check_output_spans(std::string_view input, const ParsedOutput& out,
                               ChatProfile version) {
  const std::vector<std::string_view> markup = all_markup(version);
  std::string reasoning, content;
  std::vector<std::string> raws(out.tool_calls.size());
  std::size_t at = 0;
  for (std::size_t i = 0; i < out.spans.size(); ++i) {
    const OutputSpan& s = out.spans[i];
    if (s.begin != at || s.end <= s.begin || s.end > input.size())
      return fmt::format("span {} [{}, {}) does not continue the tiling at {}", i, s.begin, s.end,
                         at);
    const std::string_view bytes = input.substr(s.begin, s.end - s.begin);
    switch (s.kind) {
      case SpanKind::reasoning: reasoning += bytes; break;
      case SpanKind::content: content += bytes; break;
      case SpanKind::tool_call:
        if (s.call >= raws.size())
          return fmt::format("span {} names call {} of {}", i, s.call, raws.size());
        raws[s.call] += bytes;
        break;
      case SpanKind::markup:
        for (std::size_t j = 0; j < bytes.size();) {
          if (is_markup_space(bytes[j])) {
            ++j;
            continue;
          }
          const auto m = std::find_if(markup.begin(), markup.end(), [&](std::string_view mk) {
            return bytes.substr(j).starts_with(mk);
          });
          if (m == markup.end())
            return fmt::format("markup span {} holds non-markup bytes at {}", i, s.begin + j);
          j += m->size();
        }
        break;
    }
    at = s.end;
  }
  if (at != input.size()) return fmt::format("spans end at {} of {} bytes", at, input.size());
  if (reasoning != out.reasoning_content) return "reasoning spans differ from reasoning_content";
  if (content != out.content) return "content spans differ from content";
  for (std::size_t c = 0; c < raws.size(); ++c) {
    if (raws[c] != out.tool_calls[c].raw) return fmt::format("call {}: spans differ from raw", c);
    const std::string& a = out.tool_calls[c].arguments;
    if (a.empty() || a.front() != '{' || !is_json_text(a))
      return fmt::format("call {}: arguments are not a JSON object: {}", c, a);
  }
  return "";
}

}  // namespace dsv4
