"""Which models sglang-kt 0.7.2 starts as multimodal, and the cuDNN it then demands on torch 2.9.1.

check_server_args (server_args.py:6170) calls check_torch_2_9_1_cudnn_compatibility (:6265-6316): on torch 2.9.1 a
multimodal model will not start with a cuDNN older than 9.15 (torch's nn.Conv3d bug, pytorch/pytorch#168167) unless
SGLANG_DISABLE_CUDNN_CHECK is set. torch 2.9.1 pins nvidia-cudnn-cu12==9.10.2.21, so a plain `pip install sglang-kt`
environment refuses these models at start-up. The image installs a newer cuDNN (assets/docker/versions.yaml);
a native launch checks the target Python's before it starts anything (deploy/native_proc.py).
"""

from __future__ import annotations

from collections.abc import Mapping

from ktwizard.runtime.rules import MULTIMODAL_CUDNN_MIN as MIN_CUDNN
from ktwizard.runtime.rules import cudnn_refused
from ktwizard.runtime.version import SGLANG_KT, TORCH_VERSION

# configs/model_config.py:1362-1416 (multimodal_model_archs), read by is_multimodal_model (:1422)
MULTIMODAL_ARCHS = frozenset(
    {
        "CLIPModel", "DeepseekVL2ForCausalLM", "Ernie4_5_VLMoeForConditionalGeneration",
        "Gemma3ForConditionalGeneration", "Gemma3nForConditionalGeneration", "Glm4vForConditionalGeneration",
        "Glm4vMoeForConditionalGeneration", "Glm5NextForConditionalGeneration", "GlmOcrForConditionalGeneration",
        "GlmAsrForConditionalGeneration", "Grok1VForCausalLM", "Grok1AForCausalLM", "LlavaLlamaForCausalLM",
        "Llama4ForConditionalGeneration", "LlavaMistralForCausalLM", "LlavaQwenForCausalLM",
        "LlavaForConditionalGeneration", "LlavaVidForCausalLM", "LightOnOCRForConditionalGeneration", "MiniCPMO",
        "MiniCPMV", "Mistral3ForConditionalGeneration", "MultiModalityCausalLM", "MllamaForConditionalGeneration",
        "NemotronH_Nano_VL_V2", "PixtralForConditionalGeneration", "Qwen2AudioForConditionalGeneration",
        "Qwen2VLForConditionalGeneration", "Qwen2_5_VLForConditionalGeneration", "Qwen3VLForConditionalGeneration",
        "Qwen3VLMoeForConditionalGeneration", "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration",
        "Qwen3OmniMoeForConditionalGeneration", "KimiVLForConditionalGeneration", "InternVLChatModel",
        "InternS1ForConditionalGeneration", "InternS1ProForConditionalGeneration", "Phi4MMForCausalLM",
        "WhisperForConditionalGeneration", "Step3VLForConditionalGeneration", "POINTSV15ChatModel",
        "DotsVLMForCausalLM", "DotsOCRForCausalLM", "Sarashina2VisionForCausalLM", "NVILAForConditionalGeneration",
        "NVILALiteForConditionalGeneration", "DeepseekOCRForCausalLM", "JetVLMForConditionalGeneration",
        "PaddleOCRVLForConditionalGeneration", "MiDashengLMModel", "StepVLForConditionalGeneration",
        "KimiK25ForConditionalGeneration",
    }
)  # fmt: skip
# configs/model_config.py:203-215: multimodal stays off for these unless --enable-multimodal is given
OFF_BY_DEFAULT = frozenset(
    {"Gemma3ForConditionalGeneration", "Llama4ForConditionalGeneration", "Step3VLForConditionalGeneration"}
)
# server_args.py:6273-6284: the check returns early for GLM-5.3-flash (is_glm5_next) and, with the native model
# implementation, for Kimi K2.5's MoonViT (no Conv3d)
CUDNN_EXEMPT = frozenset({"Glm5NextForConditionalGeneration", "KimiK25ForConditionalGeneration"})
DISABLE_CHECK_ENV = "SGLANG_DISABLE_CUDNN_CHECK"
CHECKED_TORCH = (2, 9, 1)  # server_args.py:6288: only this torch release is checked
FIX_CUDNN = "9.16.0.29"  # the version the runtime's own error tells you to install (server_args.py:6311)


def starts_multimodal(architecture: str, flags: Mapping[str, object]) -> bool:
    """ModelConfig.is_multimodal for this architecture under these flags (model_config.py:203-233; --enable-multimodal
    is a store_true defaulting to None, so no flag turns it off)."""
    if architecture not in MULTIMODAL_ARCHS:
        return False
    return architecture not in OFF_BY_DEFAULT or bool(flags.get("--enable-multimodal"))


def cudnn_problem(
    architecture: str, flags: Mapping[str, object], env: Mapping[str, str], torch: str, cudnn: str
) -> str:
    """Why 0.7.2 would refuse to start this model on this torch and cuDNN (installed versions), or ''."""
    if not starts_multimodal(architecture, flags) or architecture in CUDNN_EXEMPT:
        return ""
    if env.get(DISABLE_CHECK_ENV, "").lower() in ("1", "true", "yes", "on"):
        return ""
    try:
        release = tuple(int(x) for x in torch.split("+")[0].split(".")[:3])
        major, minor = (int(x) for x in cudnn.split(".")[:2])
    except ValueError:
        return ""  # a version this check cannot read: the runtime's own check decides
    if release != CHECKED_TORCH or not cudnn_refused(f"{major}.{minor}"):
        return ""
    return (
        f"{SGLANG_KT} refuses to start {architecture} (multimodal) on torch {TORCH_VERSION} with cuDNN {cudnn}: it "
        f"needs cuDNN >= {MIN_CUDNN[0]}.{MIN_CUDNN[1]} (torch's nn.Conv3d bug, server_args.py:6265-6316)"
    )
