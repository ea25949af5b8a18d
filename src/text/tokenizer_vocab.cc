#include "text/tokenizer_vocab.h"

#include <limits>
#include <string_view>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "util/error.h"
#include "util/mapped_file.h"

namespace dsv4 {
namespace {

using nlohmann::json;

// A short, printable rendering of a JSON value for error messages.
std::string show(const json& v) {
  std::string s = v.dump();
  if (s.size() > 80) s = s.substr(0, 77) + "...";
  return s;
}

// An id field: a JSON integer in [0, INT32_MAX] (ids are int32 everywhere downstream).
std::int64_t read_id(const json& v, const std::string& source, const std::string& where) {
  if (!v.is_number_integer()) fail("{}: {} must be an integer id, got {}", source, where, show(v));
  std::int64_t id;
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int32_t>::max()))
      fail("{}: {} is {}, beyond the int32 id range", source, where, u);
    id = static_cast<std::int64_t>(u);
  } else {
    id = v.get<std::int64_t>();
    if (id < 0 || id > std::numeric_limits<std::int32_t>::max())
      fail("{}: {} is {}, outside 0..{}", source, where, id, std::numeric_limits<std::int32_t>::max());
  }
  return id;
}

bool read_flag(const json& entry, const char* name, const std::string& source, const std::string& where) {
  auto it = entry.find(name);
  if (it == entry.end() || it->is_null()) return false;
  if (!it->is_boolean()) fail("{}: {}.{} must be true or false, got {}", source, where, name, show(*it));
  return it->get<bool>();
}

const json& member(const json& obj, const char* name, const std::string& source, const std::string& where) {
  auto it = obj.find(name);
  if (it == obj.end()) fail("{}: missing {}.{}", source, where, name);
  return *it;
}

void check_model_and_decoder(const json& doc, const std::string& source) {
  const json& model = member(doc, "model", source, "the top level");
  if (!model.is_object()) fail("{}: model must be an object, got {}", source, show(model));
  const json& type = member(model, "type", source, "model");
  if (type != "BPE") fail("{}: model.type is {}; only BPE tokenizers are supported", source, show(type));
  // The ByteLevel decoder is what turns vocabulary strings back into bytes (spec §8.2, §12).
  auto dec = doc.find("decoder");
  if (dec == doc.end() || !dec->is_object() || dec->value("type", json()) != "ByteLevel")
    fail("{}: decoder is {}; only a ByteLevel decoder is supported", source,
         dec == doc.end() ? std::string("missing") : show(*dec));
}

}  // namespace

json read_tokenizer_json(const std::string& path) {
  MappedFile file(path);  // names the file if it is missing or unreadable
  if (file.size() == 0) fail("{}: tokenizer file is empty", path);
  try {
    return json::parse(file.data(), file.data() + file.size());
  } catch (const json::exception& e) {
    fail("{}: not valid JSON: {}", path, e.what());
  }
}

TokenizerVocab tokenizer_vocab_from_json(const json& doc, const std::string& source) {
  if (!doc.is_object()) fail("{}: the top level must be a JSON object, got {}", source, show(doc));
  check_model_and_decoder(doc, source);

  // model.vocab: token string -> id; the ids must be exactly 0..V-1.
  const json& vocab = member(doc.at("model"), "vocab", source, "model");
  if (!vocab.is_object()) fail("{}: model.vocab must be an object of token -> id, got {}", source, show(vocab));
  const std::size_t v = vocab.size();
  if (v == 0) fail("{}: model.vocab is empty", source);
  TokenizerVocab out;
  out.id_to_token.resize(v);
  std::vector<std::uint8_t> seen(v, 0);
  std::unordered_map<std::string_view, std::int64_t> vocab_id;  // views into `doc`'s keys
  vocab_id.reserve(v);
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    const std::int64_t id = read_id(it.value(), source, fmt::format("model.vocab[{}]", json(it.key()).dump()));
    if (static_cast<std::size_t>(id) >= v)
      fail("{}: model.vocab has {} entries but {} has id {}; vocabulary ids must be 0..{}", source, v,
           json(it.key()).dump(), id, v - 1);
    if (seen[id])
      fail("{}: model.vocab gives id {} to both {} and {}", source, id, json(out.id_to_token[id]).dump(),
           json(it.key()).dump());
    seen[id] = 1;
    out.id_to_token[id] = it.key();
    vocab_id.emplace(it.key(), id);
  }
  // With V entries and no duplicates, every id 0..V-1 is taken: no gaps are possible here.

  out.is_added.assign(v, 0);
  out.is_special.assign(v, 0);
  auto added_it = doc.find("added_tokens");
  if (added_it == doc.end() || added_it->is_null()) return out;
  if (!added_it->is_array()) fail("{}: added_tokens must be an array, got {}", source, show(*added_it));

  std::unordered_map<std::string, std::int64_t> added_id;  // content -> id, for duplicates
  for (std::size_t i = 0; i < added_it->size(); ++i) {
    const json& e = (*added_it)[i];
    const std::string where = fmt::format("added_tokens[{}]", i);
    if (!e.is_object()) fail("{}: {} must be an object, got {}", source, where, show(e));
    const json& content_v = member(e, "content", source, where);
    if (!content_v.is_string()) fail("{}: {}.content must be a string, got {}", source, where, show(content_v));
    const std::string& content = content_v.get_ref<const std::string&>();
    if (content.empty()) fail("{}: {}.content is empty", source, where);
    const std::int64_t id = read_id(member(e, "id", source, where), source, where + ".id");
    const bool special = read_flag(e, "special", source, where);
    // Also type-check the other flags so a malformed entry is caught here.
    for (const char* f : {"single_word", "lstrip", "rstrip", "normalized"}) read_flag(e, f, source, where);

    const std::string shown = json(content).dump();
    if (auto prev = added_id.find(content); prev != added_id.end())
      fail("{}: {} repeats content {} (already added with id {})", source, where, shown, prev->second);

    std::int64_t expected;
    if (auto in_vocab = vocab_id.find(content); in_vocab != vocab_id.end()) {
      expected = in_vocab->second;  // re-declares a vocabulary entry: keeps its id
      if (id != expected)
        fail("{}: {} {} has id {}, but model.vocab already gives it id {}", source, where, shown, id, expected);
    } else {
      expected = static_cast<std::int64_t>(out.size());  // a new token takes the next id
      if (id != expected) {
        if (static_cast<std::size_t>(id) < out.size() && out.is_added[id])
          fail("{}: {} {} has id {}, already used by added token {}", source, where, shown, id,
               json(out.id_to_token[id]).dump());
        if (static_cast<std::size_t>(id) < v)
          fail("{}: {} {} has id {}, which model.vocab gives to {}", source, where, shown, id,
               json(out.id_to_token[id]).dump());
        fail("{}: {} {} has id {}, but the next free id is {} (ids must continue without gaps, "
             "in list order)", source, where, shown, id, expected);
      }
      out.id_to_token.push_back(content);
      out.is_added.push_back(0);
      out.is_special.push_back(0);
    }
    out.is_added[id] = 1;
    out.is_special[id] = special ? 1 : 0;
    added_id.emplace(content, id);
  }
  return out;
}

TokenizerVocab load_tokenizer_vocab(const std::string& path) {
  return tokenizer_vocab_from_json(read_tokenizer_json(path), path);
}

}  // namespace dsv4
