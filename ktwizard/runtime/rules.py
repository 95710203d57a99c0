"""Load-time and start-up rules of sglang-kt 0.7.2 / kt-kernel 0.7.2, read from their code (paths inside the wheels).

A flag table (runtime/catalog.py) says what the argument parser accepts; these rules say what the server then does
with a model at start-up, where a plan that parses would still fail to start or would silently run something else.
Each rule names the file and line it was read from; `tests/unit/test_runtime_rules.py` checks the plans against
them, and the CI check runs the runtime's own `ServerArgs` on every rendering.
"""

from __future__ import annotations

from ktwizard.models.spec import ModelSpec
from ktwizard.runtime.version import KT_KERNEL, SGLANG_KT

# --- KV dtype a quantized checkpoint asks for -------------------------------------------------------------------------
# With --kv-cache-dtype auto, sglang-kt 0.7.2 follows the checkpoint's kv_cache_quant_algo: "FP8" gives an fp8_e4m3
# cache (model_executor/model_runner.py:1765-1781; ModelOpt NVFP4 exports set it). ktwizard renders the dtype it
# budgets, so the pool it sizes is the pool the runtime allocates.


def checkpoint_kv(spec: ModelSpec, asked: str) -> tuple[str, str] | None:
    """(--kv-cache-dtype, why) for a checkpoint that names its KV dtype, or None when `auto` means BF16."""
    if not spec.kv_cache_fp8:
        return None
    if asked == "bf16":
        return "bfloat16", "BF16 KV cache as asked (auto would follow the checkpoint's FP8 kv_cache_quant_algo)"
    return (
        "fp8_e4m3",
        f"the checkpoint's kv_cache_quant_algo is FP8, which {SGLANG_KT} follows when the KV dtype is auto "
        "(model_runner.py:1765-1781); the KV pool is budgeted in it",
    )


# --- Block-FP8 checkpoints and tensor parallelism -------------------------------------------------------------------
# layers/quantization/fp8.py:854-866 (MoE): the per-rank intermediate size of gate/up must be a multiple of block_n,
# and of block_k for down when TP > 1; fp8.py:338-357 (linear layers): a column- or row-parallel shard must be a
# multiple of the block too. A dense MLP and the shared experts are such linear layers.


