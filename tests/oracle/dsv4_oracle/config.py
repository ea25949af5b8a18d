"""Model configuration (spec §1.1) and layer roles (spec §1.3, §6.5–6.7).

``load_config(dir)`` reads the inference-style flat ``config.json`` that model.py consumes
(``DIR/inference/config.json`` if present, else ``DIR/config.json``, the engine's order). Absent
keys take the released values of §1.1; the ModelArgs fields config.json never carries take the
reference's code defaults (max_batch_size 4, max_seq_len 4096, temperature 1, gate_temp 1,
norm_topk_prob True).
"""

import json
import os
from dataclasses import dataclass

from .safetensors import no_duplicates

# Released inference/config.json (spec §1.1) plus the ModelArgs code defaults.
DEFAULTS = {
    "vocab_size": 129280,
    "dim": 5120,
    "moe_inter_dim": 2304,
    "n_layers": 40,
    "n_mtp_layers": 3,
    "n_heads": 64,
    "n_routed_experts": 384,
    "n_shared_experts": 1,
    "n_activated_experts": 6,
    "score_func": "sqrtsoftplus",
    "route_scale": 1.5,
    "swiglu_limit": 10.0,
    "q_lora_rank": 1280,
    "head_dim": 512,
    "rope_head_dim": 64,
    "norm_eps": 1e-20,
    "o_groups": 8,
    "o_lora_rank": 1024,
    "window_size": 128,
    "kv_source_layers": [2, 8, 14, 20],
    "index_source_layers": [2, 8, 14, 20, 24, 28, 32, 36],
    "original_seq_len": 65536,
    "rope_theta": 10000.0,
    "rope_factor": 16.0,
    "beta_fast": 32.0,
    "beta_slow": 1.0,
    "index_n_heads": 32,
    "index_head_dim": 128,
    "index_topk": 512,
    "candidate_source_layer": 20,
    "candidate_topk_blocks": 2048,
    "candidate_block_size": 8,
    "hc_mult": 4,
    "hc_sinkhorn_iters": 20,
    "hc_eps": 1e-6,
    "compress_rope_theta": 160000.0,
    "compress_ratios": [0, 0] + [2] * 18 + [1] * 20 + [0, 0, 0],
    "dtype": "fp8",
    "expert_dtype": "fp4",
    "dspark_block_size": 5,
    "dspark_noise_token_id": 128799,
    "dspark_target_layer_ids": [37, 38, 39],
    "dspark_markov_rank": 256,
    "dspark_n_routed_experts": 128,
    "dspark_n_activated_experts": 3,
    "engram_layer_ids": [1, 14],
    "engram_vocab_size": 16000000,
    "engram_num_embeddings": [384006168, 384016682],
    "engram_max_ngram_size": 4,
    "engram_pad_id": 2,
    "engram_compressed_vocab_size": 99092,
    "engram_n_heads": 8,
    "engram_head_dim": 256,
    "vision_n_layers": 32,
    "vision_dim": 1024,
    "vision_n_heads": 16,
    "vision_inter_dim": 2816,
    "vision_patch_size": 14,
    "vision_downsample_ratio": 3,
    "vision_max_n_token": 1024,
    "vision_min_pixels": 295936,
    "vision_max_wh_ratio": None,
    "image_token_id": 129264,
    "vision_rope_theta": 10000.0,
    # ModelArgs fields not in config.json (code defaults, §1.1)
    "max_batch_size": 4,
    "max_seq_len": 4096,
    "gate_temp": 1.0,
    "norm_topk_prob": True,
    "temperature": 1.0,
}


class Config:
    """One attribute per config field (names of config.json / ModelArgs). Unknown keys of the
    file are kept in ``unknown_keys`` (and as attributes) so nothing is dropped silently."""

    def __init__(self, values=None, source="defaults"):
        merged = json.loads(json.dumps(DEFAULTS))  # deep copy
        self.unknown_keys = []
        for k, v in (values or {}).items():
            if k not in DEFAULTS:
                self.unknown_keys.append(k)
            merged[k] = v
        for k, v in merged.items():
            setattr(self, k, v)
        self.source = source

    @property
    def total_layers(self):
        return int(self.n_layers) + int(self.n_mtp_layers)

    def to_dict(self):
        return {k: getattr(self, k) for k in DEFAULTS}

    def __repr__(self):
        return f"Config({self.source})"


