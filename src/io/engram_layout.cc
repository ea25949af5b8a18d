#include "io/engram_layout.h"

#include <set>

#include "io/config.h"

namespace dsv4 {
namespace {

std::uint64_t mulmod(std::uint64_t a, std::uint64_t b, std::uint64_t m) {
  return static_cast<std::uint64_t>(static_cast<unsigned __int128>(a) * b % m);
}

std::uint64_t powmod(std::uint64_t a, std::uint64_t e, std::uint64_t m) {
  std::uint64_t r = 1;
  a %= m;
  while (e) {
    if (e & 1) r = mulmod(r, a, m);
    a = mulmod(a, a, m);
    e >>= 1;
  }
  return r;
}

}  // namespace

// Deterministic Miller–Rabin: these 12 bases decide every n < 2^64 (Sinclair/Jaeschke bound).
bool is_prime_u64(std::uint64_t n) {
  if (n < 2) return false;
  for (std::uint64_t p : {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37}) {
    if (n % p == 0) return n == p;
  }
  std::uint64_t d = n - 1;
  int s = 0;
  while ((d & 1) == 0) {
    d >>= 1;
    ++s;
  }
  for (std::uint64_t a : {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37}) {
    std::uint64_t x = powmod(a, d, n);
    if (x == 1 || x == n - 1) continue;
    bool composite = true;
    for (int i = 1; i < s; ++i) {
      x = mulmod(x, x, n);
      if (x == n - 1) {
        composite = false;
        break;
      }
    }
    if (composite) return false;
  }
  return true;
}

EngramLayout engram_layout(const ModelConfig& c) {
  EngramLayout out;
  std::set<std::int64_t> used;
  for (std::int64_t layer : c.engram_layer_ids) {
    EngramLayerLayout l;
    l.layer_id = layer;
    for (std::int64_t n = 2; n <= c.engram_max_ngram_size; ++n) {
      std::int64_t cur = c.engram_vocab_size - 1;
      for (std::int64_t h = 0; h < c.engram_n_heads; ++h) {
        std::int64_t p = cur + 1;
        while (!is_prime_u64(static_cast<std::uint64_t>(p)) || used.count(p)) ++p;
        used.insert(p);
        l.offsets.push_back(l.rows);
        l.primes.push_back(p);
        l.rows += p;
        cur = p;
      }
    }
    out.layers.push_back(std::move(l));
  }
  return out;
}

}  // namespace dsv4
