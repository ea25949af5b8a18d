#include "text/tokenizer.h"

#include <filesystem>
#include <mutex>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "text/bpe.h"
#include "text/byte_level.h"
#include "text/pretokenizer.h"
#include "text/utf8_lossy.h"
#include "util/error.h"

namespace dsv4 {
namespace {

using nlohmann::json;

std::string show(const json& v) {
  std::string s = v.dump();
  if (s.size() > 120) s = s.substr(0, 117) + "...";
  return s;
}

// The normalizer must do nothing: null, or an empty Sequence (DeepSeek's).
void check_normalizer(const json& doc, const std::string& source) {
  auto it = doc.find("normalizer");
  if (it == doc.end() || it->is_null()) return;
  const json& n = *it;
  if (n.is_object() && n.value("type", json()) == "Sequence") {
    auto list = n.find("normalizers");
    if (list != n.end() && list->is_array() && list->empty()) return;
  }
  fail("{}: normalizer is {}; only an empty normalizer (null or an empty Sequence, as DeepSeek ships) is supported",
       source, show(n));
}

void check_null(const json& doc, const char* key, const std::string& source, const char* why) {
  auto it = doc.find(key);
  if (it != doc.end() && !it->is_null()) fail("{}: {} is {}; {}", source, key, show(*it), why);
}

// What add_special_tokens adds around the text: the "single" template of a TemplateProcessing
// post-processor. ByteLevel post-processors only touch offsets.
struct Template {
  std::vector<std::int32_t> before, after;
};

void read_template_processing(const json& pp, const std::string& where, const std::string& source, Template& t) {
  const auto single = pp.find("single");
  if (single == pp.end() || !single->is_array())
    fail("{}: {}.single must be an array", source, where);
  const json specials = pp.value("special_tokens", json::object());
  bool seen_sequence = false;
  for (std::size_t i = 0; i < single->size(); ++i) {
    const json& piece = (*single)[i];
    const std::string at = fmt::format("{}.single[{}]", where, i);
    if (piece.is_object() && piece.contains("Sequence")) {
      const json& seq = piece["Sequence"];
      const json id = seq.is_object() ? seq.value("id", json()) : json();
      if (id != "A") fail("{}: {} is {}; a single-sequence template can only hold sequence \"A\"", source, at, show(piece));
      if (seen_sequence) fail("{}: {} repeats the sequence", source, at);
      seen_sequence = true;
    } else if (piece.is_object() && piece.contains("SpecialToken") && piece["SpecialToken"].contains("id") &&
               piece["SpecialToken"]["id"].is_string()) {
      const std::string& name = piece["SpecialToken"]["id"].get_ref<const std::string&>();
      auto sp = specials.find(name);
      if (sp == specials.end() || !sp->is_object() || !sp->contains("ids") || !(*sp)["ids"].is_array())
        fail("{}: {} names special token {} which {}.special_tokens does not define with \"ids\"", source, at,
             json(name).dump(), where);
      for (const json& id : (*sp)["ids"]) {
        if (!id.is_number_integer() || id.get<std::int64_t>() < 0 || id.get<std::int64_t>() > INT32_MAX)
          fail("{}: {}.special_tokens[{}].ids holds {}, not a token id", source, where, json(name).dump(), show(id));
        (seen_sequence ? t.after : t.before).push_back(id.get<std::int32_t>());
      }
    } else {
      fail("{}: {} is {}; expected {{\"SpecialToken\": ...}} or {{\"Sequence\": ...}}", source, at, show(piece));
    }
  }
  if (!seen_sequence) fail("{}: {}.single has no {{\"Sequence\": {{\"id\": \"A\"}}}}", source, where);
}

Template read_post_processor(const json& doc, const std::string& source) {
  Template t;
  auto it = doc.find("post_processor");
  if (it == doc.end() || it->is_null()) return t;
  std::vector<std::pair<const json*, std::string>> steps;
  if (it->is_object() && it->value("type", json()) == "Sequence" && it->contains("processors") &&
      (*it)["processors"].is_array()) {
    for (std::size_t i = 0; i < (*it)["processors"].size(); ++i)
      steps.emplace_back(&(*it)["processors"][i], fmt::format("post_processor.processors[{}]", i));
  } else {
    steps.emplace_back(&*it, "post_processor");
  }
  bool have_template = false;
  for (const auto& [pp, where] : steps) {
    const json type = pp->is_object() ? pp->value("type", json()) : json();
    if (type == "ByteLevel") continue;
    if (type == "TemplateProcessing" && !have_template) {
      read_template_processing(*pp, where, source, t);
      have_template = true;
      continue;
    }
    fail("{}: {} is {}; only ByteLevel and one TemplateProcessing post-processor are supported", source, where,
         show(*pp));
  }
  return t;
}

// bos_token / eos_token of a tokenizer_config.json: a string, {"content": string} or null.
std::optional<std::string> config_token(const json& cfg, const char* key, const std::string& source) {
  auto it = cfg.find(key);
  if (it == cfg.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
    return (*it)["content"].get<std::string>();
  fail("{}: {} is {}; expected a string or an object with \"content\"", source, key, show(*it));
}

// Word caches for concurrent encode() calls: each call borrows one and gives it back.
class CachePool {
 public:
  std::unique_ptr<WordCache> take() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!free_.empty()) {
        auto c = std::move(free_.back());
        free_.pop_back();
        return c;
      }
    }
    return std::make_unique<WordCache>();
  }
  void give(std::unique_ptr<WordCache> c) {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.size() < kMaxPooled) free_.push_back(std::move(c));
  }

 private:
  static constexpr std::size_t kMaxPooled = 64;
  std::mutex mu_;
  std::vector<std::unique_ptr<WordCache>> free_;
};

}  // namespace