def load_config(path):
    """Config of a model directory (or of a config.json file). Only the inference-style flat
    file is read; a transformers-style file (text_config) is rejected with a clear message."""
    if os.path.isdir(path):
        p = os.path.join(path, "inference", "config.json")
        if not os.path.exists(p):
            p = os.path.join(path, "config.json")
    else:
        p = path
    if not os.path.exists(p):
        raise ValueError(f"model directory '{path}' has no config.json (nor inference/config.json)")
    with open(p, "rb") as f:
        try:
            j = json.loads(f.read().decode("utf-8"), object_pairs_hook=no_duplicates)
        except ValueError as e:
            raise ValueError(f"config '{p}' is not valid JSON: {e}") from None
    if not isinstance(j, dict):
        raise ValueError(f"config '{p}': expected a JSON object at the top level")
    if "text_config" in j or "model_type" in j:
        raise ValueError(f"config '{p}' is transformers-style; the oracle reads only the "
                         f"inference-style config.json (spec §1.1)")
    cfg = Config(j, source=p)
    if len(cfg.compress_ratios) != cfg.total_layers:
        raise ValueError(f"config '{p}': compress_ratios has {len(cfg.compress_ratios)} entries, "
                         f"expected n_layers + n_mtp_layers = {cfg.total_layers}")
    return cfg


@dataclass
class Role:
    """What a layer does (spec §1.3) — the fields of the engine's LayerRole. Layer references
    are layer ids, −1 meaning none."""
    id: int
    is_mtp: bool
    mtp_stage: int
    ratio: int
    kv_source: bool
    index_source: bool
    owns_index_keys: bool
    candidate_source: bool
    uses_candidates: bool
    kv_from: int
    topk_from: int
    index_keys_from: int
    engram_index: int
    dspark_target: bool
    yarn: bool
    rope_base: float

    @property
    def prefix(self):
        return f"mtp.{self.mtp_stage}." if self.is_mtp else f"layers.{self.id}."


def layer_roles(cfg):
    """Roles of every layer, backbone then DSpark stages (spec §1.3).

    The reference resolves sources by running layers in order over shared slots (§6.6); the same
    resolution, made explicit:
      * kv_from: the nearest kv source at or before the layer (its compressed rows);
      * topk_from: the nearest index source since that kv source (a new kv source starts a new
        run of compressed rows, so earlier top-k lists no longer apply);
      * index_keys_from (index sources only): the layer itself for kv sources, else kv_from;
      * uses_candidates: an index source that is not a kv source, after the candidate source,
        reading the same kv source's rows as the candidate source;
      * RoPE: ratio > 0 -> compress_rope_theta with YaRN; ratio 0 (MTP too) -> rope_theta plain.
    Compressors and indexers exist only in backbone layers; DSpark stages are window-only.
    """
    n = int(cfg.n_layers)
    ratios = list(cfg.compress_ratios)
    kv_src = set(cfg.kv_source_layers)
    idx_src = set(cfg.index_source_layers)
    cand = int(cfg.candidate_source_layer) if cfg.candidate_source_layer is not None else -1
    engram = list(cfg.engram_layer_ids or [])
    targets = set(cfg.dspark_target_layer_ids or [])
    roles = []
    last_kv = -1          # nearest kv source so far
    last_index = -1       # nearest index source since last_kv
    cand_kv = None        # kv_from of the candidate source
    for i in range(cfg.total_layers):
        ratio = int(ratios[i]) if i < len(ratios) else 0
        mtp = i >= n
        r = Role(id=i, is_mtp=mtp, mtp_stage=(i - n) if mtp else -1, ratio=ratio,
                 kv_source=False, index_source=False, owns_index_keys=False,
                 candidate_source=False, uses_candidates=False, kv_from=-1, topk_from=-1,
                 index_keys_from=-1, engram_index=-1, dspark_target=False, yarn=ratio > 0,
                 rope_base=float(cfg.compress_rope_theta if ratio > 0 else cfg.rope_theta))
        if not mtp:
            r.kv_source = ratio > 0 and i in kv_src
            r.index_source = ratio > 0 and i in idx_src
            r.owns_index_keys = r.kv_source
            r.candidate_source = i == cand
            r.engram_index = engram.index(i) if i in engram else -1
            r.dspark_target = int(cfg.n_mtp_layers) > 0 and i in targets
            if r.kv_source:
                last_kv, last_index = i, -1
            if ratio > 0:
                r.kv_from = last_kv
                if r.index_source:
                    last_index = i
                    r.index_keys_from = i if r.owns_index_keys else last_kv
                r.topk_from = last_index
                if r.candidate_source:
                    cand_kv = last_kv
                r.uses_candidates = (r.index_source and not r.kv_source and cand >= 0
                                     and i > cand and cand_kv is not None and last_kv == cand_kv)
        roles.append(r)
    return roles
