#!/usr/bin/env python3
"""Video golden cases for the shared tiny model A (../shared/testdata/qwen3vl-tiny-a), made by the
unmodified transformers v4.57.6 source: Qwen3VLProcessor with the official Qwen3VLVideoProcessor
(frames handed over as uint8 arrays with their VideoMetadata: frame count and fps, so no video
decoder is involved), get_rope_index, get_video_features, the full forward and generate.

The model is loaded from the shared folder as it is (not rebuilt), so the weights are the ones
every other tiny-a test uses; the manifest names that folder and its model's SHA-256.
Run through scripts/hfref/make_video_goldens.sh.
"""
import argparse
import hashlib
import json
import os
import re
import shutil
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("--hfref", required=True, help="../shared/hfref (bootstrap.py, hf_shims.py)")
ap.add_argument("--transformers-src", required=True)
ap.add_argument("--hf-hub-src", required=True)
ap.add_argument("--model", required=True, help="the tiny-a golden folder (model + configs)")
ap.add_argument("--tokenizer-json", required=True)
ap.add_argument("--chat-template", required=True)
ap.add_argument("--workdir", required=True)
ap.add_argument("--out", required=True)
ap.add_argument("--model-ref", required=True, help="the model folder as the manifest names it")
ap.add_argument("--transformers-commit", default="")
args = ap.parse_args()

sys.path.insert(0, args.hfref)
import bootstrap  # noqa: E402

os.makedirs(args.workdir, exist_ok=True)
HUB_VERSION = bootstrap.setup(args.transformers_src, args.hf_hub_src, args.workdir)

import numpy as np  # noqa: E402
import torch  # noqa: E402
from PIL import Image  # noqa: E402

import transformers  # noqa: E402
from transformers import (  # noqa: E402
    GenerationConfig,
    Qwen2Tokenizer,
    Qwen2VLImageProcessor,
    Qwen3VLForConditionalGeneration,
    Qwen3VLProcessor,
)
from transformers.image_transforms import resize as hf_resize  # noqa: E402
from transformers.image_utils import ChannelDimension, PILImageResampling  # noqa: E402
from transformers.processing_utils import ProcessorMixin  # noqa: E402
from transformers.video_processing_utils import BaseVideoProcessor  # noqa: E402
from transformers.video_utils import VideoMetadata  # noqa: E402
import hf_shims  # noqa: E402

hf_shims.patch_after_import()
TV_F = hf_shims.install_torchvision_v2_functional()
from transformers.models.qwen3_vl.video_processing_qwen3_vl import Qwen3VLVideoProcessor  # noqa: E402
from safetensors.torch import save_file  # noqa: E402

torch.set_grad_enabled(False)
IMAGE_PAD, VIDEO_PAD, VSTART, VEND, IM_END, EOT = 151655, 151656, 151652, 151653, 151645, 151643


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


