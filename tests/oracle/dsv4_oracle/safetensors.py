"""An independent safetensors reader (the checkpoint format of spec §3).

File layout: an 8-byte little-endian unsigned header length N, N bytes of UTF-8 JSON (an object:
tensor name -> {dtype, shape, data_offsets: [begin, end]}, plus an optional "__metadata__" object
of strings), then the data; offsets are relative to the first data byte. A sharded model has
``model.safetensors.index.json`` whose "weight_map" names the file of every tensor.

Arrays are memory-mapped read-only and returned in their raw storage dtype: BF16 as uint16 bit
patterns, F32 as float32, F8_E4M3 / F8_E8M0 / I8 (packed FP4) as uint8 codes.
Every check failure raises ValueError naming the file and the tensor.
"""

import json
import os

import numpy as np

# storage dtype -> (numpy dtype of the returned array, bytes per element)
DTYPES = {
    "BF16": (np.dtype("<u2"), 2),
    "F16": (np.dtype("<f2"), 2),
    "F32": (np.dtype("<f4"), 4),
    "F64": (np.dtype("<f8"), 8),
    "F8_E4M3": (np.dtype("u1"), 1),
    "F8_E8M0": (np.dtype("u1"), 1),
    "I8": (np.dtype("u1"), 1),
    "U8": (np.dtype("u1"), 1),
    "BOOL": (np.dtype("u1"), 1),
    "I16": (np.dtype("<i2"), 2),
    "I32": (np.dtype("<i4"), 4),
    "I64": (np.dtype("<i8"), 8),
}

INDEX_NAME = "model.safetensors.index.json"
SINGLE_NAME = "model.safetensors"


def no_duplicates(pairs):
    """json object_pairs_hook that rejects a key given twice (json would keep the last one)."""
    d = {}
    for k, v in pairs:
        if k in d:
            raise ValueError(f"duplicate key {k!r}")
        d[k] = v
    return d


