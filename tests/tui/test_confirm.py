"""The yes/no question before what cannot be undone: Enter takes the action the question offers, and the keys show."""

from __future__ import annotations

import asyncio

from waits import until


def ask(keys: list[str]) -> tuple[bool | None, str]:
    """The answer after these keys, and what the box showed before them."""
    from textual.app import App

    from ktwizard.tui.confirm import Confirm

    answers: list[bool | None] = []

    class Host(App):
        def on_mount(self) -> None:
            self.push_screen(Confirm("Launch the model?", yes="Launch"), answers.append)

    async def go() -> str:
        app = Host()
        async with app.run_test(size=(80, 24)) as pilot:
            await until(pilot, lambda: isinstance(app.screen, Confirm), "the question")
            shown = " ".join(str(w.render()) for w in app.screen.query("Static, Button"))
            for key in keys:
                await pilot.press(key)
            await until(pilot, lambda: answers, "an answer")
            return shown

    shown = asyncio.run(go())
    return answers[0], shown


def test_enter_takes_the_offered_action_and_the_keys_are_shown():
    """Focus starts on the primary action (it started on Cancel: Enter cancelled a launch without a word), and the
    question says which keys answer it: y (was hidden), Enter, Esc."""
    yes, shown = ask(["enter"])
    assert yes is True
    assert "y" in shown.split() or "(y)" in shown, shown
    assert "Esc" in shown and "Enter" in shown, shown


def test_y_and_escape_answer_as_their_labels_say():
    assert ask(["y"])[0] is True
    assert ask(["escape"])[0] is False
