"""The SCM seed lexicon: adjectives with a dimension (warmth/competence) and a polarity (high/low)."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from corpus_audit.common.errors import LexiconError
from corpus_audit.common.resources import data_dir, data_file

DIMENSIONS = ("warmth", "competence")
POLARITIES = {"high": 1, "low": -1}


@dataclass(frozen=True)
class SeedAdjective:
    word: str
    dimension: str  # "warmth" or "competence"
    polarity: int  # +1 high, -1 low

    @property
    def axis(self) -> int:
        """Column of this adjective's dimension in a (warmth, competence) array."""
        return DIMENSIONS.index(self.dimension)


def seed_lexicon_path(lang: str) -> Path:
    return data_file("lexicons", lang, "scm_seed.csv")


def forms_table_path(lang: str) -> Path:
    """The table of gender/number forms of a language's SCM adjectives (it exists for languages with agreement)."""
    return data_dir("lexicons") / lang / "scm_forms.csv"


def load_seed_lexicon(path_or_lang: str | Path) -> list[SeedAdjective]:
    """Read a seed lexicon CSV (columns ``word,dimension,polarity``), or the bundled one for a language."""
    path = Path(path_or_lang) if Path(path_or_lang).suffix == ".csv" else seed_lexicon_path(str(path_or_lang))
    adjectives: list[SeedAdjective] = []
    seen: set[str] = set()
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        missing = {"word", "dimension", "polarity"} - set(reader.fieldnames or [])
        if missing:
            raise LexiconError(f"{path}: missing column(s) {sorted(missing)}")
        for row in reader:
            line = reader.line_num
            word = (row["word"] or "").strip()
            dimension = (row["dimension"] or "").strip().lower()
            polarity = (row["polarity"] or "").strip().lower()
            if not word:
                raise LexiconError(f"{path}, line {line}: empty word")
            if dimension not in DIMENSIONS:
                raise LexiconError(f"{path}, line {line}: dimension {dimension!r} is not one of {DIMENSIONS}")
            if polarity not in POLARITIES:
                raise LexiconError(f"{path}, line {line}: polarity {polarity!r} is not 'high' or 'low'")
            if word in seen:
                raise LexiconError(f"{path}, line {line}: duplicate word {word!r}")
            seen.add(word)
            adjectives.append(SeedAdjective(word, dimension, POLARITIES[polarity]))
    if not adjectives:
        raise LexiconError(f"{path}: no adjectives")
    return adjectives
