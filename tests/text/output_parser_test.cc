// The streaming output parser (output_parser.h, spec chat-encoding.md §11): well-formed output as
// R's reference parser defines it, the golden assistant turns of ../shared/data/chat-encoding,
// every documented fallback, and the streaming contract: any chunking gives the same result as
// one-shot parsing, deltas concatenate to the result, no delta splits a UTF-8 character, nothing
// committed is ever retracted, and every input byte is accounted for (check_output_spans).
#include "text/output_parser.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "../common/test_env.h"
#include "text/utf8.h"
#include "util/error.h"

namespace dsv4 {
namespace {

using W = OutputWarningKind;
using ojson = nlohmann::ordered_json;

const std::string kCallsOpen = "<｜DSML｜ calls>";
const std::string kCallsClose = "</｜DSML｜ calls>";
const std::string kEos(kEndOfSentence);

// A V4.1 invoke with string parameters {name, value, string-attr}.
std::string invoke(const std::string& name,
                   const std::vector<std::tuple<std::string, std::string, std::string>>& params) {
  std::string s = "<｜DSML｜ invoke name=\"" + name + "\">\n";
  for (std::size_t i = 0; i < params.size(); ++i) {
    const auto& [k, v, t] = params[i];
    s += "<｜DSML｜ parameter name=\"" + k + "\" string=\"" + t + "\">" + v + "</｜DSML｜ parameter>";
    s += i + 1 < params.size() ? "\n" : "";
  }
  return s + "\n</｜DSML｜ invoke>";
}

std::string calls_block(const std::vector<std::string>& invokes) {
  std::string s = "\n\n" + kCallsOpen + "\n";
  for (std::size_t i = 0; i < invokes.size(); ++i) s += (i ? "\n" : "") + invokes[i];
  return s + "\n" + kCallsClose;
}

OutputParserOptions opts(bool thinking, CallStreaming cs = CallStreaming::whole_invoke,
                         ChatProfile v = ChatProfile::V41) {
  return {v, thinking, cs};
}

std::vector<W> kinds(const ParsedOutput& out) {
  std::vector<W> k;
  for (const OutputWarning& w : out.warnings) k.push_back(w.kind);
  return k;
}

// Parses `input` fed in the pieces cut at `cuts` (ascending offsets) and checks the streaming
// contract on the way; returns the final result.
ParsedOutput parse_in_pieces(std::string_view input, const OutputParserOptions& o,
                             const std::vector<std::size_t>& cuts) {
  OutputParser p(o);
  ParsedOutput from_deltas;
  const bool valid_input = utf8_valid(input);
  const auto absorb = [&](const ParseDelta& d) {
    if (valid_input) {
      EXPECT_TRUE(utf8_valid(d.reasoning)) << "a reasoning delta splits a character";
      EXPECT_TRUE(utf8_valid(d.content)) << "a content delta splits a character";
    }
    from_deltas.reasoning_content += d.reasoning;
    from_deltas.content += d.content;
    for (const ToolCallDelta& c : d.tool_calls) {
      EXPECT_TRUE(utf8_valid(c.arguments));
      if (c.begins) {
        EXPECT_EQ(c.index, from_deltas.tool_calls.size());
        from_deltas.tool_calls.push_back({c.name, "", "", false});
      }
      ParsedToolCall& t = from_deltas.tool_calls.at(c.index);
      t.arguments += c.arguments;
      t.raw += c.raw;
      if (c.ends) t.complete = c.complete;
    }
    from_deltas.warnings.insert(from_deltas.warnings.end(), d.warnings.begin(), d.warnings.end());
  };
  std::size_t at = 0;
  for (std::size_t cut : cuts) {
    absorb(p.feed(input.substr(at, cut - at)));
    at = cut;
  }
  absorb(p.feed(input.substr(at)));
  absorb(p.finish());
  from_deltas.spans = p.result().spans;
  from_deltas.saw_eos = p.result().saw_eos;
  EXPECT_EQ(from_deltas, p.result()) << "deltas do not add up to the result";
  return p.result();
}

ParsedOutput parse_checked(std::string_view input, const OutputParserOptions& o) {
  ParsedOutput out = parse_output(input, o);
  EXPECT_EQ(check_output_spans(input, out, o.dsml), "");
  return out;
}

// ---------------------------------------------------------------------------------------------
// Well-formed output (R's grammar).

TEST(OutputParser, ThinkingWithToolCallMatchesReferenceArguments) {
  const std::string in = "The user wants the weather.</think>" +
                         calls_block({invoke("get_weather", {{"location", "Beijing", "true"},
                                                             {"unit", "celsius", "true"}})}) +
                         kEos;
  const ParsedOutput out = parse_checked(in, opts(true));
  EXPECT_EQ(out.reasoning_content, "The user wants the weather.");
  EXPECT_EQ(out.content, "");  // the "\n\n" separator is markup, as in R
  ASSERT_EQ(out.tool_calls.size(), 1u);
  EXPECT_EQ(out.tool_calls[0].name, "get_weather");
  // R's layout: "{" + ", ".join(json(k) + ": " + V) + "}".
  EXPECT_EQ(out.tool_calls[0].arguments, R"({"location": "Beijing", "unit": "celsius"})");
  EXPECT_TRUE(out.tool_calls[0].complete);
  EXPECT_TRUE(out.warnings.empty());
  EXPECT_TRUE(out.saw_eos);
}

TEST(OutputParser, ChatModeContentOnly) {
  const ParsedOutput out = parse_checked("Hi there! How can I help you?" + kEos, opts(false));
  EXPECT_EQ(out.reasoning_content, "");
  EXPECT_EQ(out.content, "Hi there! How can I help you?");
  EXPECT_TRUE(out.tool_calls.empty());
  EXPECT_TRUE(out.warnings.empty());
  // Without the EOS text (servers strip the stop token) the result is the same.
  const ParsedOutput bare = parse_checked("Hi there! How can I help you?", opts(false));
  EXPECT_EQ(bare.content, out.content);
  EXPECT_TRUE(bare.warnings.empty());
  EXPECT_FALSE(bare.saw_eos);
}

TEST(OutputParser, ContentThenCallsAndTypedValues) {
  const std::string in =
      "Let me check.</think>Checking now." +
      calls_block(
          {invoke("search", {{"query", "a \"quoted\"\nline <b>", "true"},
                             {"num_results", "5", "false"},
                             {"filters", "{\"lang\": [\"en\", \"zh\"], \"safe\": true}", "false"},
                             {"exact", "null", "false"}}),
           invoke("get_time", {})});
  const ParsedOutput out = parse_checked(in, opts(true));
  EXPECT_EQ(out.content, "Checking now.");
  ASSERT_EQ(out.tool_calls.size(), 2u);
  const std::string& a = out.tool_calls[0].arguments;
  EXPECT_EQ(a, R"({"query": "a \"quoted\"\nline <b>", "num_results": 5, )"
               R"("filters": {"lang": ["en", "zh"], "safe": true}, "exact": null})");
  // Parameter order is kept: compare as an ordered JSON object.
  ojson expected = ojson::object();
  expected["query"] = "a \"quoted\"\nline <b>";
  expected["num_results"] = 5;
  expected["filters"] = ojson::parse(R"({"lang": ["en", "zh"], "safe": true})");
  expected["exact"] = nullptr;
  EXPECT_EQ(ojson::parse(a), expected);
  EXPECT_EQ(ojson::parse(a).dump(), expected.dump());  // same key order
  // A call with no parameters: '<｜DSML｜ invoke name="x">\n\n</｜DSML｜ invoke>' (spec §7.3).
  EXPECT_EQ(out.tool_calls[1].name, "get_time");
  EXPECT_EQ(out.tool_calls[1].arguments, "{}");
  EXPECT_TRUE(out.warnings.empty());
}

TEST(OutputParser, StringValuesKeepRawBytes) {
  // string="true" values are inserted raw by the encoder: quotes, '<', newlines, non-ASCII,
  // backslashes and control bytes all come back exactly.
  const std::string raw = "x<y \"q\" \\ 温泉 \t\x01 </b>\n";
  const ParsedOutput out =
      parse_checked(calls_block({invoke("f", {{"v", raw, "true"}})}), opts(false));
  ASSERT_EQ(out.tool_calls.size(), 1u);
  EXPECT_EQ(ojson::parse(out.tool_calls[0].arguments)["v"].get<std::string>(), raw);
  EXPECT_NE(out.tool_calls[0].arguments.find("\\u0001"), std::string::npos);
  EXPECT_NE(out.tool_calls[0].arguments.find("温泉"), std::string::npos);  // not \u-escaped
}

TEST(OutputParser, V4ProfileUsesUnspacedTags) {
  const std::string in =
      "r</think>\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"search\">\n"
      "<｜DSML｜parameter name=\"q\" string=\"true\">hot springs</｜DSML｜parameter>\n"
      "</｜DSML｜invoke>\n</｜DSML｜tool_calls>" + kEos;
  const ParsedOutput v4 =
      parse_checked(in, opts(true, CallStreaming::whole_invoke, ChatProfile::V4));
  ASSERT_EQ(v4.tool_calls.size(), 1u);
  EXPECT_EQ(v4.tool_calls[0].arguments, R"({"q": "hot springs"})");
  EXPECT_TRUE(v4.warnings.empty());
  // The V4.1 profile does not know these tags: all of it is content.
  const ParsedOutput v41 = parse_checked(in, opts(true));
  EXPECT_TRUE(v41.tool_calls.empty());
  EXPECT_EQ(v41.content, in.substr(9, in.size() - 9 - kEos.size()));  // after "r</think>"
}

TEST(OutputParser, SpecExamples) {
  // §11.2: "</think>12" with thinking on gives reasoning "" and content "12".
  ParsedOutput out = parse_checked("</think>12", opts(true));
  EXPECT_EQ(out.reasoning_content, "");
  EXPECT_EQ(out.content, "12");
  EXPECT_TRUE(out.warnings.empty());
  // Golden V41-2's second turn.
  out = parse_checked("The user asks about the capital of France. It is Paris.</think>"
                      "The capital of France is Paris." + kEos, opts(true));
  EXPECT_EQ(out.reasoning_content, "The user asks about the capital of France. It is Paris.");
  EXPECT_EQ(out.content, "The capital of France is Paris.");
  // Empty output.
  out = parse_checked("", opts(true));
  EXPECT_EQ(out,
            (ParsedOutput{
                "", "", {}, {{W::unclosed_reasoning, 0, out.warnings.at(0).message}}, {}, false}));
  EXPECT_TRUE(parse_checked("", opts(false)).warnings.empty());
}

// ---------------------------------------------------------------------------------------------
// Golden assistant turns: every assistant segment of the golden prompts, parsed as model output,
// gives back the assistant message of the input JSON it was rendered from.

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void check_golden(const std::string& output_file, const std::string& input_file, ChatProfile v) {
  SCOPED_TRACE(output_file);
  const std::string dir = test::shared_dir() + "/data/chat-encoding/";
  const std::string prompt = read_file(dir + output_file);
  const std::string input_text = read_file(dir + input_file);
  ASSERT_FALSE(prompt.empty()) << dir + output_file << " is missing";
  ASSERT_FALSE(input_text.empty()) << dir + input_file << " is missing";
  const ojson doc = ojson::parse(input_text);
  const ojson& messages = doc.is_array() ? doc : doc["messages"];
  std::vector<ojson> assistants;
  for (const ojson& m : messages)
    if (m["role"] == "assistant") assistants.push_back(m);

  const std::string tag = "<｜Assistant｜>";
  std::size_t at = 0, turn = 0;
  while ((at = prompt.find(tag, at)) != std::string::npos) {
    at += tag.size();
    std::string seg = prompt.substr(at);
    bool thinking;
    if (seg.starts_with("<think>")) {
      thinking = true;
      seg.erase(0, 7);
    } else {
      ASSERT_TRUE(seg.starts_with("</think>")) << seg.substr(0, 40);
      thinking = false;
      seg.erase(0, 8);
      if (seg.starts_with("<｜action｜>")) seg.erase(0, std::string("<｜action｜>").size());
    }
    const std::size_t eos = seg.find(kEos);
    if (eos == std::string::npos) {  // the generation prompt at the end (V4-5): no turn
      EXPECT_EQ(seg, "");
      continue;
    }
    seg.resize(eos + kEos.size());
    ASSERT_LT(turn, assistants.size());
    const ojson& m = assistants[turn++];
    SCOPED_TRACE("assistant turn " + std::to_string(turn));
    for (CallStreaming cs : {CallStreaming::whole_invoke, CallStreaming::incremental}) {
      const ParsedOutput out = parse_checked(seg, opts(thinking, cs, v));
      EXPECT_TRUE(out.warnings.empty()) << to_string(out.warnings.at(0).kind);
      EXPECT_TRUE(out.saw_eos);
      EXPECT_EQ(out.content, m.value("content", std::string()));
      if (thinking) {
        EXPECT_EQ(out.reasoning_content, m.value("reasoning", std::string()));
      } else {
        EXPECT_EQ(out.reasoning_content, "");  // historical reasoning is not in the prompt
      }
      const ojson calls = m.value("tool_calls", ojson::array());
      ASSERT_EQ(out.tool_calls.size(), calls.size());
      for (std::size_t i = 0; i < calls.size(); ++i) {
        const ojson& fn = calls[i]["function"];
        EXPECT_EQ(out.tool_calls[i].name, fn["name"].get<std::string>());
        // The inputs' arguments are written in R's layout, so the strings match exactly.
        EXPECT_EQ(out.tool_calls[i].arguments, fn["arguments"].get<std::string>());
        EXPECT_EQ(ojson::parse(out.tool_calls[i].arguments),
                  ojson::parse(fn["arguments"].get<std::string>()));
      }
      // And every split of the turn gives the same.
      for (std::size_t cut = 0; cut <= seg.size(); ++cut)
        ASSERT_EQ(parse_in_pieces(seg, opts(thinking, cs, v), {cut}), out) << "cut " << cut;
    }
  }
  EXPECT_EQ(turn, assistants.size());
}

TEST(OutputParserGolden, V41) {
  check_golden("v41_test_output_1.txt", "v4_test_input_1.json", ChatProfile::V41);
  check_golden("v41_test_output_2.txt", "v4_test_input_2.json", ChatProfile::V41);
}

TEST(OutputParserGolden, V4) {
  for (int i = 1; i <= 5; ++i)
    check_golden("v4_test_output_" + std::to_string(i) + ".txt",
                 "v4_test_input_" + std::to_string(i) + ".json", ChatProfile::V4);
}

// ---------------------------------------------------------------------------------------------
// Fallbacks: each documented rule, with its warning, and losslessness checked every time.

TEST(OutputParserFallback, UnclosedReasoningIsAllReasoning) {
  for (const std::string& tail : {std::string(), kEos}) {
    const ParsedOutput out = parse_checked("thinking and thinking" + tail, opts(true));
    EXPECT_EQ(out.reasoning_content, "thinking and thinking");
    EXPECT_EQ(out.content, "");
    EXPECT_EQ(kinds(out), std::vector<W>{W::unclosed_reasoning});
  }
  // A prefix of "</think>" at the end is reasoning text too: nothing guessed.
  EXPECT_EQ(parse_checked("abc</thi", opts(true)).reasoning_content, "abc</thi");
}

TEST(OutputParserFallback, CallsInsideReasoningEndReasoning) {
  const std::string in =
      "I will search." + calls_block({invoke("search", {{"q", "x", "true"}})}) + kEos;
  const ParsedOutput out = parse_checked(in, opts(true));
  EXPECT_EQ(out.reasoning_content, "I will search.");
  EXPECT_EQ(out.content, "");
  ASSERT_EQ(out.tool_calls.size(), 1u);
  EXPECT_EQ(out.tool_calls[0].arguments, R"({"q": "x"})");
  EXPECT_EQ(kinds(out), std::vector<W>{W::calls_in_reasoning});
}

TEST(OutputParserFallback, StrayThinkTags) {
  ParsedOutput out = parse_checked("<think>a</think>b</think>c", opts(true));
  EXPECT_EQ(out.reasoning_content, "a");
  EXPECT_EQ(out.content, "bc");
  EXPECT_EQ(kinds(out), (std::vector<W>{W::stray_think_open, W::stray_think_close}));
  out = parse_checked("answer<think>more thought</think>rest", opts(false));
  EXPECT_EQ(out.content, "answerrest");
  EXPECT_EQ(out.reasoning_content, "more thought");
  EXPECT_EQ(kinds(out), std::vector<W>{W::reasoning_reopened});
  EXPECT_EQ(out.warnings[0].offset, 6u);
}

TEST(OutputParserFallback, StrayTextInsideCallsBlockGoesToContent) {
  const std::string in = "\n\n" + kCallsOpen + "\nI am calling:\n" +
                         "<｜DSML｜ invoke name=\"f\">\n  junk here  \n" +
                         "<｜DSML｜ parameter name=\"a\" string=\"true\">1</｜DSML｜ parameter>\n" +
                         "</｜DSML｜ invoke>\n" + kCallsClose;
  const ParsedOutput out = parse_checked(in, opts(false));
  EXPECT_EQ(out.content, "I am calling:junk here");
  ASSERT_EQ(out.tool_calls.size(), 1u);
  EXPECT_EQ(out.tool_calls[0].arguments, R"({"a": "1"})");
  EXPECT_EQ(kinds(out), (std::vector<W>{W::stray_text_in_calls, W::stray_text_in_calls}));
}

TEST(OutputParserFallback, MalformedHeadersBecomeContent) {
  // An invoke without a name, then one whose header runs into the next tag: not calls.
  std::string in = "\n\n" + kCallsOpen + "\n<｜DSML｜ invoke nam=\"f\">\n</｜DSML｜ invoke>\n" +
                   "<｜DSML｜ invoke name=\"g\"\n<｜DSML｜ parameter name=\"a\" string=\"true\">1" +
                   "</｜DSML｜ parameter>\n</｜DSML｜ invoke>\n" + kCallsClose;
  ParsedOutput out = parse_checked(in, opts(false));
  EXPECT_TRUE(out.tool_calls.empty());
  EXPECT_EQ(kinds(out), (std::vector<W>{W::malformed_invoke, W::malformed_invoke}));
  EXPECT_NE(out.content.find("<｜DSML｜ invoke nam=\"f\">"), std::string::npos);
  EXPECT_NE(out.content.find("<｜DSML｜ invoke name=\"g\""), std::string::npos);
  // A header cut short by the next tag does not swallow it: the next invoke is a call.
  in = "\n\n" + kCallsOpen + "\n<｜DSML｜ invoke name=\"g\"" + invoke("h", {}) + "\n" + kCallsClose;
  out = parse_checked(in, opts(false));
  ASSERT_EQ(out.tool_calls.size(), 1u);
  EXPECT_EQ(out.tool_calls[0].name, "h");
  EXPECT_EQ(out.content, "<｜DSML｜ invoke name=\"g\"");
  EXPECT_EQ(kinds(out), std::vector<W>{W::malformed_invoke});
  // A bad string attribute and a repeated name: that parameter is content, the call stands.
  in = calls_block({invoke("f", {{"a", "1", "maybe"}, {"b", "2", "true"}, {"b", "3", "true"}})});
  out = parse_checked(in, opts(false));
  ASSERT_EQ(out.tool_calls.size(), 1u);
  EXPECT_EQ(out.tool_calls[0].arguments, R"({"b": "2"})");
  EXPECT_EQ(out.content,
            "<｜DSML｜ parameter name=\"a\" string=\"maybe\">1</｜DSML｜ parameter>"
            "<｜DSML｜ parameter name=\"b\" string=\"true\">3</｜DSML｜ parameter>");
  EXPECT_EQ(kinds(out), (std::vector<W>{W::malformed_parameter, W::duplicate_parameter}));
}

TEST(OutputParserFallback, ValueTyping) {
  const std::string in =
      "\n\n" + kCallsOpen + "\n<｜DSML｜ invoke name=\"f\">\n" +
      "<｜DSML｜ parameter name=\"bare\">7</｜DSML｜ parameter>\n" +
      "<｜DSML｜ parameter name=\"broken\" string=\"false\">[broken</｜DSML｜ parameter>\n" +
      "<｜DSML｜ parameter name=\"big\" string=\"false\"> 123456789012345678901234567890 "
      "</｜DSML｜ parameter>\n" +
      "<｜DSML｜ parameter name=\"empty\" string=\"false\"></｜DSML｜ parameter>\n" +
      "<｜DSML｜ parameter name=\"nul\" string=\"false\">2" + std::string(1, '\0') +
      "x</｜DSML｜ parameter>\n" + "</｜DSML｜ invoke>\n" + kCallsClose;
  const ParsedOutput out = parse_checked(in, opts(false));
  ASSERT_EQ(out.tool_calls.size(), 1u);
  // Untyped -> JSON (vLLM's `bare` = 7); invalid JSON -> the raw string; valid JSON verbatim
  // (exact digits, surrounding whitespace trimmed); empty typed value -> "".
  EXPECT_EQ(
      out.tool_calls[0].arguments,
      R"({"bare": 7, "broken": "[broken", "big": 123456789012345678901234567890, "empty": "", )"
      R"("nul": "2\u0000x"})");  // nlohmann alone would stop reading at the NUL
  EXPECT_EQ(kinds(out), (std::vector<W>{W::untyped_parameter, W::invalid_json_value,
                                        W::invalid_json_value, W::invalid_json_value}));
}

TEST(OutputParserFallback, MissingCloseTags) {
  // A parameter ending at the next parameter, the last one at the calls closer: vLLM keeps them.
  const std::string in = "\n\n" + kCallsOpen + "\n<｜DSML｜ invoke name=\"f\">\n" +
                         "<｜DSML｜ parameter name=\"a\" string=\"true\">1\n" +
                         "<｜DSML｜ parameter name=\"b\" string=\"false\">2" + kCallsClose + kEos;
  const ParsedOutput out = parse_checked(in, opts(false));
  ASSERT_EQ(out.tool_calls.size(), 1u);
  EXPECT_EQ(out.tool_calls[0].arguments, "{\"a\": \"1\\n\", \"b\": 2}");
  EXPECT_TRUE(out.tool_calls[0].complete);
  EXPECT_EQ(kinds(out), (std::vector<W>{W::missing_parameter_close, W::missing_parameter_close,
                                        W::missing_invoke_close}));
}

TEST(OutputParserFallback, UnterminatedInvoke) {
  const std::string done = invoke("f", {{"a", "1", "true"}});
  const std::string head = "Sure." + std::string("\n\n") + kCallsOpen + "\n" + done + "\n";
  const std::string cut =
      "<｜DSML｜ invoke name=\"g\">\n<｜DSML｜ parameter name=\"p\" string=\"true\">par";
  // whole_invoke: the open invoke is not a call; its bytes are content.
  ParsedOutput out = parse_checked(head + cut, opts(false));
  EXPECT_EQ(out.content, "Sure." + cut);
  ASSERT_EQ(out.tool_calls.size(), 1u);
  EXPECT_EQ(out.tool_calls[0].name, "f");
  EXPECT_EQ(kinds(out), (std::vector<W>{W::unterminated_invoke, W::missing_calls_close}));
  EXPECT_EQ(out.warnings[0].offset, head.size());
  // incremental: it was streamed already, so it ends incomplete with what arrived.
  out = parse_checked(head + cut, opts(false, CallStreaming::incremental));
  EXPECT_EQ(out.content, "Sure.");
  ASSERT_EQ(out.tool_calls.size(), 2u);
  EXPECT_TRUE(out.tool_calls[0].complete);
  EXPECT_FALSE(out.tool_calls[1].complete);
  EXPECT_EQ(out.tool_calls[1].name, "g");
  EXPECT_EQ(out.tool_calls[1].arguments, R"({"p": "par"})");
  EXPECT_EQ(kinds(out), (std::vector<W>{W::unterminated_invoke, W::missing_calls_close}));
  // At EOS the same happens.
  out = parse_checked(head + cut + kEos, opts(false));
  EXPECT_EQ(out.content, "Sure." + cut);
  EXPECT_TRUE(out.saw_eos);
}

TEST(OutputParserFallback, TextAfterCallsAndAfterEos) {
  const std::string block = calls_block({invoke("f", {})});
  ParsedOutput out =
      parse_checked("a" + block + "\nmore text" + kEos + "tail</think>", opts(false));
  EXPECT_EQ(out.content, "amore texttail</think>");  // after EOS no tag is recognised
  EXPECT_EQ(kinds(out), (std::vector<W>{W::text_after_calls, W::text_after_eos}));
  // A second calls block is parsed as one; whitespace after a block is markup.
  out = parse_checked("a" + block + block + "\n" + kEos, opts(false));
  EXPECT_EQ(out.content, "a");
  EXPECT_EQ(out.tool_calls.size(), 2u);
  EXPECT_TRUE(out.warnings.empty());
}

TEST(OutputParserFallback, InvalidUtf8PassesThroughText) {
  const std::string bad = "ok\xFF\xC3";  // an invalid byte, then a truncated character
  ParsedOutput out = parse_checked(bad, opts(false));
  EXPECT_EQ(out.content, bad);
  EXPECT_EQ(kinds(out), std::vector<W>{W::incomplete_utf8});
  out = parse_checked(calls_block({invoke("f", {{"v", "a\xFF" "b", "true"}})}), opts(false));
  EXPECT_EQ(out.tool_calls.at(0).arguments, "{\"v\": \"a\xEF\xBF\xBD" "b\"}");
  // One U+FFFD per maximal ill-formed subpart, as String::from_utf8_lossy: the cut-off
  // character "\xE6\xB8" is one, the lone continuation byte another.
  out = parse_checked(calls_block({invoke("f", {{"v", "\xE6\xB8" "b\x80", "true"}})}), opts(false));
  EXPECT_EQ(out.tool_calls.at(0).arguments, "{\"v\": \"\xEF\xBF\xBD" "b\xEF\xBF\xBD\"}");
}

// ---------------------------------------------------------------------------------------------
// The streaming contract.

TEST(OutputParserStream, MarkerSetsHaveNoSubstrings) {
  for (ChatProfile v : {ChatProfile::V41, ChatProfile::V4}) {
    const auto m = all_markup(v);
    for (std::size_t i = 0; i < m.size(); ++i)
      for (std::size_t j = 0; j < m.size(); ++j)
        if (i != j) {
          EXPECT_EQ(m[i].find(m[j]), std::string_view::npos) << m[i] << " / " << m[j];
        }
  }
}

TEST(OutputParserStream, HoldsBackOnlyPossibleTagStarts) {
  OutputParser p(opts(false));
  EXPECT_EQ(p.feed("Hello").content, "Hello");
  EXPECT_EQ(p.feed(" wor<").content, " wor");          // '<' may start a tag
  EXPECT_EQ(p.feed("b>ld\n\n").content, "<b>ld");      // it did not; LFs may be a separator
  EXPECT_EQ(p.feed("x \xE6\xB8").content, "\n\nx ");   // half of a character is held
  EXPECT_EQ(p.feed("\xA9").content, "\xE6\xB8\xA9");
  EXPECT_EQ(p.feed("<｜DSML｜ ca").content, "");
  EXPECT_EQ(p.feed("t").content, "<｜DSML｜ cat");
  const ParseDelta last = p.finish();
  EXPECT_TRUE(last.empty());
  EXPECT_THROW(p.feed("x"), Error);
  EXPECT_THROW(p.finish(), Error);
}

TEST(OutputParserStream, IncrementalModeStreamsStringValues) {
  OutputParser p(opts(false, CallStreaming::incremental));
  ParseDelta d = p.feed("\n\n" + kCallsOpen + "\n<｜DSML｜ invoke name=\"write\">\n");
  ASSERT_EQ(d.tool_calls.size(), 1u);
  EXPECT_TRUE(d.tool_calls[0].begins);
  EXPECT_EQ(d.tool_calls[0].name, "write");
  EXPECT_EQ(d.tool_calls[0].arguments, "{");
  d = p.feed("<｜DSML｜ parameter name=\"text\" string=\"true\">line 1\nline");
  ASSERT_EQ(d.tool_calls.size(), 1u);
  EXPECT_EQ(d.tool_calls[0].arguments, "\"text\": \"line 1\\nline");
  d = p.feed(" 2</｜DSML｜ parameter>\n</｜DSML｜ invoke>");
  ASSERT_EQ(d.tool_calls.size(), 1u);
  EXPECT_EQ(d.tool_calls[0].arguments, " 2\"}");
  EXPECT_TRUE(d.tool_calls[0].ends && d.tool_calls[0].complete);
  // whole_invoke: nothing until the invoke closes, then all of it at once.
  OutputParser q(opts(false));
  EXPECT_TRUE(
      q.feed("\n\n" + kCallsOpen + "\n<｜DSML｜ invoke name=\"write\">\n").tool_calls.empty());
  d = q.feed("</｜DSML｜ invoke>");
  ASSERT_EQ(d.tool_calls.size(), 1u);
  EXPECT_TRUE(d.tool_calls[0].begins && d.tool_calls[0].ends);
  EXPECT_EQ(d.tool_calls[0].arguments, "{}");
}

// Inputs for the chunking properties: well-formed and adversarial, V4.1 tags.
std::vector<std::string> stream_corpus() {
  const std::string full =
      invoke("get_weather", {{"location", "北京 \"x\"", "true"}, {"n", "[1, 2]", "false"}});
  return {
      "Reasoning 温泉.</think>Answer with é and 😀." + kEos,
      "r</think>c" + calls_block({full, invoke("g", {})}) + kEos,
      "r" + calls_block({full}) + "\n\nafter" + kEos + "x",
      "<think>a</think>b</think>c<think>d",
      "r</think>\n\n" + kCallsOpen + "\njunk\n<｜DSML｜ invoke name=\"f\"\n<｜DSML｜ invoke foo>" +
          "<｜DSML｜ invoke name=\"h\">\n<｜DSML｜ parameter name=\"a\">{\"k\": 1</｜DSML｜ "
          "parameter>" +
          "<｜DSML｜ parameter name=\"a\" string=\"true\">dup</｜DSML｜ parameter> x " +
          kCallsClose,
      "r</think>" + calls_block({full}).substr(0, 120),
      "r</think>\n\n" + kCallsOpen +
          "\n<｜DSML｜ invoke name=\"f\">\n<｜DSML｜ parameter name=\"v\" string=\"false\">[1,",
      "\n\n\n" + kCallsOpen + "\n\n\n",
      "<｜DSML｜ calls</｜DSML｜ calls><｜DSML｜ invoke name=\"x\"></｜DSML｜ invoke",
      "a\xFF\xE6\xB8</think>\xE6\xB8\xA9\xF0\x9F",
  };
}

TEST(OutputParserStream, EveryTwoWaySplitMatchesOneShot) {
  for (const std::string& in : stream_corpus()) {
    for (bool thinking : {true, false}) {
      for (CallStreaming cs : {CallStreaming::whole_invoke, CallStreaming::incremental}) {
        const OutputParserOptions o = opts(thinking, cs);
        const ParsedOutput one = parse_checked(in, o);
        for (std::size_t cut = 0; cut <= in.size(); ++cut)
          ASSERT_EQ(parse_in_pieces(in, o, {cut}), one) << "cut " << cut << " of " << in;
      }
    }
  }
}

TEST(OutputParserStream, ByteByByteAndRandomChunkings) {
  std::mt19937 rng(20260914);
  for (const std::string& in : stream_corpus()) {
    for (CallStreaming cs : {CallStreaming::whole_invoke, CallStreaming::incremental}) {
      const OutputParserOptions o = opts(true, cs);
      const ParsedOutput one = parse_output(in, o);
      std::vector<std::size_t> every;
      for (std::size_t i = 1; i < in.size(); ++i) every.push_back(i);
      ASSERT_EQ(parse_in_pieces(in, o, every), one) << in;
      for (int trial = 0; trial < 200; ++trial) {
        std::vector<std::size_t> cuts;
        for (std::size_t at = 0;;) {
          at += 1 + rng() % 9;
          if (at >= in.size()) break;
          cuts.push_back(at);
        }
        ASSERT_EQ(parse_in_pieces(in, o, cuts), one) << in;
      }
    }
  }
}

TEST(OutputParserStream, CommittedOutputIsNeverRetracted) {
  // Feeding a prefix (no finish) commits a prefix of what the whole output commits, so a server
  // can send each delta at once; finishing any prefix (a truncated output) stays lossless.
  const auto is_prefix = [](const std::string& a, const std::string& b) {
    return b.starts_with(a);
  };
  for (const std::string& in : stream_corpus()) {
    for (CallStreaming cs : {CallStreaming::whole_invoke, CallStreaming::incremental}) {
      const OutputParserOptions o = opts(true, cs);
      const ParsedOutput all = parse_output(in, o);
      for (std::size_t k = 0; k <= in.size(); ++k) {
        OutputParser p(o);
        p.feed(std::string_view(in).substr(0, k));
        const ParsedOutput& part = p.result();
        ASSERT_TRUE(is_prefix(part.reasoning_content, all.reasoning_content)) << k;
        ASSERT_TRUE(is_prefix(part.content, all.content)) << k;
        ASSERT_LE(part.tool_calls.size(), all.tool_calls.size()) << k;
        for (std::size_t c = 0; c < part.tool_calls.size(); ++c) {
          ASSERT_EQ(part.tool_calls[c].name, all.tool_calls[c].name);
          ASSERT_TRUE(is_prefix(part.tool_calls[c].arguments, all.tool_calls[c].arguments)) << k;
        }
        ASSERT_LE(part.warnings.size(), all.warnings.size());
        ASSERT_TRUE(std::equal(part.warnings.begin(), part.warnings.end(), all.warnings.begin()));
        p.finish();
        ASSERT_EQ(check_output_spans(in.substr(0, k), p.result(), o.dsml), "") << k;
      }
    }
  }
}

TEST(OutputParserStream, RandomMarkupSoup) {
  // Random concatenations of tags, tag fragments, whitespace and text: every chunking agrees with
  // one-shot parsing and the result is lossless.
  const std::vector<std::string> atoms = {"<think>",
                                          "</think>",
                                          kEos,
                                          kCallsOpen,
                                          kCallsClose,
                                          "<｜DSML｜ invoke",
                                          " name=\"f\"",
                                          ">",
                                          "</｜DSML｜ invoke>",
                                          "<｜DSML｜ parameter",
                                          " string=\"true\"",
                                          " string=\"false\"",
                                          " name=\"a\"",
                                          "</｜DSML｜ parameter>",
                                          "\n",
                                          "\n\n",
                                          " ",
                                          "<",
                                          "｜DSML｜",
                                          "\"",
                                          "x",
                                          "{\"k\": [1]}",
                                          "温",
                                          "\xE6",
                                          "\xFF",
                                          "1"};
  std::mt19937 rng(7);
  for (int trial = 0; trial < 1500; ++trial) {
    std::string in;
    const int n = 1 + static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) in += atoms[rng() % atoms.size()];
    const OutputParserOptions o = opts(rng() % 2 == 0, rng() % 2 ? CallStreaming::incremental
                                                                  : CallStreaming::whole_invoke);
    const ParsedOutput one = parse_checked(in, o);
    std::vector<std::size_t> cuts;
    for (std::size_t at = 0;;) {
      at += 1 + rng() % 6;
      if (at >= in.size()) break;
      cuts.push_back(at);
    }
    ASSERT_EQ(parse_in_pieces(in, o, cuts), one) << in;
  }
}

}  // namespace
}  // namespace dsv4
