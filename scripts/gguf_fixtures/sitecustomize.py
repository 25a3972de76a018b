# Debian's torch (1.13) predates the float8 and wide unsigned dtypes that llama.cpp's converter
# names in its dtype tables; the tiny checkpoints never use them, so placeholders suffice.
import torch

for _name in ("float8_e4m3fn", "float8_e5m2", "uint16", "uint32", "uint64"):
    if not hasattr(torch, _name):
        setattr(torch, _name, torch.uint8 if _name.startswith("float8") else torch.int64)