def fp8_block_shard_problem(spec: ModelSpec, tp: int) -> str | None:
    """Why a block-FP8 checkpoint cannot be split over `tp` GPUs, or None when it can."""
    fmt = spec.other_format if spec.other_format.kind == "fp8_block" else spec.expert_format
    if tp <= 1 or fmt.kind != "fp8_block" or not fmt.block:
        return None
    block = fmt.block
    # The audit and the runtime agree on the MoE dimensions; a dense first layer (GLM's 10944) is left out:
    # those checkpoints are served at TP 1, where the same check would refuse them were that layer block-FP8.
    dims = [("routed experts' intermediate size", spec.moe_intermediate)]
    if spec.shared_experts and spec.shared_intermediate:
        dims.append(("shared experts' intermediate size", spec.shared_intermediate))
    for what, size in dims:
        if size % tp or (size // tp) % block:
            return (
                f"the {what} {size} splits into {size / tp:g} per GPU at TP {tp}, not a multiple of the FP8 block "
                f"{block}: {SGLANG_KT} refuses to load it (layers/quantization/fp8.py:854-866)"
            )
    return None


def loadable_tps(spec: ModelSpec, most: int) -> tuple[int, ...]:
    """Tensor-parallel sizes up to `most` that the attention heads and the checkpoint's shards both allow."""
    heads = spec.attention.heads
    return tuple(
        tp for tp in range(1, most + 1) if heads % tp == 0 and shard_problem(spec, tp) is None and (tp & (tp - 1)) == 0
    )


# --- GPTQ (Marlin) MoE checkpoints and tensor parallelism ------------------------------------------------------------
# A GPTQ 4-bit checkpoint on CUDA becomes gptq_marlin (gptq.py:373-397, 411-433); its MoE layers, the GPU experts KT
# keeps, are GPTQMarlinMoEMethod. With group scales and desc_act=false, create_weights sizes the down projection's
# scale and zero tables for the FULL intermediate size on every rank (gptq.py:1025-1032: per-partition x moe_tp_size)
# and marks them load_full_w2 (:1084, :1110), but FusedMoE's loader never reads that mark: _load_w2 narrows the
# checkpoint's [I/group, H] table at tp_rank x (its own row count) (fused_moe_triton/layer.py:519, :541; the scale
# dim is flipped by is_transposed, :759). Rank 0 reads every row (wrong for its shard), rank 1 asks for rows past the
# end and the load stops with "start (n) + length (n) exceeds dimension size (n)" -- reported on
# Qwen3-30B-A3B-GPTQ-Int4 at TP 2 (sgl-project/sglang#13252) and Qwen3.5-122B-A10B-GPTQ-Int4 under KT at TP 4
# (kvcache-ai/ktransformers#1943). Channel-wise scales (group_size -1) load through the per-channel path instead
# (layer.py:388-406); desc_act=true checkpoints are refused earlier (kt-kernel's GPTQ loader reads desc_act=false).
# Divisibility (the Marlin tiles, marlin_utils.py:170-202) never gets a say: the first TP > 1 already fails.


def gptq_shard_problem(spec: ModelSpec, tp: int) -> str | None:
    """Why a GPTQ (group-scaled) checkpoint's GPU experts cannot be loaded over `tp` GPUs, or None when they can."""
    fmt = spec.expert_format
    if tp <= 1 or fmt.kind != "gptq_int4" or fmt.block <= 0:
        return None
    size = spec.moe_intermediate
    return (
        f"{SGLANG_KT} cannot load a GPTQ MoE checkpoint over {tp} GPUs: every rank allocates the down "
        f"projection's group scales for the full {size // fmt.block} groups (gptq.py:1025-1032) and the loader then "
        f"reads them from row {size // fmt.block} x rank, past the end on rank 1 (fused_moe_triton/layer.py:519-541; "
        "sgl-project/sglang#13252, kvcache-ai/ktransformers#1943)"
    )


def shard_problem(spec: ModelSpec, tp: int) -> str | None:
    """Why the checkpoint's weights cannot be split over `tp` GPUs (block FP8 or GPTQ), or None when they can."""
    return fp8_block_shard_problem(spec, tp) or gptq_shard_problem(spec, tp)


def shard_instead(spec: ModelSpec) -> str:
    """What would split over more GPUs when this checkpoint cannot."""
    if spec.expert_format.kind == "gptq_int4":
        return "the model's BF16 or FP8 checkpoint"
    return "a BF16 checkpoint"


# --- Expert-distribution recorder ------------------------------------------------------------------------------------
# eplb/expert_location.py:520-530 asks the model class for get_model_config_for_expert_location; without it the
# recorder's metadata is missing and expert_distribution.py asserts at start-up. Each family names its classes that
# define it (Family.expert_location, families/<name>/).
def recorder_problem(spec: ModelSpec) -> str | None:
    """Why --expert-distribution-recorder-mode would stop this model's server at start-up, or None."""
    from ktwizard.families.registry import families

    if any(spec.architecture in f.expert_location for f in families()):  # every family's folder: only when asked
        return None
    return (
        f"{spec.architecture} has no expert-location metadata in {SGLANG_KT} (no get_model_config_for_expert_"
        "location: eplb/expert_location.py:520-530), so the routing recorder stops the server at start-up; "
        "plan with --placement uniform"
    )


# server_args.py:3112-3116 gives the "stat" recorder a 1000-pass circular buffer; _StatAccumulator keeps one int32 row
# of layers x physical experts per forward pass on each GPU (eplb/expert_distribution.py:920-931, :1019-1070), and a
# dump sums only the last window. ktwizard renders a larger window, budgets it, and `placement record` refuses traffic
# that would wrap it.
RECORDER_PASSES = 4096


def recorder_buffer_bytes(spec: ModelSpec, passes: int = RECORDER_PASSES) -> int:
    """The recorder's per-GPU buffer: passes x layers x experts x int32 (expert_location metadata counts every hidden
    layer and, with no redundant experts, physical = logical experts: models/deepseek_v2.py:3647-3655)."""
    return passes * spec.layers * spec.routed_experts * 4


def recorder_passes(requests: int, max_tokens: int) -> int:
    """Forward passes `placement record` drives one request after another: a prefill pass and one pass per decoded
    token after the first, per request."""
    return requests * (max_tokens + 1)


# --- kt-kernel's weight loaders ------------------------------------------------------------------------------------
# Each CPU method reads the checkpoint through one loader class with a fixed tensor layout (kt_kernel/utils/loader.py).
# gpt-oss stores its experts fused (`mlp.experts.gate_up_proj_blocks/_scales` MXFP4, or `gate_up_proj` [E, H, 2I]
# interleaved in BF16 copies) with per-expert biases. MXFP4SafeTensorLoader reads only DeepSeek-V4-Flash's per-expert
# `{base}.ffn.experts.{i}.w1/w3/w2` (:1198-1270) and fails with "No experts found" (utils/amx.py:760-789); the BF16
# loader's packed form is Qwen3.5's [E, 2I, H] without biases (:573-712); no kt-kernel expert class takes biases.
MXFP4_LAYOUT_ARCHITECTURES = frozenset({"DeepseekV4ForCausalLM"})


# --- MiniMax-M3 start-up --------------------------------------------------------------------------------------------
# server_args.py:2433-2443: for the M3 architectures ServerArgs evaluates `self.quantization is None and not
# self._quantization_explicitly_unset`, an attribute 0.7.2 never defines: with no --quantization it raises
# AttributeError before anything loads (run through 0.7.2's own ServerArgs: tests/integration/test_runtime_accepts.py).
# Naming the checkpoint's method short-circuits the test; KT's MiniMax-M3 tutorial passes --quantization mxfp8.
M3_ARCHITECTURES = ("MiniMaxM3SparseForCausalLM", "MiniMaxM3SparseForConditionalGeneration")
M3_QUANTIZATION = {"mxfp8": "mxfp8"}  # WeightFormat.kind -> the --quantization the checkpoint's config names


def m3_quantization(spec: ModelSpec) -> str | None:
    """The --quantization an M3 plan must render (None: not M3, or a format 0.7.2 cannot start M3 with)."""
    if spec.architecture not in M3_ARCHITECTURES:
        return None
    return M3_QUANTIZATION.get(spec.other_format.kind)


def startup_problem(spec: ModelSpec) -> str | None:
    """Why sglang-kt 0.7.2's ServerArgs fails before loading this checkpoint whatever the flags ktwizard could render,
    or None."""
    if spec.architecture in M3_ARCHITECTURES and m3_quantization(spec) is None:
        return (
            f"{SGLANG_KT} cannot start MiniMax-M3 from {spec.other_format.describe()} weights: for this "
            "architecture ServerArgs reads `_quantization_explicitly_unset`, which it never defines, whenever "
            "--quantization is not given (server_args.py:2433-2443); use the MXFP8 checkpoint (preset "
            "minimax-m3-mxfp8), whose --quantization mxfp8 avoids it"
        )
    return None


# MiniMax-M3's experts: swigluoai, min(gate, limit) * sigmoid(alpha * gate) * (clamp(up, -limit, limit) + 1).
# kt_ep_wrapper passes (alpha, limit) to kt-kernel only for these methods (block FP8 only for GLM-5-Next) and zeroes
# them otherwise.
CLAMPED_SWIGLU_METHODS = ("MXFP4", "MXFP8")


def loader_problem(spec: ModelSpec, method: str) -> str | None:
    """Why kt-kernel 0.7.2 cannot load this checkpoint's routed experts with `method`, or None."""
    if spec.architecture == "GptOssForCausalLM":
        return (
            f"{KT_KERNEL} has no loader for gpt-oss's experts: its MXFP4 loader reads only DeepSeek-V4-Flash's "
            "per-expert layout and fails with 'No experts found' (kt_kernel/utils/loader.py:1198-1270, "
            "utils/amx.py:760-789); the BF16 loader's packed layout is Qwen3.5's, without the expert biases gpt-oss "
            "has (loader.py:573-712). Serve gpt-oss with plain SGLang on the GPUs, without KT"
        )
    dsv4 = dsv4_method_problem(spec, method)
    if dsv4:
        return dsv4
    if spec.clamped_swiglu and method not in CLAMPED_SWIGLU_METHODS:
        return (
            f"{spec.architecture}'s routed experts use a clamped SwiGLU (swigluoai: swiglu_alpha, swiglu_limit) that "
            f"{KT_KERNEL} applies only under {' or '.join(CLAMPED_SWIGLU_METHODS)}: under {method} the wrapper "
            "zeroes both and the CPU experts would compute plain SiLU, silently wrong "
            "(sglang/srt/layers/moe/kt_ep_wrapper.py:399-405, :5284-5310; kt_kernel/experts.py:378-393). Use the "
            "MXFP8 checkpoint (preset minimax-m3-mxfp8, MiniMaxAI/MiniMax-M3-MXFP8) with --kt-method MXFP8"
        )
    if method == "MXFP4" and spec.architecture not in MXFP4_LAYOUT_ARCHITECTURES:
        return (
            f"{KT_KERNEL}'s MXFP4 loader reads only DeepSeek-V4-Flash's per-expert layout "
            f"(kt_kernel/utils/loader.py:1198-1270), not {spec.architecture}'s"
        )
    return None


# --- DeepSeek-V4 (compressed MQA + sliding window + indexer): its start-up facts live in its family folder
# (families/deepseek_v4/rules.py), re-exported above for the runtime checks that name them.


def is_dsv4(spec: ModelSpec) -> bool:
    return spec.attention.kind == "dsv4"


def dsv4_method_problem(spec: ModelSpec, method: str) -> str | None:
    """Why kt-kernel 0.7.2 cannot run DeepSeek-V4's CPU experts with `method`, naming what runs; or None."""
    if not is_dsv4(spec) or method in CLAMPED_SWIGLU_METHODS:
        return None
    return (
        f"DeepSeek-V4's experts clamp SwiGLU at 10 (swiglu_limit), which the KT wrapper hands to kt-kernel only under "
        f"{' or '.join(CLAMPED_SWIGLU_METHODS)}: under {method} it is zeroed and the CPU experts would compute plain "
        "SiLU, silently wrong (sglang/srt/layers/moe/kt_ep_wrapper.py:399-405, :5284-5310). Use --method MXFP4, which "
        "reads the checkpoint's own MXFP4 experts"
    )


# --- The packaged DeepSeek config substitute ------------------------------------------------------------------------
# utils/hf_transformers_utils.py:397-405 with environ.py:168 (SGLANG_APPLY_CONFIG_BACKUP, default "auto"): for any
# checkpoint whose config.json has a model_type starting "deepseek" or an architecture naming DeepSeek (:191-209, so
# DeepSeek-V2/V3/R1 and Kimi K2 too), 0.7.2 builds the config through DeepSeek-V4's path (:213-290) and then reloads
# the checkpoint's own config.json into DeepSeekV4Config (:483-500), whose defaults fill what the checkpoint lacks:
# index_topk=512 (configs/deepseek_v4.py:33). is_deepseek_nsa (configs/model_config.py:55-67) then holds for a plain
# DeepSeek-V3: ServerArgs takes the DSA branch (64-token pages, NSA kernels) and the model class builds an indexer the
# checkpoint has no weights for (models/deepseek_v2.py:1462). Upstream removed the substitute (sgl-project/sglang
# #23990); "none" reads the checkpoint's own config.json, which DeepSeek-V4's path then reloads into DeepSeekV4Config
# as before. Run through 0.7.2's own ServerArgs: tests/integration/test_runtime_accepts.py checks the runtime's view
# of DSA equals the plan's on every rendering.
CONFIG_BACKUP_ENV = "SGLANG_APPLY_CONFIG_BACKUP"


def reads_config_backup(spec: ModelSpec) -> bool:
    """The checkpoints 0.7.2's _peek_is_deepseek_arch routes through the config substitute."""
    return spec.model_type.lower().startswith("deepseek") or "deepseek" in spec.architecture.lower()


# --- Health checks ---------------------------------------------------------------------------------------------------
# entrypoints/http_server.py:495-560: /health generates one token unless SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION is
# false (environ.py:468, default True), and answers 503 when nothing is generated within SGLANG_HEALTH_CHECK_TIMEOUT
# (20 s, :183). A KT prefill of a long prompt holds the scheduler far longer: a router would drop the replica and a
# liveness probe would restart the pod. With generation off, /health answers from the server's state alone.
HEALTH_GENERATION_ENV = "SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION"

# --- Tool-call parsers -----------------------------------------------------------------------------------------------
# function_call/function_call_parser.py:53-78: `qwen25` and `glm45` are kept as aliases of `qwen` and `glm`; the
# plan renders the canonical names.
TOOL_PARSER_CANONICAL = {"qwen25": "qwen", "glm45": "glm"}


def tool_parser(name: str) -> str:
    return TOOL_PARSER_CANONICAL.get(name, name)


# --- Custom all-reduce and expandable segments (TP > 1) ------------------------------------------------------------
# distributed/device_communicators/custom_all_reduce.py:144-162 enables the custom all-reduce for 2 PCIe GPUs with
# working P2P and for any NVLink set; at CUDA-graph capture it exports its buffers through CUDA IPC (:250-326), which
# refuses memory from expandable segments (VMM). 0.7.2 has no fallback for that (upstream added one later), so a
# TP > 1 plan that keeps expandable segments disables the custom all-reduce: on hosts without P2P the runtime
# disables it anyway, so only P2P / NVLink hosts give anything up (NCCL serves the all-reduce instead).
CUSTOM_AR_WHY = (
    "expandable segments (this plan's allocator setting) cannot be exported through CUDA IPC, which the custom "
    "all-reduce needs at CUDA-graph capture (custom_all_reduce.py:250-326): on GPUs with P2P or NVLink it would "
    "crash there. NCCL serves the all-reduce instead; where P2P is absent the runtime turns it off anyway "
    "(:144-162). Keeping the custom all-reduce would mean the default allocator, which needs +3.1 to +4.9 GiB more "
    "per GPU (measured), i.e. fewer GPU experts"
)


# --- cuDNN for multimodal models -------------------------------------------------------------------------------------
# server_args.py:6265-6316 (check_server_args, :6170): on torch 2.9.1 a multimodal model (ModelConfig.is_multimodal;
# Kimi-K2.5 and GLM-5.3-flash excepted) will not start with cuDNN older than 9.15 (torch's nn.Conv3d bug,
# pytorch/pytorch#168167) unless SGLANG_DISABLE_CUDNN_CHECK is set. torch 2.9.1 itself pins nvidia-cudnn-cu12
# 9.10.2.21, so the image installs the cuDNN that error names (assets/docker/versions.yaml `cudnn`).
TORCH_2_9_1_CUDNN = (9, 10)  # torch 2.9.1's Requires-Dist: nvidia-cudnn-cu12==9.10.2.21
MULTIMODAL_CUDNN_MIN = (9, 15)


def cudnn_version_code(version: str) -> int:
    """torch.backends.cudnn.version() for a cuDNN 9 release: major x 10000 + minor x 100 + patch (cudnn_version.h)."""
    major, minor, patch = (int(x) for x in (version.split(".") + ["0", "0"])[:3])
    return major * 10000 + minor * 100 + patch


def cudnn_refused(version: str) -> bool:
    """Whether 0.7.2 refuses multimodal models with this cuDNN: it compares float(str(code)[:3]) / 100, i.e. major.minor
    as two digits (server_args.py:6296)."""
    return float(str(cudnn_version_code(version))[:3]) / 100 < MULTIMODAL_CUDNN_MIN[0] + MULTIMODAL_CUDNN_MIN[1] / 100
