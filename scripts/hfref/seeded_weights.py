"""Seeded golden weights: every tensor of a golden model comes from a small integer PRNG, so that
the checkpoint can be left out of the repository and regenerated bit for bit by qvl's C++ code
(src/model/seeded_weights.cpp) from the spec file this module writes (seeded_weights.json).

Element j (0-based, row-major) of tensor NAME is
    z = splitmix64 output j of the state fnv1a64(NAME) ^ seed
      (state + (j + 1) * 0x9E3779B97F4A7C15, then the splitmix64 finaliser)
    k = (z mod (2 * amplitude + 1)) - amplitude          (an integer in [-amplitude, amplitude])
    value = bf16_rne(float32(base) + float32(k) * 2^scale_log2)
and rows outside `nonzero_rows` (vocabulary tables) are zero. With the amplitudes and scales
chosen here every value is exact in float32 and in bf16, so the rounding is the identity.

Scales follow the widths like a real checkpoint (std ~ gain / sqrt(fan_in)) so that activations
stay O(1): attention is neither uniform nor one-hot, the LM head's logits spread over several
units (clear greedy margins, next-token distributions that are not flat) and a MoE router's
logits are units apart (its top-k choice is rarely a near-tie).
"""
import hashlib
import json
import math
import struct

import numpy as np
import torch

GAMMA = 0x9E3779B97F4A7C15
MIX1 = 0xBF58476D1CE4E5B9
MIX2 = 0x94D049BB133111EB
MATRIX_AMPLITUDE = 15  # k in [-15, 15]: std of k is sqrt(15 * 16 / 3) = 8.94
STD_OF_K = math.sqrt(MATRIX_AMPLITUDE * (MATRIX_AMPLITUDE + 1) / 3)


def fnv1a64(text):
    h = 0xCBF29CE484222325
    for b in text.encode("utf-8"):
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def stream_ints(name, seed, count, amplitude):
    """k for elements 0..count-1 of NAME (int64)."""
    u64 = np.uint64
    state = u64(fnv1a64(name) ^ seed)
    with np.errstate(over="ignore"):
        z = state + np.arange(1, count + 1, dtype=np.uint64) * u64(GAMMA)
        z = (z ^ (z >> u64(30))) * u64(MIX1)
        z = (z ^ (z >> u64(27))) * u64(MIX2)
        z = z ^ (z >> u64(31))
    return (z % u64(2 * amplitude + 1)).astype(np.int64) - amplitude


def rule_values(name, seed, shape, rule):
    """float32 values of the rule, rounded to bf16 (as a bf16 torch tensor)."""
    n = int(np.prod(shape))
    k = stream_ints(name, seed, n, rule["amplitude"])
    v = np.float32(rule["base"]) + k.astype(np.float32) * np.float32(2.0 ** rule["scale_log2"])
    t = torch.from_numpy(v).reshape(shape).to(torch.bfloat16)
    # The rules are chosen so that bf16 holds every value exactly (the rounding is the identity).
    assert torch.equal(t.float(), torch.from_numpy(v).reshape(shape)), f"{name}: a value is not exact in bf16"
    if "nonzero_rows" in rule:
        keep = torch.zeros(shape[0], dtype=torch.bool)
        for a, b in rule["nonzero_rows"]:
            keep[a:b] = True
        t[~keep] = 0
    return t


def _matrix_rule(std):
    # The power of two nearest (in log scale) to std / std(k).
    return dict(base=0.0, amplitude=MATRIX_AMPLITUDE, scale_log2=int(round(math.log2(std / STD_OF_K))))


def rule_for(name, shape):
    """Fill rule of a parameter from its name and shape (HF names of Qwen3-VL and Qwen3-VL-MoE)."""
    if len(shape) == 1:
        if name.endswith(".bias"):  # Linear, Conv3d and LayerNorm biases: small offsets
            return dict(base=0.0, amplitude=7, scale_log2=-7)
        # RMSNorm / LayerNorm weights: 1 +- up to 0.19, so a missing or misplaced norm shows.
        return dict(base=1.0, amplitude=6, scale_log2=-5)
    if name.endswith("embed_tokens.weight"):
        return _matrix_rule(1.0)  # token embeddings of unit scale, like the image features
    if name.endswith("pos_embed.weight"):
        return _matrix_rule(0.5)  # learned vision positions, about the patch embedding's size
    if name == "lm_head.weight":
        # Logits ~ N(0, 4^2) over the kept rows: greedy choices a clear margin apart, and next-token
        # distributions that are not flat (the ~148k zeroed rows all have logit 0: with unit-scale
        # logits they would hold most of the probability).
        return _matrix_rule(4.0 / math.sqrt(shape[1]))
    if name.endswith("mlp.gate.weight"):
        # MoE router: logits several units apart, so the top-k choice is not a near-tie
        return _matrix_rule(4.0 / math.sqrt(shape[1]))
    if name.endswith("mlp.experts.gate_up_proj") or name.endswith("mlp.experts.down_proj"):
        return _matrix_rule(1.0 / math.sqrt(shape[1]))  # [experts, in, out]
    # nn.Linear [out, in] and Conv3d [out, in, t, h, w]: fan_in = everything after dim 0
    return _matrix_rule(1.0 / math.sqrt(int(np.prod(shape[1:]))))