# ------------------------------------------------------------------------------------------------
# synthetic clips: a gradient whose colours drift with the frame number, a checker texture and a
# square that moves one step per frame (frame k is recognisable, resampling has edges to work on)
# ------------------------------------------------------------------------------------------------
def make_clip(n, w, h, seed):
    rng = np.random.RandomState(seed)
    c0, c1 = rng.randint(0, 256, 3), rng.randint(0, 256, 3)
    yy, xx = np.mgrid[0:h, 0:w]
    frames = np.empty((n, h, w, 3), np.uint8)
    side = max(6, min(w, h) // 4)
    for k in range(n):
        t = (xx / max(1, w - 1) + k / max(1, n - 1)) / 2.0
        f = c0[None, None, :] * (1 - t[..., None]) + c1[None, None, :] * t[..., None]
        checker = ((yy // 8 + xx // 8) % 2 == 0)
        f = np.where(checker[..., None], f * 0.85, f)
        x0 = (k * max(1, (w - side) // max(1, n - 1))) % max(1, w - side)
        y0 = (h - side) * k // max(1, n - 1)
        f[y0:y0 + side, x0:x0 + side] = (255 - 8 * (k % 16), 40 + 10 * (k % 20), 30 + 7 * k % 200)
        frames[k] = np.clip(np.round(f), 0, 255).astype(np.uint8)
    return frames


def make_picture(w, h):
    yy, xx = np.mgrid[0:h, 0:w]
    arr = np.stack([xx * 255 // max(1, w - 1), yy * 255 // max(1, h - 1), np.full_like(xx, 128)], -1)
    arr[h // 4:3 * h // 4, w // 5:w // 2] = (220, 30, 30)
    return Image.fromarray(arr.astype(np.uint8), "RGB")


def user(*parts):
    content = []
    for p in parts:
        content.append({"type": p} if p in ("image", "video") else {"type": "text", "text": p})
    return [{"role": "user", "content": content}]


# Each video: n frames of w x h at fps (the metadata), and the per-request processor settings.
CASES = [
    dict(name="vi_short_clip", images=[], videos=[dict(n=20, fps=10.0, w=128, h=96, seed=1, kwargs={})],
         messages=user("video", "What happens in this clip?")),
    # 15 frames at 6 fps: 5 sampled (linspace rounds 3.5 and 10.5 half to even), padded to 6.
    dict(name="vii_odd_frames", images=[], videos=[dict(n=15, fps=6.0, w=80, h=112, seed=2, kwargs={})],
         messages=user("video", "Describe the motion.")),
    # Portrait, sampled at 4 frames per second instead of 2 (a per-request fps).
    dict(name="viii_portrait_fps4", images=[], videos=[dict(n=24, fps=8.0, w=72, h=160, seed=3,
                                                           kwargs=dict(fps=4))],
         messages=user("video", "Where does the square go?")),
    # A total-pixel budget (size.longest_edge) that shrinks every frame.
    dict(name="ix_pixel_budget", images=[], videos=[dict(n=12, fps=4.0, w=160, h=120, seed=4,
                                                        kwargs=dict(size={"shortest_edge": 4096,
                                                                          "longest_edge": 40960}))],
         messages=user("video", "How many squares are there?")),
    # A picture, then a video, with text around both (DeepStack rows of both kinds interleave).
    dict(name="x_video_image_text", images=[("vx_picture_96x64.png", 96, 64)],
         videos=[dict(n=8, fps=4.0, w=64, h=64, seed=5, kwargs=dict(max_frames=6))],
         messages=[{"role": "system", "content": "You compare pictures and clips."}]
         + user("Compare", "image", "with", "video", "What moved?")),
]


def make_slow_tokenizer(tokdir):
    os.makedirs(tokdir, exist_ok=True)
    tj = json.load(open(args.tokenizer_json, encoding="utf-8"))
    with open(os.path.join(tokdir, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(tj["model"]["vocab"], f, ensure_ascii=False)
    with open(os.path.join(tokdir, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n")
        for m in tj["model"]["merges"]:
            f.write((m if isinstance(m, str) else " ".join(m)) + "\n")
    shutil.copy(os.path.join(args.model, "tokenizer_config.json"), os.path.join(tokdir, "tokenizer_config.json"))
    tok = Qwen2Tokenizer.from_pretrained(tokdir)
    assert len(tok) == 151669, len(tok)
    return tok


def make_processor(tokenizer, chat_template):
    pp = json.load(open(os.path.join(args.model, "preprocessor_config.json")))
    ip = Qwen2VLImageProcessor(size=dict(pp["size"]), min_pixels=pp["size"]["shortest_edge"],
                               max_pixels=pp["size"]["longest_edge"], patch_size=pp["patch_size"],
                               temporal_patch_size=pp["temporal_patch_size"], merge_size=pp["merge_size"],
                               image_mean=pp["image_mean"], image_std=pp["image_std"])
    vp_cfg = json.load(open(os.path.join(args.model, "video_preprocessor_config.json")))
    vp_cfg = {k: v for k, v in vp_cfg.items() if k not in ("processor_class", "video_processor_type")}
    vp = Qwen3VLVideoProcessor(**vp_cfg)
    # With torchvision hidden from transformers (Debian's is too old), `transformers.BaseVideoProcessor`
    # is a dummy, so the processor's class check would refuse the real video processor.
    orig_check = ProcessorMixin.check_argument_for_proper_class

    def check(self, name, arg):
        if name == "video_processor" and isinstance(arg, BaseVideoProcessor):
            return type(arg)
        return orig_check(self, name, arg)

    ProcessorMixin.check_argument_for_proper_class = check
    return Qwen3VLProcessor(image_processor=ip, tokenizer=tokenizer, video_processor=vp,
                            chat_template=chat_template), ip, vp


def video_pixel_values(resized, grid):
    """pixel_values_videos of one video re-derived from its resized uint8 frames [T, H, W, 3]:
    fused rescale+normalise in float32 ((u8 - 127.5) / 127.5), last frame repeated to an even
    count, patchified with rows (t, block row, block col, row, col), columns (c, frame, y, x)."""
    t, gh, gw = grid
    x = torch.from_numpy(resized).permute(0, 3, 1, 2).to(torch.float32)
    x = (x - 127.5) / 127.5
    if x.shape[0] % 2:
        x = torch.cat([x, x[-1:]], 0)
    x = x.view(t, 2, 3, gh // 2, 2, 16, gw // 2, 2, 16).permute(0, 3, 6, 4, 7, 2, 1, 5, 8)
    return x.reshape(t * gh * gw, 3 * 2 * 16 * 16)


def main():
    t0 = time.time()
    out = args.out
    for d in ("", "cases", "images"):
        os.makedirs(os.path.join(out, d), exist_ok=True)
    chat_template = open(args.chat_template).read()
    tokenizer = make_slow_tokenizer(os.path.join(args.workdir, "slow_tokenizer"))
    processor, ip, vp = make_processor(tokenizer, chat_template)
    model = Qwen3VLForConditionalGeneration.from_pretrained(args.model, dtype=torch.float32,
                                                            attn_implementation="eager").eval()
    vis = model.model.visual
    manifest = dict(
        description="Video cases of the Qwen3-VL tiny random model A: golden data from the official HF "
                    "implementation (Qwen3VLVideoProcessor on frames given as uint8 arrays with metadata)",
        model_folder=args.model_ref, model_sha256=sha256(os.path.join(args.model, "model.safetensors")),
        transformers_version=transformers.__version__, transformers_commit=args.transformers_commit,
        torch_version=torch.__version__, numpy_version=np.__version__, huggingface_hub_version=HUB_VERSION,
        compute_dtype="float32", attn_implementation="eager",
        video_processor=dict(fps=vp.fps, min_frames=vp.min_frames, max_frames=vp.max_frames,
                             min_pixels=vp.size["shortest_edge"], max_pixels=vp.size["longest_edge"],
                             resize="torchvision v2 cast path: float32 antialiased bicubic, clamp, round "
                                    "(hf_shims.install_torchvision_v2_functional)",
                             normalize="fused float32 (u8 - 127.5) / 127.5"),
        generation=dict(max_new_tokens=16, do_sample=False, use_cache=True, eos_token_id=[IM_END, EOT]),
        cases=[])

    for case in CASES:
        name = case["name"]
        print(f"=== case {name}", flush=True)
        tensors, keys = {}, {}

        def put(k, v, desc):
            v = v.detach().cpu().contiguous() if isinstance(v, torch.Tensor) else torch.from_numpy(np.ascontiguousarray(v))
            tensors[k] = v
            keys[k] = dict(shape=list(v.shape), dtype=str(v.dtype).replace("torch.", ""), desc=desc)

        pil_images, image_meta = [], []
        for fn, w, h in case["images"]:
            p = os.path.join(out, "images", fn)
            make_picture(w, h).save(p, format="PNG", optimize=False)
            im = Image.open(p)
            im.load()
            pil_images.append(im.convert("RGB"))
            image_meta.append(dict(file=f"images/{fn}", width=w, height=h, sha256=sha256(p)))
        clips, metas, video_meta = [], [], []
        for vi, v in enumerate(case["videos"]):
            clips.append(make_clip(v["n"], v["w"], v["h"], v["seed"]))
            metas.append(VideoMetadata(total_num_frames=v["n"], fps=v["fps"], width=v["w"], height=v["h"],
                                       duration=v["n"] / v["fps"]))
        vkw = dict(case["videos"][0]["kwargs"]) if case["videos"] else {}
        text = processor.apply_chat_template(case["messages"], tokenize=False, add_generation_prompt=True)
        inputs = processor(text=[text], images=pil_images or None, videos=clips, return_tensors="pt",
                           videos_kwargs=dict(video_metadata=metas, do_sample_frames=True, **vkw))
        input_ids = inputs["input_ids"]
        L = input_ids.shape[1]
        vgrid, pvv = inputs["video_grid_thw"], inputs["pixel_values_videos"]
        igrid, pv = inputs.get("image_grid_thw"), inputs.get("pixel_values")
        put("input_ids", input_ids[0], "prompt ids: timestamps text and <|video_pad|> runs per frame pair")
        put("video_grid_thw", vgrid, "[n_videos, 3] (t pairs, h, w) in 16-px patches")
        if igrid is not None:
            put("image_grid_thw", igrid, "[n_images, 3]")
        off = 0
        for vi, (v, meta) in enumerate(zip(case["videos"], metas)):
            idx = np.asarray(meta.frames_indices)
            t, gh, gw = vgrid[vi].tolist()
            sampled = clips[vi][idx]
            x = torch.from_numpy(sampled).permute(0, 3, 1, 2).contiguous()
            resized = TV_F.resize(x, [gh * 16, gw * 16], interpolation=TV_F.InterpolationMode.BICUBIC,
                                  antialias=True).permute(0, 2, 3, 1).contiguous().numpy()
            rows = video_pixel_values(resized, (t, gh, gw))
            assert torch.equal(rows, pvv[off:off + rows.shape[0]]), "pixel_values_videos not reproducible"
            off += rows.shape[0]
            stamps = processor._calculate_timestamps(idx, meta.fps, vp.merge_size)
            put(f"video.{vi}.frame_indices", torch.tensor(idx.tolist(), dtype=torch.int64),
                "sampled frame indices (linspace(0, n - 1, k).round(), before padding)")
            put(f"video.{vi}.sampled_u8", sampled, "the sampled input frames [k, H, W, 3] uint8")
            put(f"video.{vi}.resized_u8", resized, "sampled frames after the processor's resize [k, h, w, 3]")
            video_meta.append(dict(frames=v["n"], fps=v["fps"], width=v["w"], height=v["h"],
                                   request=v["kwargs"], frame_indices=idx.tolist(),
                                   timestamps=[f"{s:.1f}" for s in stamps], grid_thw=[t, gh, gw]))
        assert off == pvv.shape[0]
        put("pixel_values_videos_row_sum", pvv.double().sum(-1), "float64 sum of each pixel_values_videos row")
        if igrid is not None:
            for ii, im in enumerate(pil_images):
                _, gh, gw = igrid[ii].tolist()
                rs = hf_resize(np.array(im), size=(gh * 16, gw * 16), resample=PILImageResampling.BICUBIC,
                               input_data_format=ChannelDimension.LAST)
                put(f"image.{ii}.resized_u8", torch.from_numpy(rs.copy()), "image after smart_resize + PIL bicubic")

        pos, deltas = model.model.get_rope_index(input_ids, igrid, vgrid, inputs["attention_mask"])
        put("position_ids", pos[:, 0, :], "[3, L] M-RoPE positions (video grid split per frame pair)")
        put("rope_deltas", deltas.reshape(-1), "[1] max(pos) + 1 - L")
        vemb, vds = model.model.get_video_features(pvv, vgrid)
        put("vision.video_embeds", torch.cat(vemb, 0), "[video tokens, H] merger output for the video pads")
        for k, d in enumerate(vds):
            put(f"vision.video_deepstack.{k}", d, f"video DeepStack feature {k}")
        put("vision.video_pos_embeds", vis.fast_pos_embed_interpolate(vgrid), "[patches, vis_hidden]")
        if igrid is not None:
            iemb, _ = model.model.get_image_features(pv, igrid)
            put("vision.image_embeds", torch.cat(iemb, 0), "[image tokens, H]")

        logits = model(**inputs, use_cache=False).logits[0]
        put("logits.last", logits[-1], "[vocab] logits at the last prompt position")
        ids = input_ids[0].tolist()
        first_v = ids.index(VIDEO_PAD)
        last_v = L - 1 - ids[::-1].index(VIDEO_PAD)
        chosen = torch.tensor(sorted({0, first_v - 2, first_v, (first_v + last_v) // 2, last_v, last_v + 1,
                                      L - 2, L - 1}), dtype=torch.long)
        put("logits.positions", chosen, "chosen prompt positions")
        tv, ti = logits[chosen].topk(10, dim=-1)
        put("logits.top10_ids", ti, "top-10 ids at the chosen positions")
        put("logits.top10_vals", tv, "their logits")

        gcfg = GenerationConfig(do_sample=False, max_new_tokens=16, eos_token_id=[IM_END, EOT], pad_token_id=EOT,
                                bos_token_id=EOT, use_cache=True)
        g = model.generate(**inputs, generation_config=gcfg, output_scores=True, return_dict_in_generate=True)
        new = g.sequences[0, L:]
        scores = torch.stack(g.scores, 0)[:, 0]
        top5v, top5i = scores.topk(5, dim=-1)
        put("gen.tokens", new, "greedy tokens (generate, do_sample=False, 16 new tokens)")
        put("gen.step_top5_ids", top5i, "[steps, 5]")
        put("gen.step_top5_vals", top5v, "[steps, 5]")
        put("gen.step_margin", top5v[:, 0] - top5v[:, 1], "[steps] top1 - top2 logit margin")

        fname = f"cases/{name}.safetensors"
        save_file(tensors, os.path.join(out, fname), metadata={"format": "pt"})
        manifest["cases"].append(dict(
            name=name, file=fname, messages=case["messages"], images=image_meta, videos=video_meta,
            prompt_text=processor.apply_chat_template(case["messages"], tokenize=False, add_generation_prompt=True),
            # the processor's text with each pad run written once: timestamps and pair markers
            expanded_text=re.sub(r"(<\|(?:video|image)_pad\|>)+", r"\1", tokenizer.decode(ids, skip_special_tokens=False)),
            prompt_len=L, n_video_tokens=int((input_ids == VIDEO_PAD).sum()),
            n_image_tokens=int((input_ids == IMAGE_PAD).sum()),
            video_grid_thw=vgrid.tolist(), image_grid_thw=igrid.tolist() if igrid is not None else None,
            rope_delta=int(deltas.reshape(-1)[0]), generated_tokens=new.tolist(),
            generated_text=tokenizer.decode(new.tolist(), skip_special_tokens=False),
            min_step_margin=float((top5v[:, 0] - top5v[:, 1]).min()), keys=keys))
        print(f"  L={L} vgrid={vgrid.tolist()} frames={[m['frame_indices'] for m in video_meta]} "
              f"stamps={[m['timestamps'] for m in video_meta]} gen={new.tolist()[:6]} "
              f"margin={float((top5v[:, 0] - top5v[:, 1]).min()):.3g}", flush=True)

    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, ensure_ascii=False)
        f.write("\n")
    write_readme(out, manifest)
    print(f"done in {time.time() - t0:.1f}s")


def write_readme(out, m):
    L = ["# qwen3vl-tiny-a-video: video golden cases (transformers v4.57.6)", "",
         "Made by `scripts/hfref/make_video_goldens.sh` (deterministic). The model is the shared tiny model A, "
         f"loaded from `{m['model_folder']}` (manifest `model_folder`, relative to this folder; `model_sha256`).",
         "Frames are synthetic uint8 arrays handed to the official `Qwen3VLVideoProcessor` with their "
         "`VideoMetadata` (frame count, fps), so no video decoder is involved. The processor resizes with "
         "torchvision's float path (hf_shims); `video.K.resized_u8` holds its output so that everything after "
         "the resize is compared exactly.", "",
         "Keys per case (`cases/NAME.safetensors`): `input_ids`, `video_grid_thw`, `image_grid_thw`, "
         "`video.K.frame_indices`, `video.K.sampled_u8`, `video.K.resized_u8`, `pixel_values_videos_row_sum`, "
         "`image.K.resized_u8`, `position_ids`, `rope_deltas`, `vision.video_embeds`, "
         "`vision.video_deepstack.K`, `vision.video_pos_embeds`, `vision.image_embeds`, `logits.last`, "
         "`logits.positions`, `logits.top10_ids`, `logits.top10_vals`, `gen.tokens`, `gen.step_top5_*`, "
         "`gen.step_margin`; the manifest lists shapes and meanings, the sampled indices, the timestamps and "
         "`expanded_text` (the processor's text, each pad run written once).", "",
         "| case | video (frames, fps, W x H, request) | sampled | timestamps | video_grid_thw | prompt tokens | video tokens |",
         "|---|---|---|---|---|---|---|"]
    for c in m["cases"]:
        v = c["videos"][0]
        L.append(f"| `{c['name']}` | {v['frames']}, {v['fps']}, {v['width']}x{v['height']}, {json.dumps(v['request'])} "
                 f"| {v['frame_indices']} | {', '.join(v['timestamps'])} | {c['video_grid_thw']} | {c['prompt_len']} "
                 f"| {c['n_video_tokens']} |")
    L += ["", "Note: tiny model A greedily repeats `\\n` (198), as in its image cases; logits and their top-10 at "
          "chosen positions carry the numerical check."]
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write("\n".join(L) + "\n")


if __name__ == "__main__":
    main()
