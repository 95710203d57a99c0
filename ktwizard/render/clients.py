"""How to connect clients to the planned server: base URL, a curl smoke test, GitHub Copilot BYOK, and others."""

from __future__ import annotations

import json
import shlex

from ktwizard.planner.types import Plan
from ktwizard.render.quote import comment, python_literal, shell_line, yaml_flow

# GitHub Copilot turns on its Kimi compatibility handling when the model id contains one of these (seed recipe).
COPILOT_KIMI_KEYS = ("kimi-k2.6", "kimi-k2.7-code")


def server_url(bind: str, port: int) -> str:
    """Where this machine reaches a server listening on `bind` (every interface is reached on loopback)."""
    from ktwizard.inputs import url_host

    host = "127.0.0.1" if bind in ("0.0.0.0", "::") else bind
    return f"http://{url_host(host)}:{port}"


def _base(plan: Plan, host: str | None) -> str:
    return f"http://{host}:{plan.goals.port}" if host else server_url(plan.goals.bind, plan.goals.port)


def copilot_entry(plan: Plan, host: str | None = None) -> tuple[dict, list[str]]:
    value = plan.flag("--context-length")
    context = int(value) if isinstance(value, int | str) else 0
    out_tokens = min(32768, context // 5)
    model = plan.served_name
    notes = []
    if plan.model.id.startswith("kimi") and not any(k in model for k in COPILOT_KIMI_KEYS):
        notes.append(
            f"served model id '{model}' lacks kimi-k2.6 / kimi-k2.7-code: Copilot's Kimi fixes will not apply; serve "
            "it under such an id"
        )
    entry = {
        "name": "Local",
        "vendor": "customendpoint",
        "apiType": "chat-completions",  # /v1/messages was unreliable with SGLang + Kimi + Copilot (recipe)
        "models": [
            {
                "id": model,
                "name": plan.model.name,
                "url": f"{_base(plan, host)}/v1/chat/completions",
                "toolCalling": plan.flag("--tool-call-parser") is not None,
                "vision": plan.model.id.startswith(("kimi-k2.5", "kimi-k2.6", "kimi-k2.7")),
                "thinking": plan.flag("--reasoning-parser") is not None,
                "streaming": True,
                "maxInputTokens": context - out_tokens,
                "maxOutputTokens": out_tokens,
            }
        ],
    }
    return entry, notes


def clients_text(plan: Plan, host: str | None = None) -> str:
    base = _base(plan, host)
    model = plan.served_name
    body = json.dumps(
        {"model": model, "messages": [{"role": "user", "content": "Say hello in one word."}], "max_tokens": 16}
    )
    entry, notes = copilot_entry(plan, host)
    api = f"{base}/v1"
    keyed = plan.goals.api_key_file
    # the key itself is never written here: the snippets read it from its file or from $SGLANG_API_KEY
    key = "$SGLANG_API_KEY" if keyed else "none"
    auth = ' -H "Authorization: Bearer $SGLANG_API_KEY"' if keyed else ""
    shell_key = '"$SGLANG_API_KEY"' if keyed else "none"  # a variable reference, expanded by the user's shell
    out = [
        f"OpenAI-compatible base URL: {base}/v1   (model id: {comment(model)}; "
        + (
            f"API key: the one in {comment(keyed)}; export SGLANG_API_KEY=$(cat {shlex.quote(keyed)})"
            if keyed
            else "no API key is checked, use any string"
        )
        + ")",
        "",
        "Smoke test:",
        f"  curl -s {shlex.quote(base + '/v1/chat/completions')} -H 'Content-Type: application/json'{auth} -d "
        f"{shlex.quote(body)}",
        "",
        "GitHub Copilot BYOK (VS Code: Chat > Manage Models > custom endpoint), chat-completions API:",
        json.dumps(entry, indent=2),
        *[f"  note: {n}" for n in notes],
        "",
        "Python (openai SDK):",
        f"  from openai import OpenAI; c = OpenAI(base_url={python_literal(base + '/v1')}, "
        + ("api_key=__import__('os').environ['SGLANG_API_KEY'])" if keyed else "api_key='none')"),
        f"  print(c.chat.completions.create(model={python_literal(model)}, "
        f"messages=[{{'role': 'user', 'content': 'hi'}}]).choices[0].message.content)",
        "",
        "Continue (config.yaml):",
        "  "
        + yaml_flow({"models": [{"name": model, "provider": "openai", "model": model, "apiBase": api, "apiKey": key}]}),
        "",
        "Open WebUI:  " + shell_line([f"OPENAI_API_BASE_URL={api}"]) + f" OPENAI_API_KEY={shell_key}",
        "aider:       "
        + shell_line(["aider", "--openai-api-base", api, "--model", f"openai/{model}"])
        + f" --openai-api-key {shell_key}",
        "LiteLLM:     "
        + yaml_flow(
            {"model_list": [{"model_name": model, "litellm_params": {"model": f"openai/{model}", "api_base": api}}]}
        ),
    ]
    if plan.goals.bind == "127.0.0.1":
        out.append(
            "\nThe server listens on 127.0.0.1 only; for other machines, launch with --bind 0.0.0.0 behind a "
            "firewall or an SSH tunnel."
        )
    return "\n".join(out) + "\n"