struct Tokenizer::Impl {
  std::string source;
  TokenizerVocab vocab;
  std::size_t model_size = 0;  // model.vocab entries; ids above are added tokens only
  std::unique_ptr<BpeModel> bpe;
  AddedTokenMatcher added;
  Template post;
  std::unordered_map<std::string, std::int32_t> added_ids;  // content -> id
  std::string decoded;                  // the ByteLevel decoder's bytes of every id, concatenated
  std::vector<std::uint32_t> decoded_at;  // [size + 1] offsets into `decoded`
  std::optional<std::int32_t> bos, eos;
  mutable CachePool caches;

  void check_id(std::int64_t id, const char* what) const {
    if (id < 0 || static_cast<std::uint64_t>(id) >= vocab.size())
      fail("{}: token id {} is outside this tokenizer's 0..{} ({}; spec §16.6)", source, id, vocab.size() - 1, what);
  }
};

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::from_json(const json& doc, const std::string& source) {
  auto impl = std::make_unique<Impl>();
  impl->source = source;
  // Ids, model type and decoder (tokenizer_vocab.h); then every other part the encoder uses.
  impl->vocab = tokenizer_vocab_from_json(doc, source);
  check_normalizer(doc, source);
  check_deepseek_pretokenizer(doc.contains("pre_tokenizer") ? doc["pre_tokenizer"] : json(), source);
  check_null(doc, "truncation", source, "truncation is not supported (encode returns every token)");
  check_null(doc, "padding", source, "padding is not supported (encode returns every token)");
  impl->post = read_post_processor(doc, source);

  const json& model = doc.at("model");
  impl->model_size = model.at("vocab").size();
  impl->bpe = std::make_unique<BpeModel>(
      model, std::span<const std::string>(impl->vocab.id_to_token.data(), impl->model_size), source);

  std::vector<AddedToken> added = added_tokens_from_json(doc, source);
  for (const AddedToken& t : added) impl->added_ids.emplace(t.content, t.id);
  impl->added = AddedTokenMatcher(std::move(added));
  for (std::int32_t id : impl->post.before) impl->check_id(id, "post_processor special token");
  for (std::int32_t id : impl->post.after) impl->check_id(id, "post_processor special token");

  impl->decoded_at.reserve(impl->vocab.size() + 1);
  for (const std::string& tok : impl->vocab.id_to_token) {
    impl->decoded_at.push_back(static_cast<std::uint32_t>(impl->decoded.size()));
    impl->decoded += byte_level_decode(tok);
  }
  impl->decoded_at.push_back(static_cast<std::uint32_t>(impl->decoded.size()));
  return Tokenizer(std::move(impl));
}