def read_header(path):
    """Parse and check the header of one file. Returns (entries, data_start, data_len) with
    entries: name -> (dtype, shape tuple, begin, end) in data-relative byte offsets."""
    size = os.path.getsize(path)
    if size < 8:
        raise ValueError(f"{path}: file of {size} bytes is too short for a safetensors header")
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        if n > size - 8:
            raise ValueError(f"{path}: header length {n} exceeds the file ({size} bytes)")
        raw = f.read(n)
    try:
        header = json.loads(raw.decode("utf-8"), object_pairs_hook=no_duplicates)
    except (UnicodeDecodeError, ValueError) as e:
        raise ValueError(f"{path}: header is not valid UTF-8 JSON: {e}") from None
    if not isinstance(header, dict):
        raise ValueError(f"{path}: header is not a JSON object")
    data_start = 8 + n
    data_len = size - data_start
    entries = {}
    for name, info in header.items():
        if name == "__metadata__":
            if not isinstance(info, dict) or not all(isinstance(v, str) for v in info.values()):
                raise ValueError(f"{path}: __metadata__ must be an object of strings")
            continue
        where = f"{path}: tensor '{name}'"
        if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"}:
            raise ValueError(f"{where}: entry must have exactly dtype, shape, data_offsets")
        dt = info["dtype"]
        if dt not in DTYPES:
            raise ValueError(f"{where}: unknown dtype {dt!r}")
        shape = info["shape"]
        if not isinstance(shape, list) or not all(
                isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
            raise ValueError(f"{where}: shape {shape!r} is not a list of non-negative integers")
        offs = info["data_offsets"]
        if (not isinstance(offs, list) or len(offs) != 2 or
                not all(isinstance(o, int) and not isinstance(o, bool) for o in offs)):
            raise ValueError(f"{where}: data_offsets {offs!r} is not [begin, end]")
        begin, end = offs
        if not 0 <= begin <= end:
            raise ValueError(f"{where}: data_offsets [{begin}, {end}] are not ordered")
        if end > data_len:
            raise ValueError(f"{where}: data_offsets end {end} beyond the data ({data_len} bytes)")
        nbytes = DTYPES[dt][1] * int(np.prod(shape, dtype=np.int64)) if shape else DTYPES[dt][1]
        if end - begin != nbytes:
            raise ValueError(f"{where}: {dt} {shape} needs {nbytes} bytes, "
                             f"data_offsets give {end - begin}")
        entries[name] = (dt, tuple(shape), begin, end)
    spans = sorted((b, e, name) for name, (_, _, b, e) in entries.items() if e > b)
    for (b0, e0, n0), (b1, e1, n1) in zip(spans, spans[1:]):
        if b1 < e0:
            raise ValueError(f"{path}: tensors '{n0}' [{b0}, {e0}) and '{n1}' [{b1}, {e1}) overlap")
    return entries, data_start, data_len


def load_file(path):
    """All tensors of one file: name -> read-only memory-mapped array (raw storage dtype)."""
    entries, data_start, _ = read_header(path)
    out = {}
    if not entries:
        return out
    mm = np.memmap(path, dtype=np.uint8, mode="r")
    for name, (dt, shape, b, e) in entries.items():
        npdt = DTYPES[dt][0]
        raw = mm[data_start + b:data_start + e]
        out[name] = raw.view(npdt).reshape(shape)
    return out


def load_model(model_dir):
    """Every tensor of a model directory: sharded (model.safetensors.index.json) or a single
    model.safetensors. Checks that the index names each tensor once, that each tensor is in the
    shard the index names, and that no shard holds a tensor the index does not list or another
    shard also holds."""
    index = os.path.join(model_dir, INDEX_NAME)
    if not os.path.exists(index):
        single = os.path.join(model_dir, SINGLE_NAME)
        if os.path.exists(single):
            return load_file(single)
        raise ValueError(f"{model_dir}: neither {INDEX_NAME} nor {SINGLE_NAME}")
    with open(index, "rb") as f:
        try:
            j = json.loads(f.read().decode("utf-8"), object_pairs_hook=no_duplicates)
        except (UnicodeDecodeError, ValueError) as e:
            raise ValueError(f"{index}: not valid JSON: {e}") from None
    wm = j.get("weight_map") if isinstance(j, dict) else None
    if not isinstance(wm, dict) or not all(isinstance(v, str) for v in wm.values()):
        raise ValueError(f"{index}: 'weight_map' must be an object of tensor -> file name")
    out = {}
    for shard in sorted(set(wm.values())):
        if os.path.basename(shard) != shard:
            raise ValueError(f"{index}: shard name {shard!r} is not a plain file name")
        p = os.path.join(model_dir, shard)
        if not os.path.exists(p):
            raise ValueError(f"{index}: shard '{shard}' does not exist")
        tensors = load_file(p)
        for name, arr in tensors.items():
            if name not in wm:
                raise ValueError(f"{p}: tensor '{name}' is not in the index's weight_map")
            if wm[name] != shard:
                raise ValueError(f"{p}: tensor '{name}' is mapped to '{wm[name]}' by the index")
            if name in out:
                raise ValueError(f"{p}: tensor '{name}' appears in two shards")
            out[name] = arr
    missing = [n for n in wm if n not in out]
    if missing:
        raise ValueError(f"{index}: tensor '{missing[0]}' (and {len(missing) - 1} more) missing "
                         f"from shard '{wm[missing[0]]}'")
    return out


def tensor_dtypes(model_dir):
    """name -> storage dtype string (BF16, F32, ...) for every tensor of a model directory."""
    index = os.path.join(model_dir, INDEX_NAME)
    if os.path.exists(index):
        with open(index, "rb") as f:
            shards = sorted(set(json.loads(f.read().decode("utf-8"))["weight_map"].values()))
        files = [os.path.join(model_dir, s) for s in shards]
    else:
        files = [os.path.join(model_dir, SINGLE_NAME)]
    out = {}
    for p in files:
        for name, (dt, _, _, _) in read_header(p)[0].items():
            out[name] = dt
    return out
