#pragma once
// The Engram table layout (spec §8.1): which prime modulus each (layer, n-gram order, head) hash
// column uses and where its rows start in the layer's embedding table. It is derived from the
// config by the reference's prime search, never pasted, so that any engram_vocab_size works and
// `engram_num_embeddings` can be checked against it.
#include <cstdint>
#include <vector>

namespace dsv4 {

struct ModelConfig;

struct EngramLayerLayout {
  std::int64_t layer_id = 0;
  // One entry per hash column, ordered (n − 2) · n_heads + head, n = 2 .. max_ngram_size.
  std::vector<std::int64_t> primes;
  std::vector<std::int64_t> offsets;  // exclusive prefix sums of `primes`
  std::int64_t rows = 0;              // Σ primes = the table's row count
};

struct EngramLayout {
  std::vector<EngramLayerLayout> layers;  // in engram_layer_ids order
};

// Runs the prime search: a set of used primes shared by all layers; for each engram layer (in
// order) and each order n, start just above engram_vocab_size − 1 and give every head the
// smallest unused prime greater than the previous one.
EngramLayout engram_layout(const ModelConfig& c);

bool is_prime_u64(std::uint64_t n);

}  // namespace dsv4
