"""The wizard's model list shows the domain's verdict for the probed host: "fits" with its headline, or the
obstacle (driven through Textual's Pilot)."""

from __future__ import annotations

import asyncio

from ktwizard.host.spec import load_host
from ktwizard.models.presets import get_preset, recipe_for
from ktwizard.planner.screening import screen


def test_model_list_shows_fits_and_obstacles():
    from ktwizard.tui.app import WizardApp

    host = "xeon-2s-amx-4x4090-48gb"

    async def go():
        app = WizardApp(host=load_host(host), host_ref=host, gpus=False)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("n")
            await pilot.pause()
            app.screen.query_one("#search").value = "qwen3.5-35b"
            await pilot.pause()
            ol = app.screen.query_one("#presets")
            labels = {
                str(ol.get_option_at_index(i).id): str(ol.get_option_at_index(i).prompt) for i in range(ol.option_count)
            }
            assert labels["qwen3.5-35b-a3b"].endswith("✓ fits, 256/256 on GPU, 128k ctx")
            app.screen.query_one("#search").value = "r1-nvfp4"
            await pilot.pause()
            label = str(ol.get_option_at_index(0).prompt)
            assert label.endswith("✗ GPU architecture lacks the kernel")
            # the list shows the domain's verdict, not its own: the same text screen() gives
            p = get_preset("qwen3.5-122b-a10b")
            app.screen.query_one("#search").value = "qwen3.5-122b-a10b"
            await pilot.pause()
            shown = {
                str(ol.get_option_at_index(i).id): str(ol.get_option_at_index(i).prompt) for i in range(ol.option_count)
            }
            assert shown[p.id].endswith(screen(p.spec(), load_host(host), p.sglang, recipe_for(p.id)).badge)

    asyncio.run(go())
