"""Textual's command palette with one guard: a page key pressed before the palette has listed any command.

Textual 8.2's OptionList._move_page reads `_index_to_line[highlighted or 0]`, which does not exist while the list
is still empty (or not yet laid out), so Ctrl-P then PageUp in one burst ends the app with `KeyError: 0`. Paging
a list with nothing laid out does nothing here, as paging past its end does. (To report upstream: OptionList
page_up/page_down on an empty or not yet rendered list raise KeyError in _move_page.)"""

from __future__ import annotations

from textual.command import CommandList, CommandPalette


class SafeCommandPalette(CommandPalette):
    def _action_command_list(self, action: str) -> None:
        if action.startswith("page_") and self.query_one(CommandList).option_count == 0:
            return
        try:
            super()._action_command_list(action)
        except KeyError:  # the list has options but has not laid them out yet: the same bug, one frame later
            return
