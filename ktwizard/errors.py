"""One error type for everything a person can fix: a message and an exit code, never a traceback."""

from __future__ import annotations

# Exit codes of the command-line contract (docs/architecture.md).
EXIT_OK = 0
EXIT_RUNTIME = 1
EXIT_USAGE = 2
EXIT_NO_FIT = 3


class KtwizardError(Exception):
    """A failure explained in one line: what is wrong and what to do."""

    def __init__(self, message: str, exit_code: int = EXIT_RUNTIME) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


class BadInput(KtwizardError):
    """The user's input (flags, files, goals) is wrong: exit code 2."""

    def __init__(self, message: str) -> None:
        super().__init__(message, EXIT_USAGE)
