"""The one exception type that the CLI turns into a one-line error and a non-zero exit."""

__all__ = ["FtslideError"]


class FtslideError(Exception):
    """A user-facing error: the message says what went wrong and what to do."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code
