"""A text-classification model (e.g. a sentiment classifier) by hub name or local folder, safetensors only, as the
sentiment probe of Mei et al. (2023) uses it: the label of highest probability for each text.

The model's labels are mapped to ``negative``, ``neutral`` and ``positive`` by their names (``NEGATIVE``, ``neg``,
``LABEL_NEGATIVE``...); a model whose names do not say (``LABEL_0``) needs ``negative_label`` to name its negative
label, and its other labels then count as not negative.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from corpus_audit.common.log import to_stderr
from corpus_audit.probe.models.masked import ModelLoadError, device_of, load_pretrained

VALENCES = ("negative", "neutral", "positive")
#: Texts per forward pass: short prompts, so the pass stays small.
BATCH = 64


def valence_of(label: str) -> str | None:
    """``negative``, ``neutral`` or ``positive`` when the label's name says which (by its prefix), else None."""
    name = label.lower().removeprefix("label_").strip()
    for valence in VALENCES:
        if name.startswith(valence[:3]):
            return valence
    return None


@dataclass
class Classification:
    """The label of highest probability of one text, its valence and the probability of each valence."""

    label: str
    valence: str
    probabilities: dict[str, float]


class TextClassifier:
    """A sequence-classification model with its tokenizer. ``valences`` maps each label to its valence."""

    def __init__(self, model: Any, tokenizer: Any, model_id: str, device: str = "cpu",
                 negative_label: str | None = None) -> None:
        self.model = model.to(device_of(device)).eval()
        self.tokenizer = tokenizer
        self.model_id = model_id
        self.device = device
        labels = [str(model.config.id2label[i]) for i in range(model.config.num_labels)]
        if negative_label is not None:
            if negative_label not in labels:
                raise ModelLoadError(f"{model_id}: no label {negative_label!r} (its labels: {', '.join(labels)})")
            self.valences = {label: "negative" if label == negative_label else (valence_of(label) or "other")
                             for label in labels}
        else:
            named = {label: valence_of(label) for label in labels}
            if "negative" not in named.values():
                raise ModelLoadError(f"{model_id}: none of its labels ({', '.join(labels)}) says negative; name the "
                                     "negative one with --negative-label")
            self.valences = {label: valence or "other" for label, valence in named.items()}
        self.labels = labels

    @classmethod
    def load(cls, name_or_path: str, device: str = "cpu", log: Callable[[str], None] = to_stderr,
             threads: int | None = None, negative_label: str | None = None) -> TextClassifier:
        """Load ``name_or_path`` with ``AutoModelForSequenceClassification``, safetensors only."""
        from transformers import AutoModelForSequenceClassification

        return cls(*load_pretrained(AutoModelForSequenceClassification, name_or_path, what="text classifier",
                                    meaning="labels", device=device, threads=threads, log=log),
                   device, negative_label)

    def classify(self, texts: Sequence[str]) -> list[Classification]:
        """The label of highest probability of each text, in order."""
        import torch

        out = []
        with torch.inference_mode():
            for start in range(0, len(texts), BATCH):
                inputs = self.tokenizer(list(texts[start:start + BATCH]), padding=True, truncation=True,
                                        return_tensors="pt").to(self.device)
                probabilities = torch.softmax(self.model(**inputs).logits.float(), dim=-1).tolist()
                for row in probabilities:
                    best = max(range(len(row)), key=row.__getitem__)
                    by_valence: dict[str, float] = {}
                    for label, p in zip(self.labels, row):
                        by_valence[self.valences[label]] = by_valence.get(self.valences[label], 0.0) + p
                    out.append(Classification(self.labels[best], self.valences[self.labels[best]], by_valence))
        return out
