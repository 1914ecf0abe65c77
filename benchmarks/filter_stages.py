"""Where the filter's time goes, stage by stage, in CPU seconds of one process (issue 43's "what bounds it").

The stages of the default local path on a JSON Lines file: this process's pre-filter (``LinePrefilter.split`` of each
1 MB batch), then a worker's share: reading the lines let through into documents, splitting them into lines, the
matcher's candidate spans (one Aho-Corasick search per document), the segmenter's sentences (counted, or cut where a
span lies), ``find`` on the sentences given, and the rest of ``iter_kept_sentences`` (rows and counts). Each stage is
timed alone on the same inputs (best of ``--repeats``, caches warm: the tokenizer's word cache filled by a first
pass, whose extra cost is printed as the cold cost), with grep's CPU seconds on the same file beside them.

    python benchmarks/filter_stages.py CORPUS.jsonl [--lang en] [--terms paper] [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from pathlib import Path

from filter_throughput import grep_pattern, timed

from corpus_audit.corpus.documents import ReaderOptions, ReadStats
from corpus_audit.corpus.filter import filter_unit, init_filter_worker, iter_kept_sentences
from corpus_audit.corpus.kept import FilterSummary
from corpus_audit.corpus.matcher import TERM_SETS, IllnessMatcher
from corpus_audit.corpus.prefilter import line_prefilter
from corpus_audit.corpus.readers import iter_line_batches, read_line_batch
from corpus_audit.corpus.segment import Segmenter


def best(work: Callable[[], object], repeats: int) -> tuple[float, object]:
    """(least CPU seconds over ``repeats`` runs of ``work``, its result)."""
    seconds = []
    for _ in range(repeats):
        start = time.process_time()
        result = work()
        seconds.append(time.process_time() - start)
    return min(seconds), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--lang", default="en", choices=["en", "es"])
    parser.add_argument("--terms", default="paper", choices=TERM_SETS)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    size = args.corpus.stat().st_size / 1e6
    matcher, segmenter, options = IllnessMatcher.for_language(args.lang, args.terms), Segmenter(args.lang), ReaderOptions()
    start = time.process_time()
    segmenter.prepare()
    scanner = line_prefilter(matcher, options.text_field)
    setup = time.process_time() - start
    init_filter_worker(options, matcher, segmenter, args.lang, ())
    batches = list(iter_line_batches([str(args.corpus)], ReadStats()))
    cold, _ = best(lambda: [filter_unit(scanner.split(batch).runs) for batch in batches], 1)
    split, units = best(lambda: [scanner.split(batch).runs for batch in batches], args.repeats)

    def read() -> list:
        documents = []
        for unit in units:
            stats = ReadStats()  # one per unit, as filter_unit counts
            for run in unit:
                documents.extend(read_line_batch(run, options, stats))
        return documents

    stages = {"pre-filter split (this process)": split}
    stages["read the lines let through"], documents = best(read, args.repeats)
    stages["lines"], lines = best(lambda: [segmenter.lines(doc.text)[0] for doc in documents], args.repeats)
    stages["candidate spans"], spans = best(lambda: [matcher.candidate_spans(doc_lines) for doc_lines in lines],
                                            args.repeats)
    pairs = [(doc_lines, doc_spans) for doc_lines, (has, doc_spans) in zip(lines, spans) if has]
    stages["sentences (count, cut)"], sentences = best(
        lambda: [segmenter.document_sentences(doc_lines, doc_spans) for doc_lines, doc_spans in pairs], args.repeats)
    given = [sentence for _, kept in sentences for _, sentence in kept]  # type: ignore[union-attr]
    stages["find"], _ = best(lambda: [matcher.find(sentence) for sentence in given], args.repeats)
    whole, rows = best(lambda: list(iter_kept_sentences(documents, matcher, segmenter, FilterSummary(lang=args.lang))),
                       args.repeats)
    stages["rows and counts (the rest)"] = whole - sum(stages[name] for name in list(stages)[2:])
    stages["worker: filter_unit, all"], _ = best(lambda: [filter_unit(unit) for unit in units], args.repeats)
    _, grep_cpu, _ = timed(["grep", "-c", "-i", "-E", grep_pattern(args.lang, args.terms), str(args.corpus)],
                           {**os.environ, "LC_ALL": "C.UTF-8"})
    print(f"{args.corpus.name}: {size:.1f} MB, {len(documents)} documents let through, {len(pairs)} with a candidate, "
          f"{len(given)} sentences given to find, {len(rows)} kept; terms {args.terms}")  # type: ignore[arg-type]
    for name, seconds in stages.items():
        print(f"  {name:34s} {seconds:6.3f} CPU s  ({seconds / size * 1000:5.1f} ms per MB)")
    print(f"  {'cold cost (tokenizer, first pass)':34s} {cold - split - stages['worker: filter_unit, all']:6.3f} CPU s")
    print(f"  {'set-up (rules, pre-filter build)':34s} {setup:6.3f} CPU s")
    print(f"  {'grep -c -i -E, whole process':34s} {grep_cpu:6.3f} CPU s  ({grep_cpu / size * 1000:5.1f} ms per MB)")


if __name__ == "__main__":
    main()
