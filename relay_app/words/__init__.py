"""The chat's words, one catalogue per language (catalogue.py): `words_for(RELAY_LANGUAGE)`."""

from __future__ import annotations

from .catalogue import Plural, Said, Words
from .en import ENGLISH
from .ru import RUSSIAN

LANGUAGES: dict[str, Words] = {"en": ENGLISH, "ru": RUSSIAN}


def words_for(language: str) -> Words:
    """The catalogue for a language code RELAY_LANGUAGE accepts (config.py checks it)."""
    return LANGUAGES[language]


__all__ = ["ENGLISH", "LANGUAGES", "RUSSIAN", "Plural", "Said", "Words", "words_for"]
