"""The fill-mask and classifier probes on tiny models, and the valence labelling against the hand labels.

    python benchmarks/probe_fill.py kappa [--axes FILE]     # Cohen's kappa of each method on the hand labels
    python benchmarks/probe_fill.py time [--threads 1]      # end-to-end seconds of each probe, bundled data

``kappa`` labels the words of questionnaires/en/social_distance_labels.csv with every automatic method and prints
Cohen's kappa (sklearn) and raw agreement with the hand labels; the instrument needs its embedding model (the
English default, from the local cache) and axes (``--axes``, or the shipped ones). ``time`` runs ``probe gender``,
``probe social-distance`` (then ``probe sentiment`` against it) with the bundled questionnaires on the anchors' BERT
(tests/probe/tiny_mlm.py) and a classification head on the same recipe, in a temporary folder, and prints the
prompts and seconds of each.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "probe"))  # tiny_mlm, the model's recipe

import tiny_mlm  # noqa: E402


def kappa(axes: str | None) -> None:
    from corpus_audit.probe.questionnaires.files import bundled_folder
    from corpus_audit.probe.questionnaires.social_distance import BASELINE, INSTRUMENT_TEMPLATE, prompt_table
    from corpus_audit.probe.questionnaires.valence import METHODS, agreement, auto_labels, read_labels

    hand = read_labels(bundled_folder("en") / "social_distance_labels.csv")
    table = prompt_table(bundled_folder("en"))
    contexts = table.loc[(table["condition"] == BASELINE) & (table["template"] == INSTRUMENT_TEMPLATE), "prompt"]
    contexts = [prompt.replace("<mask>", "{word}") for prompt in contexts]
    for method in METHODS:
        measure = None
        if method == "instrument":
            from corpus_audit.score.scorer import ModelSpec, score_texts

            embedder, trained = ModelSpec("en", axes_path=axes).load()

            def measure(sentences: list[str]) -> object:
                return score_texts(sentences, embedder, trained, show_progress=False)
        result = agreement(hand, auto_labels(list(hand), method, contexts, measure))
        print(f"{method:<11} kappa {result['kappa']:.3f}  agreement {result['agreement']:.3f}  n {result['n']}")


def timing(threads: int) -> None:
    from transformers import BertConfig, BertForSequenceClassification

    from corpus_audit.probe.questionnaires.gender import GenderOptions, run_gender
    from corpus_audit.probe.questionnaires.sentiment import SentimentOptions, run_sentiment
    from corpus_audit.probe.questionnaires.social_distance import SocialDistanceOptions, run_social_distance

    quiet = lambda message: None  # noqa: E731
    with tempfile.TemporaryDirectory() as root:
        model = str(tiny_mlm.save("bert", Path(root) / "bert"))
        tok = tiny_mlm.tokenizer("bert")
        config = BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                            intermediate_size=64, num_labels=3, id2label={0: "negative", 1: "neutral", 2: "positive"},
                            label2id={"negative": 0, "neutral": 1, "positive": 2})
        classifier = Path(root) / "classifier"
        tiny_mlm.formula_weights(BertForSequenceClassification(config)).save_pretrained(classifier)
        tok.save_pretrained(classifier)
        runs = [("gender", lambda: run_gender(GenderOptions(model, threads=threads), Path(root) / "g", quiet)),
                ("social-distance", lambda: run_social_distance(SocialDistanceOptions(model, threads=threads),
                                                                Path(root) / "sd", quiet)),
                ("sentiment", lambda: run_sentiment(SentimentOptions(str(classifier), threads=threads,
                                                                     social_distance=str(Path(root) / "sd")),
                                                    Path(root) / "s", quiet))]
        for name, run in runs:
            started = time.perf_counter()
            summary = run()
            print(f"{name:<16} {summary.results['counts']['prompts']:>6} prompts  "
                  f"{time.perf_counter() - started:7.1f} s  (stages: "
                  + ", ".join(f"{stage} {seconds:.1f} s" for stage, seconds in summary.seconds.items()) + ")")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("kappa").add_argument("--axes", default=None)
    sub.add_parser("time").add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    if args.command == "kappa":
        kappa(args.axes)
    else:
        timing(args.threads)


if __name__ == "__main__":
    main()
