"""A yes/no question over the current screen, for what cannot be undone (a launch, stopping a server). The question
is the safeguard: once asked, Enter takes the action it offers (focus on Cancel made Enter cancel a launch without a
word), and the keys that answer it are written under the buttons."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static


class Confirm(ModalScreen[bool]):
    DEFAULT_CSS = """
    Confirm { align: center middle; }
    #confirm-box { width: 70; max-width: 95%; height: auto; border: thick $warning; padding: 1 2; background: $panel; }
    #confirm-buttons { height: auto; margin-top: 1; }
    #confirm-buttons Button { margin-right: 2; }
    #confirm-keys { color: $text-muted; margin-top: 1; }
    """
    BINDINGS = [Binding("escape", "dismiss(False)", "cancel"), Binding("y", "dismiss(True)", "yes", show=False)]

    def __init__(self, question: str, yes: str = "Yes") -> None:
        super().__init__()
        self.question, self.yes = question, yes

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-box"):
            yield Static(self.question, id="confirm-question")
            with Horizontal(id="confirm-buttons"):
                yield Button(f"{self.yes} (y)", id="yes", variant="warning")
                yield Button("Cancel (Esc)", id="no")
            yield Static(f"Enter or y: {self.yes.lower()} · Esc: cancel · Tab: the other button", id="confirm-keys")

    def on_mount(self) -> None:
        self.query_one("#yes", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")


class Choose(ModalScreen[int | None]):
    """One of a few actions (a button each, its number a key), or none: Esc. The wizard's "relaunch with"."""

    DEFAULT_CSS = """
    Choose { align: center middle; }
    #choose-box { width: 76; max-width: 95%; height: auto; border: thick $warning; padding: 1 2; background: $panel; }
    #choose-box Button { width: 100%; margin-top: 1; }
    #choose-keys { color: $text-muted; margin-top: 1; }
    """
    BINDINGS = [
        Binding("escape", "dismiss(None)", "cancel"),
        *(Binding(str(i), f"pick({i})", show=False) for i in range(1, 10)),
    ]

    def __init__(self, question: str, choices: list[str]) -> None:
        super().__init__()
        self.question, self.choices = question, choices

    def compose(self) -> ComposeResult:
        with Vertical(id="choose-box"):
            yield Static(self.question, id="choose-question")
            for i, label in enumerate(self.choices, 1):
                yield Button(f"{i}  {label}", id=f"choice-{i}", variant="warning" if i == 1 else "default")
            yield Static(f"1-{len(self.choices)} or Enter: that one · Esc: cancel", id="choose-keys")

    def on_mount(self) -> None:
        self.query_one("#choice-1", Button).focus()

    def action_pick(self, n: int) -> None:
        if 1 <= n <= len(self.choices):
            self.dismiss(n - 1)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(int(str(event.button.id).split("-")[1]) - 1)
