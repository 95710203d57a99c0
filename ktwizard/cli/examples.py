"""Examples shown under each subcommand's help (one table, so every command has them)."""

EXAMPLES = {
    "probe": "ktwizard probe\n  ktwizard probe --json\n  ktwizard probe --save host.yaml --weights /models\n"
    "  ktwizard probe --bandwidth --save host.yaml",
    "presets": "ktwizard presets\n  ktwizard presets --host rtx-pro-6000-epyc-9355\n  ktwizard presets --json",
    "plan": "ktwizard plan --preset kimi-k2.7-code --host rtx-pro-6000-epyc-9355 --context 160k --concurrency 2\n"
    "  ktwizard plan --model /models/DeepSeek-V3 --format docker\n"
    "  ktwizard plan --preset deepseek-v2 --host 8x-l40-46gb --format kt-rules",
    "launch": "ktwizard launch --preset kimi-k2.7-code --weights /models/Kimi-K2.7-Code --context 160k\n"
    "  ktwizard launch --plan plan.json --detach\n  ktwizard launch --profile my-kimi --native",
    "stop": "ktwizard stop ktwizard-kimi-k2.7-code",
    "logs": "ktwizard logs ktwizard-kimi-k2.7-code -f --tail 100",
    "ps": "ktwizard ps\n  ktwizard ps --json",
    "restart": "ktwizard restart ktwizard-kimi-k2.7-code",
    "chat": "ktwizard chat ktwizard-kimi-k2.7-code\n  ktwizard chat http://127.0.0.1:30000 --prompt 'Write a haiku'",
    "fleet": "ktwizard fleet plan --preset kimi-k2.7-code --host a.yaml --host b.yaml --format k8s\n"
    "  ktwizard fleet launch --preset kimi-k2.7-code --weights /models/K --detach\n  ktwizard fleet status NAME",
    "fleet plan": "ktwizard fleet plan --preset kimi-k2.7-code --host big-2s.yaml --host rtx.yaml\n"
    "  ktwizard fleet plan --preset qwen3-235b-a22b --host xeon-2s-amx-4x4090-48gb --format compose --with-monitoring\n"
    "  ktwizard fleet plan --preset kimi-k2.7-code --host rtx.yaml --format k8s --weights-claim kimi-weights "
    "--k8s-nodes rtx.yaml=gpu-a,gpu-b",
    "fleet launch": "ktwizard fleet launch --preset kimi-k2.7-code --weights /models/K --detach\n"
    "  ktwizard fleet launch --plan fleet.json --router docker --router-image sglang-router:local",
    "fleet stop": "ktwizard fleet stop ktwizard-fleet-kimi-k2.7-code",
    "fleet status": "ktwizard fleet status ktwizard-fleet-kimi-k2.7-code --json",
    "monitor": "ktwizard monitor ktwizard-kimi-k2.7-code\n  ktwizard monitor ktwizard-kimi-k2.7-code --textual\n"
    "  ktwizard monitor --url http://127.0.0.1:30000 --once --json\n  ktwizard monitor --fleet NAME --web",
    "exporter": "ktwizard exporter --container ktwizard-kimi-k2.7-code --port 9400",
    "grafana": "ktwizard grafana --out ktwizard-dashboard.json",
    "bench": "ktwizard bench --url http://127.0.0.1:30000 --contexts 8k,32k --compare kimi-k2.7-code\n"
    "  ktwizard bench ktwizard-kimi-k2.7-code --prefill-only --contexts 4k,16k,32k --repeats 3",
    "calibration": "ktwizard calibration list\n  ktwizard calibration show 3f2a9c1d0b4e --json\n"
    "  ktwizard calibration reset --all",
    "calibration list": "ktwizard calibration list\n  ktwizard calibration list --json",
    "calibration show": "ktwizard calibration show 3f2a9c1d0b4e --json",
    "calibration reset": "ktwizard calibration reset 3f2a9c1d0b4e\n  ktwizard calibration reset --all",
    # the tag `image build` gives by default is the one plans and launches use: the examples keep it
    "image": "ktwizard image build\n  ktwizard image render --host rtx-pro-6000-epyc-9355 --out build/\n"
    "  ktwizard image build --context build/",
    "image render": "ktwizard image render --out build/\n  ktwizard image render --host xeon-2s-amx-4x4090-48gb "
    "--out build-xeon/",
    "image build": "ktwizard image build\n  ktwizard image build --context build/\n"
    "  ktwizard image build --cpu-class avx2",
    "doctor": "ktwizard doctor\n  ktwizard doctor --weights /models --port 30001\n  ktwizard doctor --json",
    "completion": 'eval "$(ktwizard completion bash)"\n  ktwizard completion zsh > ~/.zfunc/_ktwizard',
    "download": "ktwizard download --preset qwen3-30b-a3b\n"
    "  ktwizard download --model hf:Qwen/Qwen3-30B-A3B --dir /models/q3",
    "convert": "ktwizard convert --weights /models/Qwen3-30B-A3B --method AMXINT8",
    "placement": "ktwizard placement record ktwizard-qwen3-30b-a3b --prompts my-traffic.jsonl\n"
    "  ktwizard placement show routing.pt --preset qwen3-30b-a3b --host xeon-2s-amx-4x4090-48gb",
    "hosts": "ktwizard hosts\n  ktwizard hosts --format json",
    "profiles": "ktwizard profiles\n  ktwizard profiles --format json",
}
