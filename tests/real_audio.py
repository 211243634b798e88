"""Real audio from Debian packages for the tests: skip with the reason where it is missing, and
fail instead under CI (``CI`` set), where ``make test`` installs it (requirements/debian-audio.sh)."""

from __future__ import annotations

import os

import pytest


def missing(reason: str) -> None:
    """Skip the test with ``reason``; under CI fail with it (the packages should be there)."""
    note = f"{reason} (make test installs it as root on Debian: requirements/debian-audio.sh)"
    if os.environ.get("CI"):
        pytest.fail(f"CI is set but {note}")
    pytest.skip(note)


def prompt_voices_or_skip(languages: tuple[str, ...]) -> list:
    """The installed recorded-prompt voices of ``languages`` with their transcripts, in that order."""
    from interbias.corpora.prompts import prompt_voices

    found = {v.language: v for v in prompt_voices() if v.transcripts.is_file()}
    absent = [lang for lang in languages if lang not in found]
    if absent:
        packages = " ".join(f"asterisk-core-sounds-{lang} asterisk-core-sounds-{lang}-wav" for lang in absent)
        missing(f"the recorded prompts are not installed: apt-get install {packages}")
    return [found[lang] for lang in languages]
