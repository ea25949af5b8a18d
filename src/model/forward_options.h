#pragma once
// The switches of the forward pass (issue: exact forward pass; spec §16.2, §16.4, §17).
#include <string>
#include <string_view>

#include "kernels/strict_dot.h"

namespace dsv4 {

// §16.2: which index keys a ratio-2 kv-source indexer scores in a call where its compressor
// completed no group.
enum class IndexKeys {
  kOwn,        // default: always the layer's own key cache (the evident intent)
  kReference,  // the reference: one shared index_k slot, written only when a latent exists
};

// §16.4: the attention slot list.
enum class AttnSlots {
  kCompact,    // default: visible window positions then selected rows, ascending, no holes
  kReference,  // the reference's per-mode lists (prefill at 0 and decode only)
};

struct ForwardOptions {
  // kStrict: every result correctly rounded (double accumulation), bit-identical to the oracle.
  // kFast: the linear layers on the bf16 kernels of kernels/bf16_gemm.h (one fixed fp32
  // accumulation order on every instruction set); the CLI's default.
  kernels::Numerics numerics = kernels::Numerics::kStrict;
  IndexKeys index_keys = IndexKeys::kOwn;
  AttnSlots attn_slots = AttnSlots::kCompact;
};

// Parsers for the CLI spellings ("strict"/"fast", "own"/"reference", "compact"/"reference");
// throw dsv4::Error naming the accepted values.
kernels::Numerics parse_numerics(std::string_view s);
IndexKeys parse_index_keys(std::string_view s);
AttnSlots parse_attn_slots(std::string_view s);
std::string_view numerics_name(kernels::Numerics n);
std::string_view index_keys_name(IndexKeys k);
std::string_view attn_slots_name(AttnSlots a);

}  // namespace dsv4
