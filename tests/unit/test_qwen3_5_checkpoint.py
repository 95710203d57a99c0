"""A Qwen3.6-35B-A3B checkpoint as the runtime names its tensors (header-only, full size), read from a folder and
from a recorded hub (`--model hf:`), plans as the preset does: the real download and the preset agree.

Tensor names and shapes: sglang/srt/models/qwen3_5.py (model.language_model.layers.N, split in_proj_qkv/_z/_b/_a,
packed experts gate_up_proj [E, 2I, H] / down_proj [E, H, I] as kt-kernel's BF16 loader reads them, loader.py:690-712;
the MTP block under mtp.), qwen3_vl.py (model.visual.*: patch Conv3d, pos_embed, blocks, merger); the config is the
published Qwen3.6-35B-A3B one (text_config + vision_config, code-index id 57034692230)."""

from __future__ import annotations

import re
import threading
from http.server import ThreadingHTTPServer

from conftest import run_cli
from safetensors_fixture import write_checkpoint
from test_hub import SHA, Hub

from ktwizard.models.inspect import inspect_checkpoint
from ktwizard.models.presets import get_preset

H, LAYERS, HEADS, KV, HD, E, I, V = 2048, 40, 16, 2, 256, 256, 512, 248320
KH, KD, VH, VD = 16, 128, 32, 128
VIT, VIT_MLP, OUT = 1152, 4304, 2048


def _config() -> dict:
    text = dict(get_preset("qwen3.6-35b-a3b").config["text_config"])
    text.update(mtp_num_hidden_layers=1, mamba_ssm_dtype="float32")
    text["layer_types"] = ["full_attention" if (i + 1) % 4 == 0 else "linear_attention" for i in range(LAYERS)]
    vision = {"depth": 27, "hidden_size": VIT, "intermediate_size": VIT_MLP, "out_hidden_size": OUT}
    vision.update(num_heads=16, patch_size=16, temporal_patch_size=2, spatial_merge_size=2, deepstack_visual_indexes=[])
    arch = ["Qwen3_5MoeForConditionalGeneration"]
    return {"architectures": arch, "model_type": "qwen3_5_moe", "text_config": text, "vision_config": vision}


def _layer(p: str, full: bool) -> list[tuple[str, str, tuple[int, ...]]]:
    t = [(f"{p}.input_layernorm.weight", "BF16", (H,)), (f"{p}.post_attention_layernorm.weight", "BF16", (H,))]
    if full:
        a = f"{p}.self_attn"
        t += [(f"{a}.q_proj.weight", "BF16", (HEADS * HD * 2, H)), (f"{a}.k_proj.weight", "BF16", (KV * HD, H))]
        t += [(f"{a}.v_proj.weight", "BF16", (KV * HD, H)), (f"{a}.o_proj.weight", "BF16", (H, HEADS * HD))]
        t += [(f"{a}.q_norm.weight", "BF16", (HD,)), (f"{a}.k_norm.weight", "BF16", (HD,))]
    else:
        a, conv = f"{p}.linear_attn", 2 * KH * KD + VH * VD
        t += [(f"{a}.in_proj_qkv.weight", "BF16", (conv, H)), (f"{a}.in_proj_z.weight", "BF16", (VH * VD, H))]
        t += [(f"{a}.in_proj_b.weight", "BF16", (VH, H)), (f"{a}.in_proj_a.weight", "BF16", (VH, H))]
        t += [(f"{a}.conv1d.weight", "BF16", (conv, 1, 4)), (f"{a}.norm.weight", "BF16", (VD,))]
        t += [
            (f"{a}.A_log", "BF16", (VH,)),
            (f"{a}.dt_bias", "BF16", (VH,)),
            (f"{a}.out_proj.weight", "BF16", (H, VH * VD)),
        ]
    m = f"{p}.mlp"
    t += [(f"{m}.gate.weight", "BF16", (E, H)), (f"{m}.experts.gate_up_proj", "BF16", (E, 2 * I, H))]
    t += [(f"{m}.experts.down_proj", "BF16", (E, H, I)), (f"{m}.shared_expert_gate.weight", "BF16", (1, H))]
    t += [(f"{m}.shared_expert.{n}.weight", "BF16", (I, H)) for n in ("gate_proj", "up_proj")]
    return t + [(f"{m}.shared_expert.down_proj.weight", "BF16", (H, I))]


