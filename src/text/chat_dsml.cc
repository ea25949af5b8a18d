#include "text/chat_dsml.h"

#include "text/chat_json.h"
#include "util/error.h"

namespace dsv4 {
namespace {

// `<｜DSML｜NAME` and `</｜DSML｜NAME>` for one profile's tag name.
// (Built by appending: GCC 12 warns falsely (-Wrestrict) on `"literal" + std::string&&`.)
std::string open_tag(std::string_view name) {
  std::string s = "<";
  s += chat_token::kDsml;
  s += name;
  return s;
}
std::string close_tag(std::string_view name) {
  std::string s = "</";
  s += chat_token::kDsml;
  s += name;
  s += '>';
  return s;
}

}  // namespace

std::string render_tools_block(const std::vector<nlohmann::ordered_json>& functions, ChatProfile profile) {
  const DsmlNames n = dsml_names(profile);
  const std::string calls = open_tag(n.calls) + ">";
  const std::string invoke = open_tag(n.invoke);
  const std::string param = open_tag(n.parameter);
  std::string schemas;
  for (std::size_t i = 0; i < functions.size(); ++i) {
    if (i > 0) schemas += '\n';
    schemas += python_json_dumps(functions[i]);
  }
  std::string out;
  out += "## Tools\n\n";
  out += "You have access to a set of tools to help answer the user's question. You can invoke tools by writing a \"";
  out += calls + "\" block like the following:\n\n";
  out += calls + "\n";
  out += invoke + " name=\"$TOOL_NAME\">\n";
  out += param + " name=\"$PARAMETER_NAME\" string=\"true|false\">$PARAMETER_VALUE" + close_tag(n.parameter) + "\n";
  out += "...\n";
  out += close_tag(n.invoke) + "\n";
  out += invoke + " name=\"$TOOL_NAME2\">\n";
  out += "...\n";
  out += close_tag(n.invoke) + "\n";
  out += close_tag(n.calls) + "\n\n";
  out += "String parameters should be specified as is and set `string=\"true\"`. For all other types (numbers, "
         "booleans, arrays, objects), pass the value in JSON format and set `string=\"false\"`.\n\n";
  out += "If thinking_mode is enabled (triggered by <think>), you MUST output your complete reasoning inside "
         "<think>...</think> BEFORE any tool calls or final response.\n\n";
  out += "Otherwise, output directly after </think> with tool calls or final response.\n\n";
  out += "### Available Tool Schemas\n\n";
  out += schemas;
  out += "\n\nYou MUST strictly follow the above defined tool name and parameter schemas to invoke tool calls.\n";
  return out;
}

std::string render_response_format_block(const nlohmann::ordered_json& response_format) {
  return "## Response Format:\n\nYou MUST strictly adhere to the following schema to reply:\n" +
         python_json_dumps(response_format);
}

std::string render_tool_calls_block(const std::vector<ChatToolCall>& calls, ChatProfile profile) {
  const DsmlNames n = dsml_names(profile);
  std::string out = open_tag(n.calls) + ">\n";
  for (std::size_t i = 0; i < calls.size(); ++i) {
    if (i > 0) out += '\n';
    if (!calls[i].arguments.is_object())
      fail("tool call '{}': arguments must be an object (see tool_arguments_object)", calls[i].name);
    out += open_tag(n.invoke) + " name=\"" + calls[i].name + "\">\n";
    bool first = true;
    for (const auto& [key, value] : calls[i].arguments.items()) {
      if (!first) out += '\n';
      first = false;
      const bool is_str = value.is_string();
      out += open_tag(n.parameter) + " name=\"" + key + "\" string=\"" + (is_str ? "true" : "false") + "\">";
      out += is_str ? value.get<std::string>() : python_json_dumps(value);
      out += close_tag(n.parameter);
    }
    out += '\n';
    out += close_tag(n.invoke);
  }
  out += '\n';
  out += close_tag(n.calls);
  return out;
}

}  // namespace dsv4