def fill_model(model, seed, nonzero_rows):
    """Overwrites every parameter of MODEL with its seeded values; NONZERO_ROWS maps a parameter
    name to the [begin, end) row ranges that keep their values (the others become zero).
    Returns {name: rule}."""
    rules = {}
    with torch.no_grad():
        for name, p in model.named_parameters():
            rule = rule_for(name, list(p.shape))
            if name in nonzero_rows:
                rule["nonzero_rows"] = nonzero_rows[name]
            p.data.copy_(rule_values(name, seed, list(p.shape), rule).to(p.dtype))
            rules[name] = rule
    return rules


def row_ranges(rows):
    """Sorted [begin, end) ranges covering the given row ids."""
    out = []
    for r in sorted(set(rows)):
        if out and out[-1][1] == r:
            out[-1][1] = r + 1
        else:
            out.append([r, r + 1])
    return out


def _read_header(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return json.loads(f.read(n).decode("utf-8"))


def _serialise(spec):
    """The bytes the spec describes, written as the safetensors saver writes them (header with
    __metadata__ first, tensors in file order, compact JSON padded with spaces to 8 bytes)."""
    header = {"__metadata__": spec["metadata"]}
    blobs, off = [], 0
    for t in spec["tensors"]:
        b = rule_values(t["name"], spec["seed"], t["shape"], t).view(torch.int16).numpy().astype("<i2").tobytes()
        header[t["name"]] = {"dtype": "BF16", "shape": t["shape"], "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * ((8 - len(h) % 8) % 8)
    return struct.pack("<Q", len(h)) + h + b"".join(blobs)


def write_spec(model_path, rules, seed, spec_path):
    """Writes the spec of the saved MODEL_PATH (its tensors in file order, each with its rule),
    checks that the spec regenerates the file byte for byte and returns the spec."""
    header = _read_header(model_path)
    metadata = header.pop("__metadata__", {})
    names = sorted(header, key=lambda k: header[k]["data_offsets"][0])
    # (a tied head is one parameter, saved once under the embedding's name)
    assert set(names) == set(rules), set(names) ^ set(rules)
    with open(model_path, "rb") as f:
        data = f.read()
    spec = dict(
        format="qvl seeded weights 1",
        description="model.safetensors of this folder, regenerated bit for bit by src/model/seeded_weights.cpp "
                    "(scripts/hfref/seeded_weights.py has the rule)",
        rule="value[j] = bf16_rne(float32(base) + float32(k) * 2^scale_log2), k = (splitmix64 output j of the "
             "state fnv1a64(name) ^ seed) mod (2*amplitude+1) - amplitude; output j of state s is the splitmix64 "
             "finaliser of s + (j+1)*0x9E3779B97F4A7C15; j counts elements row-major; rows outside nonzero_rows are 0",
        file="model.safetensors", bytes=len(data), sha256=hashlib.sha256(data).hexdigest(),
        seed=seed, metadata=metadata, tensors=[])
    for n in names:
        h = header[n]
        assert h["dtype"] == "BF16", (n, h["dtype"])
        spec["tensors"].append(dict(name=n, dtype="BF16", shape=h["shape"], **rules[n]))
    assert _serialise(spec) == data, "the spec does not regenerate model.safetensors"
    with open(spec_path, "w") as f:
        f.write(_dump_spec(spec))
    return spec


def _dump_spec(spec):
    """One tensor per line: a reviewable diff when a rule changes."""
    tensors = spec["tensors"]
    head = json.dumps({k: v for k, v in spec.items() if k != "tensors"}, indent=1)
    lines = [json.dumps(t, separators=(",", ":")) for t in tensors]
    return head[:-2] + ',\n "tensors": [\n  ' + ",\n  ".join(lines) + "\n ]\n}\n"