def _vision() -> list[tuple[str, str, tuple[int, ...]]]:
    v = "model.visual"
    t = [(f"{v}.patch_embed.proj.weight", "BF16", (VIT, 3, 2, 16, 16)), (f"{v}.patch_embed.proj.bias", "BF16", (VIT,))]
    t += [(f"{v}.pos_embed.weight", "BF16", (2304, VIT))]
    for b in range(27):
        p = f"{v}.blocks.{b}"
        for name, shape in (
            ("norm1", (VIT,)),
            ("norm2", (VIT,)),
            ("attn.qkv", (3 * VIT, VIT)),
            ("attn.proj", (VIT, VIT)),
            ("mlp.linear_fc1", (VIT_MLP, VIT)),
            ("mlp.linear_fc2", (VIT, VIT_MLP)),
        ):
            t += [(f"{p}.{name}.weight", "BF16", shape), (f"{p}.{name}.bias", "BF16", (shape[0],))]
    for name, shape in (("norm", (VIT,)), ("linear_fc1", (4 * VIT, 4 * VIT)), ("linear_fc2", (OUT, 4 * VIT))):
        t += [(f"{v}.merger.{name}.weight", "BF16", shape), (f"{v}.merger.{name}.bias", "BF16", (shape[0],))]
    return t


def _tensors() -> list[tuple[str, str, tuple[int, ...]]]:
    t = [("model.language_model.embed_tokens.weight", "BF16", (V, H)), ("lm_head.weight", "BF16", (V, H))]
    t += [("model.language_model.norm.weight", "BF16", (H,))]
    for i in range(LAYERS):
        t += _layer(f"model.language_model.layers.{i}", (i + 1) % 4 == 0)
    t += _layer("mtp.layers.0", True) + [("mtp.fc.weight", "BF16", (H, 2 * H)), ("mtp.norm.weight", "BF16", (H,))]
    t += [("mtp.pre_fc_norm_embedding.weight", "BF16", (H,)), ("mtp.pre_fc_norm_hidden.weight", "BF16", (H,))]
    return t + _vision()


def test_the_checkpoint_reads_as_the_preset(tmp_path):
    write_checkpoint(tmp_path / "Qwen3.6-35B-A3B", _config(), _tensors(), shards=4)
    r = inspect_checkpoint(tmp_path / "Qwen3.6-35B-A3B")
    assert not any("differ" in n or "not in the headers" in n for n in r.notes), r.notes
    got, preset = r.spec, get_preset("qwen3.6-35b-a3b").spec()
    assert got.routed_bytes == preset.routed_bytes == E * 3 * I * H * 2 * LAYERS
    assert got.bytes_by_group["vision"] == preset.bytes_by_group["vision"]  # the preset's ViT = the class's tensors
    assert got.non_expert_bytes == preset.non_expert_bytes
    assert got.kv_cell_bytes() == preset.kv_cell_bytes() and got.mtp_bytes > 0  # MTP kept apart, not planned


def test_plan_before_download_equals_the_preset_plan(tmp_path):
    folder = tmp_path / "hub-qwen36"
    write_checkpoint(folder, _config(), _tensors(), shards=4, sparse=True)
    shards = sorted(p.name for p in folder.glob("*.safetensors"))
    saved = Hub.repos, Hub.gated  # test_hub's module fixture owns them; give them back
    Hub.repos = {"Qwen/Qwen3.6-35B-A3B": (folder, ["config.json", "model.safetensors.index.json", *shards])}
    Hub.gated = set()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        endpoint = f"http://127.0.0.1:{server.server_address[1]}"
        host = ("--host", "xeon-2s-amx-4x4090-48gb")
        hub = run_cli("plan", "--model", "hf:Qwen/Qwen3.6-35B-A3B", *host, env={"HF_ENDPOINT": endpoint}, timeout=120)
        preset = run_cli("plan", "--preset", "qwen3.6-35b-a3b", *host)
    finally:
        server.shutdown()
        Hub.repos, Hub.gated = saved
    assert hub.returncode == 0 and preset.returncode == 0, hub.stderr + preset.stderr
    pick = re.compile(r"--kt-num-gpu-experts \d+|--max-total-tokens \d+|--mem-fraction-static [\d.]+|--kt-method \w+")
    assert pick.findall(hub.stdout) == pick.findall(preset.stdout) != []
    assert f"--revision {SHA}" in hub.stdout
