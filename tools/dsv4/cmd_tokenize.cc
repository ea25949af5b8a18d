// dsv4 tokenize / dsv4 detokenize: the tokenizer of a model directory (or of a tokenizer.json)
// applied to text from the command line or stdin.
//
//   dsv4 tokenize   [-m DIR | --tokenizer FILE] [--ids-only] [--special-as-text] TEXT|-
//   dsv4 detokenize [-m DIR | --tokenizer FILE] [--skip-special] IDS|-
//
// tokenize prints one line per token (index, id, the token's text as a quoted string with
// escapes, "special"/"added" marks) and a count; --ids-only prints just the ids joined by commas,
// which detokenize reads back. detokenize writes the decoded text exactly, without adding a
// newline, so `detokenize(tokenize(x)) == x` can be checked byte for byte.
#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "text/tokenizer.h"
#include "text/utf8.h"
#include "util/error.h"

namespace dsv4::cli {
namespace {

struct TokenizerArgs {
  std::string model_dir, file;
};

void add_tokenizer_options(CLI::App* sub, TokenizerArgs& a) {
  auto* m = sub->add_option("-m,--model", a.model_dir, "a model directory (uses DIR/tokenizer.json)")
                ->check(CLI::ExistingDirectory);
  auto* f = sub->add_option("--tokenizer", a.file, "a tokenizer.json file")->check(CLI::ExistingFile);
  m->excludes(f);
}

Tokenizer load(const TokenizerArgs& a) {
  if (!a.file.empty()) return Tokenizer::from_file(a.file);
  if (!a.model_dir.empty()) return Tokenizer::from_model_dir(a.model_dir);
  fail("no tokenizer given: use -m DIR (a model directory with tokenizer.json) or --tokenizer FILE");
}

// TEXT, or all of stdin for "-".
std::string read_input(const std::string& arg) {
  if (arg != "-") return arg;
  std::string s((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  if (std::cin.bad()) fail("cannot read standard input");
  return s;
}

// A token's bytes as a double-quoted string: valid UTF-8 is kept, controls and quotes are
// escaped, and the bytes of a partial character are shown as \xNN.
std::string quoted(std::string_view bytes) {
  std::string out = "\"";
  std::size_t p = 0;
  while (p < bytes.size()) {
    std::size_t q = p;
    char32_t c;
    if (!utf8_next(bytes, q, c)) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(bytes[p]));
      ++p;
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7F) out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
        else out.append(bytes.substr(p, q - p));
    }
    p = q;
  }
  return out + "\"";
}

std::vector<std::int32_t> parse_ids(const std::string& text) {
  std::vector<std::int32_t> ids;
  std::size_t p = 0;
  const auto sep = [](char c) { return c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (p < text.size()) {
    while (p < text.size() && sep(text[p])) ++p;
    std::size_t q = p;
    while (q < text.size() && !sep(text[q])) ++q;
    if (q == p) break;
    const std::string word = text.substr(p, q - p);
    std::size_t used = 0;
    long long v = -1;
    try {
      v = std::stoll(word, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != word.size() || v < 0 || v > INT32_MAX)
      fail("IDS: '{}' is not a token id (expected non-negative integers separated by commas or spaces)", word);
    ids.push_back(static_cast<std::int32_t>(v));
    p = q;
  }
  return ids;
}

}  // namespace

void register_tokenize(CLI::App& app) {
  struct TokOpts {
    TokenizerArgs tok;
    std::string text;
    bool ids_only = false, special_as_text = false;
  };
  auto t = std::make_shared<TokOpts>();
  CLI::App* sub = app.add_subcommand("tokenize", "Encode text with a model's tokenizer and show the tokens");
  add_tokenizer_options(sub, t->tok);
  sub->add_flag("--ids-only", t->ids_only, "print only the ids, comma-separated");
  sub->add_flag("--special-as-text", t->special_as_text,
                "tokenize special-token strings as ordinary text (tokenizers' encode_special_tokens)");
  sub->add_option("text", t->text, "the text, or - to read standard input")->required();
  add_command(sub, [t] {
    const Tokenizer tok = load(t->tok);
    const std::string text = read_input(t->text);
    EncodeOptions opt;
    opt.special_tokens_as_text = t->special_as_text;
    const std::vector<std::int32_t> ids = tok.encode(text, opt);
    std::string out;
    if (t->ids_only) {
      for (std::size_t i = 0; i < ids.size(); ++i) {
        if (i > 0) out += ",";
        out += std::to_string(ids[i]);
      }
      out += "\n";
    } else {
      for (std::size_t i = 0; i < ids.size(); ++i) {
        const char* mark = tok.is_special(ids[i]) ? "  special" : tok.is_added(ids[i]) ? "  added" : "";
        out += fmt::format("{:>6} {:>7}  {}{}\n", i, ids[i], quoted(tok.token_bytes(ids[i])), mark);
      }
      out += fmt::format("{} tokens, {} bytes\n", ids.size(), text.size());
    }
    std::fwrite(out.data(), 1, out.size(), stdout);
    return 0;
  });

  struct DetokOpts {
    TokenizerArgs tok;
    std::vector<std::string> ids;
    bool skip_special = false;
  };
  auto d = std::make_shared<DetokOpts>();
  CLI::App* dsub = app.add_subcommand("detokenize", "Decode token ids to text with a model's tokenizer");
  add_tokenizer_options(dsub, d->tok);
  dsub->add_flag("--skip-special", d->skip_special, "leave out special tokens");
  dsub->add_option("ids", d->ids, "ids separated by commas or spaces (one or more arguments), or - to read standard input")
      ->required();
  add_command(dsub, [d] {
    const Tokenizer tok = load(d->tok);
    std::string joined;
    if (d->ids.size() == 1) {
      joined = read_input(d->ids[0]);
    } else {
      for (const std::string& a : d->ids) joined += a + " ";
    }
    const std::vector<std::int32_t> ids = parse_ids(joined);
    const std::string text = tok.decode(ids, d->skip_special);
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
  });
}

}  // namespace dsv4::cli
