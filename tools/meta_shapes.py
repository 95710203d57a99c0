"""Every preset's parameter shapes as Hugging Face transformers' own model classes build them.

Two steps, because the classes need PyTorch (the GPU machine has it; CI does not):

    python tools/meta_shapes.py export build/meta-configs.json        # here: the presets' config.json facts
    python tools/meta_shapes.py measure build/meta-configs.json OUT    # where torch + transformers are

`measure` builds each model on PyTorch's meta device (no memory, no weights) with `from_config` and records,
per parameter name with its layer number folded to `{i}`, how many layers carry it and its element count.
The result is committed as tests/fixtures/oracles/meta-shapes.json: tests/unit/test_meta_shapes.py holds
ktwizard's parameter counts against it. transformers' classes are code ktwizard did not write.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
LAYER = re.compile(r"\.(layers|blocks|h)\.(\d+)\.")
# Fields that would make transformers quantize or fetch instead of building the plain architecture.
DROP = ("quantization_config", "estimated_bytes", "auto_map")
# Checkpoints whose config names a remote-code type that transformers builds under its own name: Kimi K2's
# config.json says kimi_k2 but its architecture is DeepseekV3ForCausalLM (same class in sglang-kt 0.7.2).
REMOTE_CODE_TYPES = {"kimi_k2": "deepseek_v3"}


def export(out: str) -> None:
    import yaml

    configs = {}
    for path in sorted((REPO / "presets" / "models").glob("*.yaml")):
        preset = yaml.safe_load(path.read_text())
        cfg = {k: v for k, v in preset["config"].items() if k not in DROP}
        if cfg["model_type"] in REMOTE_CODE_TYPES:
            cfg["model_type"] = REMOTE_CODE_TYPES[cfg["model_type"]]
        configs[preset["id"]] = cfg
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps(configs, indent=1, sort_keys=True) + "\n")
    print(f"{len(configs)} preset configs -> {out}")


def _build(cfg: dict[str, Any]) -> tuple[Any, str, Any]:
    """The text model (what the groups compare) and, for a vision-language checkpoint, the whole model."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForImageTextToText

    cfg = dict(cfg)
    model_type = cfg.pop("model_type")
    config = AutoConfig.for_model(model_type, **cfg)
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    whole = None
    with torch.device("meta"):
        if text is not config:
            whole = AutoModelForImageTextToText.from_config(config, dtype=torch.bfloat16)
        try:
            model = AutoModelForCausalLM.from_config(text, dtype=torch.bfloat16)
        except ValueError:  # no causal-LM class for the text config (GLM-5-Next): the whole model, vision apart
            if whole is None:
                raise
            model = whole
    return model, type(text).__name__, whole


def _is_vision(name: str) -> bool:
    return any(
        v in name for v in ("visual.", "vision_tower.", "vision_model.", "mm_projector.", "multi_modal_projector.")
    )


def _fold(model: Any) -> dict[str, dict[str, int]]:
    shapes: dict[str, dict[str, int]] = {}
    named = [(n, p, "param") for n, p in model.named_parameters()]
    persistent = {n for n, _ in model.state_dict().items()}
    named += [(n, b, "buffer") for n, b in model.named_buffers() if n in persistent]
    for name, tensor, kind in named:
        key = LAYER.sub(lambda m: f".{m.group(1)}.{{i}}.", name)
        row = shapes.setdefault(key, {"count": 0, "numel": 0, "buffer": int(kind == "buffer")})
        row["count"] += 1
        row["numel"] += int(tensor.numel())
    return shapes


def measure(configs_path: str, out_dir: str) -> None:
    import torch
    import transformers

    configs = json.loads(Path(configs_path).read_text())
    result: dict[str, Any] = {"transformers": transformers.__version__, "torch": torch.__version__, "models": {}}
    for pid, cfg in configs.items():
        try:
            model, config_class, whole = _build(cfg)
        except Exception as exc:  # a model type this transformers lacks: recorded, not fatal
            result["models"][pid] = {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
            print(f"{pid:32} not built: {type(exc).__name__}: {str(exc)[:120]}")
            continue
        shapes = {k: r for k, r in _fold(model).items() if not _is_vision(k)}
        total = sum(r["numel"] for r in shapes.values() if not r["buffer"])
        vision = sum(r["numel"] for k, r in _fold(whole).items() if _is_vision(k)) if whole is not None else 0
        result["models"][pid] = {
            "class": type(model).__name__,
            "config_class": config_class,
            "params": total,
            "vision_params": vision,
            "shapes": shapes,
        }
        print(f"{pid:32} {type(model).__name__:40} {total / 1e9:9.3f} B params, vision {vision / 1e6:8.1f} M")
        del model, whole
    out = Path(out_dir) / "meta-shapes.json"
    out.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    if sys.argv[1:2] == ["export"]:
        export(sys.argv[2])
    elif sys.argv[1:2] == ["measure"]:
        measure(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
