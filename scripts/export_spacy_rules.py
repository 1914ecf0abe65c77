"""Export the installed spaCy's blank-pipeline tokenizer rules and sentencizer punctuation for each language into
``corpus_audit/corpus/spacy_rules/<lang>.json`` (see ``corpus_audit/corpus/spacy_tokenizer.py``). Run it after
upgrading spaCy: until then the filter asks spaCy itself (slower to start), and tests/corpus/test_spacy_tokenizer.py
says the shipped rules are stale.

    python scripts/export_spacy_rules.py
"""

from __future__ import annotations

import json

from corpus_audit.common.atomic import write_text_atomic
from corpus_audit.corpus.spacy_tokenizer import export_rules, rules_path
from corpus_audit.languages import LANGUAGES


def main() -> None:
    for language in LANGUAGES.values():
        path = rules_path(language.spacy_code)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, json.dumps(export_rules(language.spacy_code), ensure_ascii=False, indent=1) + "\n")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
