"""The errors a user can fix. Every such error derives from :class:`UserError`, so the command line maps all of
them to one message and exit status (``cli/errors.py``) without naming each kind."""

from __future__ import annotations


class UserError(Exception):
    """A problem the user can fix (an input, option, data file or model); its message says what and where."""


class LexiconError(UserError, ValueError):
    """A lexicon file (illness lexicon or SCM seed lexicon) is malformed; the message names the file and line."""


class Interrupted(UserError):
    """A run stopped by the user (Ctrl-C); the message says what is saved and how to resume."""

    exit_code = 130  # the shell's code for a process ended by SIGINT