Tokenizer Tokenizer::from_file(const std::string& path) {
  Tokenizer t = from_json(read_tokenizer_json(path), path);
  const std::filesystem::path cfg_path = std::filesystem::path(path).parent_path() / "tokenizer_config.json";
  std::error_code ec;
  if (std::filesystem::is_regular_file(cfg_path, ec)) {
    const std::string cfg_name = cfg_path.string();
    const json cfg = read_tokenizer_json(cfg_name);  // any JSON file; names it on errors
    if (!cfg.is_object()) fail("{}: the top level must be a JSON object", cfg_name);
    const auto lookup = [&](const char* key) -> std::optional<std::int32_t> {
      const auto content = config_token(cfg, key, cfg_name);
      if (!content) return std::nullopt;
      const auto id = t.token_to_id(*content);
      if (!id) fail("{}: {} {} is not a token of {}", cfg_name, key, json(*content).dump(), path);
      return id;
    };
    t.impl_->bos = lookup("bos_token");
    t.impl_->eos = lookup("eos_token");
  }
  return t;
}

Tokenizer Tokenizer::from_model_dir(const std::string& dir) {
  return from_file((std::filesystem::path(dir) / "tokenizer.json").string());
}

void Tokenizer::encode_append(std::string_view text, std::vector<std::int32_t>& out,
                              const EncodeOptions& options) const {
  const Impl& m = *impl_;
  if (const std::size_t bad = utf8_first_invalid(text); bad != text.size())
    fail("encode: the text is not valid UTF-8 (ill-formed sequence at byte {} of {})", bad, text.size());
  if (options.add_special_tokens) out.insert(out.end(), m.post.before.begin(), m.post.before.end());

  std::vector<TextSegment> segments;
  m.added.split(text, options.special_tokens_as_text, segments);
  std::unique_ptr<WordCache> cache = m.caches.take();
  std::vector<std::uint32_t> ends;
  out.reserve(out.size() + text.size() / 3);
  for (const TextSegment& seg : segments) {
    if (seg.id >= 0) {
      out.push_back(seg.id);
      continue;
    }
    const std::string_view part = text.substr(seg.begin, seg.end - seg.begin);
    ends.clear();
    dsv4::pretokenize(part, ends);
    std::uint32_t b = 0;
    for (std::uint32_t e : ends) {
      m.bpe->encode(part.substr(b, e - b), out, cache.get());
      b = e;
    }
  }
  m.caches.give(std::move(cache));
  if (options.add_special_tokens) out.insert(out.end(), m.post.after.begin(), m.post.after.end());
}

std::vector<std::int32_t> Tokenizer::encode(std::string_view text, const EncodeOptions& options) const {
  std::vector<std::int32_t> out;
  encode_append(text, out, options);
  return out;
}

std::string_view Tokenizer::token_bytes(std::int32_t id) const {
  impl_->check_id(id, "token_bytes");
  const std::uint32_t b = impl_->decoded_at[id], e = impl_->decoded_at[id + 1];
  return std::string_view(impl_->decoded).substr(b, e - b);
}

std::string Tokenizer::decode(std::span<const std::int32_t> ids, bool skip_special_tokens) const {
  const Impl& m = *impl_;
  std::string bytes;
  for (std::int32_t id : ids) {
    m.check_id(id, "decode");
    if (skip_special_tokens && m.vocab.is_special[id]) continue;
    bytes.append(m.decoded, m.decoded_at[id], m.decoded_at[id + 1] - m.decoded_at[id]);
  }
  return utf8_lossy(bytes);
}

std::size_t Tokenizer::size() const { return impl_->vocab.size(); }

const std::string& Tokenizer::id_to_token(std::int32_t id) const {
  impl_->check_id(id, "id_to_token");
  return impl_->vocab.id_to_token[id];
}

std::optional<std::int32_t> Tokenizer::token_to_id(std::string_view token) const {
  if (auto it = impl_->added_ids.find(std::string(token)); it != impl_->added_ids.end()) return it->second;
  if (const std::int32_t id = impl_->bpe->vocab_id(token); id >= 0) return id;
  return std::nullopt;
}

bool Tokenizer::is_special(std::int32_t id) const {
  impl_->check_id(id, "is_special");
  return impl_->vocab.is_special[id] != 0;
}

bool Tokenizer::is_added(std::int32_t id) const {
  impl_->check_id(id, "is_added");
  return impl_->vocab.is_added[id] != 0;
}

const TokenizerVocab& Tokenizer::vocab() const { return impl_->vocab; }
const std::vector<AddedToken>& Tokenizer::added_tokens() const { return impl_->added.tokens(); }
std::optional<std::int32_t> Tokenizer::bos_id() const { return impl_->bos; }
std::optional<std::int32_t> Tokenizer::eos_id() const { return impl_->eos; }

std::vector<std::string_view> Tokenizer::pretokenize(std::string_view text) { return dsv4::pretokenize(text); }

}  // namespace dsv4
