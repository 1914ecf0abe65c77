"""Generate the functional test suite for health stigma (issue 41) from its hand-written templates and fillers.

    python scripts/build_stigma_suite.py --lang en [--root REPO]

Reads ``templates/stigma_suite_functions.csv``, ``templates/<lang>/stigma_suite_templates.csv`` and
``templates/<lang>/stigma_suite_fillers.csv`` below REPO (default: this checkout) and writes
``templates/<lang>/stigma_suite.csv``, one row per case. The files and their columns are described in
``templates/README.md``. The build is deterministic: the same files give the same suite, byte for byte.

Each template with a slot (``{group}``, ``{person}``, ``{illness}``, ...) is filled with up to
:data:`FILLS_PER_TEMPLATE` fillers of that slot, chosen so that a template mixes illness types, illnesses and
mention forms and every filler is used about as often as the others; agreement markers ``{g:o/a}`` take their first
alternative for a filler of gender ``m``, the second for ``f``. A template without a slot names the illness itself
and gives one case. Templates are split by template within each function (about half ``test``, a third ``train``,
the rest ``dev``), so that no template straddles two splits. A template with a ``split`` of its own (templates
written after the split was dealt, e.g. more training wordings) is not dealt: its cases come after all the others,
so that adding one leaves every other case, its uid and its split as they were.

Every filled sentence is read by the language's illness matcher (the lexicon ``lexicons/<lang>/illnesses.csv`` of
REPO, or the bundled one): the filler's ``matched_term`` must be found inside the filler, with the filler's
illness, type and form (obfuscated spellings are exempt). Labels are checked against the function and the rules of
``docs/labelling.md``. Every problem is reported with its file and line, and nothing is written while there is one.
"""

from __future__ import annotations

import argparse
import csv
import io
import random
import re
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from corpus_audit.audit.label_studio import LABELLED_DIMENSION
from corpus_audit.common.atomic import write_text_atomic
from corpus_audit.common.csv_rows import read_csv_rows
from corpus_audit.corpus.matcher import FORMS, IllnessMatcher, default_lexicon_path, fold, load_lexicon
from corpus_audit.stigma.judgement import CATEGORIES, JUDGEMENT
from corpus_audit.stigma.quadrants import GROUPS

ROOT = Path(__file__).resolve().parents[1]
SEED = 4141
#: How many fillers each template with a slot is filled with (fewer where its slot has fewer fillers).
FILLS_PER_TEMPLATE = 4
#: The splits, in the order a function's shuffled templates are dealt to them, and their shares of templates.
SPLIT_SHARES = (("test", 0.50), ("train", 0.35), ("dev", 0.15))
#: A function needs this many templates for every split to get one.
MIN_TEMPLATES = 4
#: The suite's size targets per language (issue 41): all cases, and cases of each function.
MIN_CASES = {"en": 1200, "es": 800}
MIN_CASES_PER_FUNCTION = {"en": 25, "es": 16}
SLOTS = ("group", "person", "slur_group", "slur_person", "illness", "slur", "obfuscated_group", "slang_adj")
#: Slots whose fillers are spelt to dodge filters: the matcher is not expected to find them.
OBFUSCATED_SLOTS = ("obfuscated_group",)
#: Slots of slurs aimed at people: a judgement that uses one is stigmatising (guideline H5), negated or not.
SLUR_AT_PEOPLE_SLOTS = ("slur_group", "slur_person")
GENDERS = ("m", "f")
KINDS = {"stigmatising": "yes", "hard_negative": "no"}

FUNCTION_COLUMNS = ("function", "kind", "stigmatising", "description")
TEMPLATE_COLUMNS = ("template_id", "function", "template", "category", "stigmatising", "dimension",
                    "stigma_strength", "note")
FILLER_COLUMNS = ("slot", "text", "matched_term", "illness", "illness_type", "form")
CASE_COLUMNS = ("uid", "function", "kind", "template_id", "split", "sentence", "matched_term", "form", "illness",
                "illness_type", "category", "stigmatising", "dimension", "stigma_strength", "note")

SLOT_MARK = re.compile(r"\{([a-z_]+)\}")
AGREEMENT_MARK = re.compile(r"\{g:([^{}/]*)/([^{}/]*)\}")
#: What stands before a slot that opens a sentence: nothing, or the end of a sentence, then quotes or brackets.
SENTENCE_START = re.compile(r"(?:^|[.!?]\s+)[\"'“‘(¿¡]*$")


class SuiteError(ValueError):
    """The suite's files have problems; the message lists each one with its file and line."""


@dataclass(frozen=True)
class Function:
    name: str
    kind: str
    stigmatising: str


@dataclass(frozen=True)
class Filler:
    line: int
    slot: str
    text: str
    matched_term: str
    illness: str
    illness_type: str
    form: str
    gender: str


@dataclass(frozen=True)
class Template:
    line: int
    template_id: str
    function: str
    template: str
    slot: str | None
    category: str
    stigmatising: str
    dimension: str
    stigma_strength: str
    note: str
    slots_allowed: tuple[str, ...]
    split: str = ""  # pinned to this split; "": dealt by split_templates


@dataclass(frozen=True)
class SuitePaths:
    functions: Path
    templates: Path
    fillers: Path
    suite: Path
    lexicon: Path


def suite_paths(root: Path, lang: str) -> SuitePaths:
    """Where the suite of ``lang`` below ``root`` is read from and written to, and the lexicon that checks it."""
    folder = root / "templates" / lang
    own_lexicon = root / "lexicons" / lang / "illnesses.csv"
    return SuitePaths(root / "templates" / "stigma_suite_functions.csv", folder / "stigma_suite_templates.csv",
                      folder / "stigma_suite_fillers.csv", folder / "stigma_suite.csv",
                      own_lexicon if own_lexicon.is_file() else default_lexicon_path(lang))


def read_functions(path: Path) -> dict[str, Function]:
    problems: list[str] = []
    functions: dict[str, Function] = {}
    for line, row in read_csv_rows(path, FUNCTION_COLUMNS, SuiteError):
        where = f"{path}:{line}"
        name, kind, stigmatising = row["function"], row["kind"], row["stigmatising"]
        if not name or name in functions:
            problems.append(f"{where}: function {name!r} is empty or defined twice")
        elif KINDS.get(kind) != stigmatising:
            problems.append(f"{where}: kind {kind!r} with stigmatising {stigmatising!r} (expected "
                            + " or ".join(f"{k} with {v}" for k, v in KINDS.items()) + ")")
        else:
            functions[name] = Function(name, kind, stigmatising)
    _raise_if(problems)
    return functions


def read_fillers(path: Path, lexicon_path: Path) -> list[Filler]:
    """The fillers, each checked against the lexicon: its term, the term's illness, type and form."""
    entries = load_lexicon(lexicon_path)
    labels_of: dict[str, set[tuple[str, str, str]]] = defaultdict(set)
    for entry in entries:
        labels_of[fold(entry.term)].add((entry.illness, entry.type, entry.form))
    type_of_illness = {entry.illness: entry.type for entry in entries}
    problems: list[str] = []
    fillers: list[Filler] = []
    seen: dict[tuple[str, str], int] = {}
    for line, row in read_csv_rows(path, FILLER_COLUMNS, SuiteError):
        filler = Filler(line, row["slot"], row["text"], row["matched_term"], row["illness"], row["illness_type"],
                        row["form"], row.get("gender", ""))
        where = f"{path}:{line} ({filler.text!r})"
        found = _filler_problems(filler, labels_of, type_of_illness, lexicon_path)
        key = (filler.slot, fold(filler.text))
        if key in seen:
            found.append(f"the same text as line {seen[key]}")
        seen.setdefault(key, line)
        problems += [f"{where}: {problem}" for problem in found]
        fillers.append(filler)
    _raise_if(problems)
    return fillers


def _filler_problems(filler: Filler, labels_of: dict[str, set[tuple[str, str, str]]],
                     type_of_illness: dict[str, str], lexicon_path: Path) -> list[str]:
    if filler.slot not in SLOTS:
        return [f"slot {filler.slot!r} is not one of {', '.join(SLOTS)}"]
    found = []
    if not filler.text or "{" in filler.text or "}" in filler.text:
        found.append("text is empty or holds a brace")
    if filler.gender not in ("", *GENDERS):
        found.append(f"gender must be empty, m or f, not {filler.gender!r}")
    if filler.illness_type not in GROUPS or filler.form not in FORMS:
        found.append(f"illness_type must be one of {', '.join(GROUPS)} and form one of {', '.join(FORMS)}, "
                     f"not {filler.illness_type!r} and {filler.form!r}")
    labels = (filler.illness, filler.illness_type, filler.form)
    if filler.slot in OBFUSCATED_SLOTS:
        if filler.matched_term:
            found.append("an obfuscated spelling leaves matched_term empty")
        if type_of_illness.get(filler.illness) != filler.illness_type:
            found.append(f"illness {filler.illness!r} of type {filler.illness_type!r} is not in {lexicon_path}")
    elif not filler.matched_term:
        found.append("matched_term is empty (only obfuscated spellings may leave it empty)")
    elif fold(filler.matched_term) not in labels_of:
        found.append(f"matched_term {filler.matched_term!r} is not a term of {lexicon_path}")
    elif labels not in labels_of[fold(filler.matched_term)]:
        found.append(f"{filler.matched_term!r} is {' or '.join(map(str, sorted(labels_of[fold(filler.matched_term)])))}"
                     f" in {lexicon_path}, not {labels} (illness, illness_type, form)")
    elif not re.search(rf"(?<!\w){re.escape(fold(filler.matched_term))}(?!\w)", fold(filler.text)):
        found.append(f"matched_term {filler.matched_term!r} is not a word of the text")
    return found


def read_templates(path: Path, lang: str, functions: dict[str, Function],
                   fillers_by_slot: dict[str, list[Filler]]) -> list[Template]:
    problems: list[str] = []
    templates: list[Template] = []
    seen: set[str] = set()
    for line, row in read_csv_rows(path, TEMPLATE_COLUMNS, SuiteError):
        text = row["template"]
        slots = SLOT_MARK.findall(AGREEMENT_MARK.sub("", text))
        template = Template(line, row["template_id"], row["function"], text, slots[0] if slots else None,
                            row["category"], row["stigmatising"], row["dimension"], row["stigma_strength"],
                            row["note"], tuple(form for form in row.get("slots_allowed", "").split(";") if form),
                            row.get("split", ""))
        found = _template_problems(template, slots, lang, functions, fillers_by_slot)
        if template.template_id in seen:
            found.append("template_id used twice")
        seen.add(template.template_id)
        problems += [f"{path}:{line} ({template.template_id}): {problem}" for problem in found]
        templates.append(template)
    _raise_if(problems)
    return templates


def _template_problems(template: Template, slots: list[str], lang: str, functions: dict[str, Function],
                       fillers_by_slot: dict[str, list[Filler]]) -> list[str]:
    found = []
    function = functions.get(template.function)
    if function is None:
        return [f"unknown function {template.function!r} (not in the functions file)"]
    if not re.fullmatch(rf"{re.escape(lang)}-{re.escape(function.name)}-\d\d", template.template_id):
        found.append(f"template_id must be {lang}-{function.name}-NN")
    unknown = [slot for slot in slots if slot not in SLOTS]
    if unknown or len(slots) > 1:
        found.append(f"a template has at most one slot, of {', '.join(SLOTS)} (found {', '.join(slots)})")
    if re.search(r"[{}]", SLOT_MARK.sub("", AGREEMENT_MARK.sub("", template.template))):
        found.append("a brace that is neither a slot {name} nor an agreement marker {g:m/f}")
    if not slots and AGREEMENT_MARK.search(template.template):
        found.append("an agreement marker {g:...} without a slot to agree with")
    if template.split not in ("", *(split for split, _ in SPLIT_SHARES)):
        found.append(f"split must be empty or one of {', '.join(split for split, _ in SPLIT_SHARES)}, "
                     f"not {template.split!r}")
    found += _label_problems(template, function)
    if slots and not unknown:
        candidates = fillers_of(template, fillers_by_slot)
        bad_forms = [form for form in template.slots_allowed if form not in FORMS]
        if bad_forms:
            found.append(f"slots_allowed holds {', '.join(bad_forms)}, not forms of {', '.join(FORMS)}")
        elif not candidates:
            found.append(f"no filler of slot {slots[0]!r}" + (f" with form {', '.join(template.slots_allowed)}"
                                                              if template.slots_allowed else ""))
        genderless = [str(filler.line) for filler in candidates if filler.gender not in GENDERS]
        if AGREEMENT_MARK.search(template.template) and genderless:
            found.append(f"agrees in gender ({{g:m/f}}), but the {slots[0]} filler(s) on line(s) "
                         f"{', '.join(genderless)} of the fillers file have no gender")
    elif template.slots_allowed:
        found.append("slots_allowed on a template without a slot")
    return found


def _label_problems(template: Template, function: Function) -> list[str]:
    """Where the labels contradict the function or docs/labelling.md."""
    found = []
    if template.category not in CATEGORIES:
        found.append(f"category {template.category!r} is not one of {', '.join(CATEGORIES)}")
    if template.stigmatising != function.stigmatising:
        found.append(f"stigmatising {template.stigmatising!r}, but function {function.name} is "
                     f"{function.stigmatising!r}")
    dimensions = template.dimension.split(";") if template.dimension else []
    if set(dimensions) - set(LABELLED_DIMENSION.values()) or len(set(dimensions)) != len(dimensions):
        found.append(f"dimension {template.dimension!r}: distinct ';'-joined values of "
                     f"{', '.join(LABELLED_DIMENSION.values())}")
    if "other" in dimensions and not template.note:
        found.append("dimension 'other' needs a note saying what it is (slur as insult, mockery, ...)")
    if template.stigmatising == "yes":
        if not dimensions or template.stigma_strength not in ("1", "2", "3"):
            found.append("stigmatising yes needs a dimension and a stigma_strength of 1, 2 or 3")
        if template.category not in (JUDGEMENT, "clinical"):
            found.append(f"stigmatising yes in category {template.category!r}: a stigmatising question, analogy or "
                         "disclosure is a judgement (guideline rules 6 and 9)")
        if template.category == "clinical" and not template.note:
            found.append("a stigmatising clinical sentence needs a note (the clinician's stereotyping wording)")
    else:
        if dimensions or template.stigma_strength != "0":
            found.append("stigmatising no leaves dimension empty and has stigma_strength 0")
        if template.slot in SLUR_AT_PEOPLE_SLOTS and template.category == JUDGEMENT:
            found.append(f"slot {template.slot!r} aims a slur at people, which is stigmatising in any frame "
                         "(guideline H5): use group, person or illness, or quote the slur with {slur}")
    return found


def fillers_of(template: Template, fillers_by_slot: dict[str, list[Filler]]) -> list[Filler]:
    """The fillers a template accepts: those of its slot, of its allowed forms where it names some."""
    return [filler for filler in fillers_by_slot.get(template.slot or "", [])
            if not template.slots_allowed or filler.form in template.slots_allowed]


def choose_fillers(candidates: list[Filler], usage: Counter, rng: random.Random) -> list[Filler]:
    """Up to FILLS_PER_TEMPLATE fillers: each pick prefers an illness type, an illness and a form the template has
    fewer of, then the filler used least so far in the suite, then chance (seeded)."""
    order = {filler.line: rng.random() for filler in candidates}
    chosen: list[Filler] = []
    pool = list(candidates)
    while pool and len(chosen) < FILLS_PER_TEMPLATE:
        best = min(pool, key=lambda f: (sum(c.illness_type == f.illness_type for c in chosen),
                                        sum(c.illness == f.illness for c in chosen),
                                        sum(c.form == f.form for c in chosen),
                                        usage[f.line], order[f.line]))
        chosen.append(best)
        pool.remove(best)
        usage[best.line] += 1
    return chosen


def capitalised(sentence: str) -> str:
    """The sentence with its first letter upper-cased (after any opening quote or bracket)."""
    for index, char in enumerate(sentence):
        if char.isalpha():
            upper = char.upper()
            return sentence[:index] + upper + sentence[index + 1:] if len(upper) == 1 else sentence
    return sentence


def filled(template: Template, filler: Filler) -> tuple[str, int, int]:
    """The template's sentence with ``filler`` in its slot, and where the filler stands in it."""
    text = AGREEMENT_MARK.sub(lambda mark: mark[1] if filler.gender == "m" else mark[2], template.template)
    mark = "{" + str(template.slot) + "}"
    start = text.index(mark)
    # A filler that opens a sentence of the template ("... for life. {person} could ...") starts with a capital.
    opens_sentence = SENTENCE_START.search(text[:start]) is not None
    sentence = text[:start] + (capitalised(filler.text) if opens_sentence else filler.text) + text[start + len(mark):]
    return capitalised(sentence), start, start + len(filler.text)


def split_templates(function: str, template_ids: list[str]) -> dict[str, str]:
    """Template id -> split, for the templates of one function (shuffled with a seed of the function's name)."""
    shuffled = sorted(template_ids)
    random.Random(f"{SEED}:{function}").shuffle(shuffled)
    # Rounded half up, the last split what is left; where nothing is left, the largest split gives it one.
    counts = [max(1, int(len(shuffled) * share + 0.5)) for _, share in SPLIT_SHARES[:-1]]
    counts.append(len(shuffled) - sum(counts))
    while counts[-1] < 1 and max(counts) > 1:
        counts[counts.index(max(counts))] -= 1
        counts[-1] += 1
    splits = [split for (split, _), count in zip(SPLIT_SHARES, counts) for _ in range(count)]
    return dict(zip(shuffled, splits))


def build_suite(root: Path, lang: str) -> list[dict[str, str]]:
    """The suite's cases (rows of :data:`CASE_COLUMNS`); SuiteError lists every problem of its files."""
    paths = suite_paths(root, lang)
    functions = read_functions(paths.functions)
    fillers = read_fillers(paths.fillers, paths.lexicon)
    fillers_by_slot: dict[str, list[Filler]] = defaultdict(list)
    for filler in fillers:
        fillers_by_slot[filler.slot].append(filler)
    templates = read_templates(paths.templates, lang, functions, fillers_by_slot)
    by_function: dict[str, list[Template]] = defaultdict(list)
    for template in templates:
        if not template.split:
            by_function[template.function].append(template)
    problems = [f"{paths.templates}: function {name} has {len(rows)} template(s) to deal, fewer than the "
                f"{MIN_TEMPLATES} that a split into train, dev and test needs" for name, rows in by_function.items()
                if len(rows) < MIN_TEMPLATES]
    split_of = {template.template_id: template.split for template in templates if template.split}
    for name in functions:
        split_of.update(split_templates(name, [template.template_id for template in by_function[name]]))
    # The dealt templates function by function, then the pinned ones in file order.
    ordered = [template for name in functions for template in by_function[name]]
    ordered += [template for template in templates if template.split]
    matcher = IllnessMatcher.from_csv(paths.lexicon)
    usage: Counter = Counter()
    cases: list[dict[str, str]] = []
    first_at: dict[str, str] = {}
    for template in ordered:
        name, function = template.function, functions[template.function]
        for sentence, mention, problem in _cases_of(template, fillers_by_slot, matcher, usage, paths):
            where = f"{paths.templates}:{template.line} ({template.template_id})"
            key = " ".join(fold(sentence).split())
            if problem:
                problems.append(f"{where}: {problem}")
            elif key in first_at:
                problems.append(f"{where}: duplicate sentence {sentence!r} (also from {first_at[key]})")
            else:
                first_at[key] = template.template_id
                cases.append({"uid": f"suite-{lang}-{len(cases) + 1:05d}", "function": name,
                              "kind": function.kind, "template_id": template.template_id,
                              "split": split_of[template.template_id], "sentence": sentence, **mention,
                              "category": template.category, "stigmatising": template.stigmatising,
                              "dimension": template.dimension, "stigma_strength": template.stigma_strength,
                              "note": template.note})
    _raise_if(problems)
    return cases


def _cases_of(template: Template, fillers_by_slot: dict[str, list[Filler]], matcher: IllnessMatcher,
              usage: Counter, paths: SuitePaths) -> list[tuple[str, dict[str, str], str]]:
    """(sentence, mention columns, problem or "") of each case of one template."""
    if template.slot is None:
        sentence = capitalised(template.template)
        matches = matcher.find(sentence)
        if not matches:
            return [(sentence, {}, "names no illness the matcher finds, and has no slot")]
        entry = matches[0].entry
        return [(sentence, {"matched_term": entry.term, "form": entry.form, "illness": entry.illness,
                            "illness_type": entry.type}, "")]
    rng = random.Random(f"{SEED}:{template.template_id}")
    out = []
    for filler in choose_fillers(fillers_of(template, fillers_by_slot), usage, rng):
        sentence, start, end = filled(template, filler)
        mention = {"matched_term": filler.matched_term, "form": filler.form, "illness": filler.illness,
                   "illness_type": filler.illness_type}
        out.append((sentence, mention, _mention_problem(filler, sentence, start, end, matcher, paths)))
    return out


def _mention_problem(filler: Filler, sentence: str, start: int, end: int, matcher: IllnessMatcher,
                     paths: SuitePaths) -> str:
    if filler.slot in OBFUSCATED_SLOTS:
        return ""
    inside = [match for match in matcher.find(sentence) if start <= match.start and match.end <= end]
    hit = next((match for match in inside if fold(match.surface) == fold(filler.matched_term)), None)
    where = f"filler {paths.fillers}:{filler.line} ({filler.text!r})"
    if hit is None:
        found = ", ".join(repr(match.surface) for match in inside) or "nothing"
        return (f"with {where} the matcher ({paths.lexicon}) does not find {filler.matched_term!r} in {sentence!r} "
                f"(it finds {found} in the filler; a context rule of the lexicon may drop it there)")
    if (hit.illness, hit.type, hit.form) != (filler.illness, filler.illness_type, filler.form):
        return (f"with {where} the matcher reads {filler.matched_term!r} as {hit.illness}, {hit.type}, {hit.form} "
                f"in {sentence!r}")
    return ""


def suite_csv(cases: list[dict[str, str]]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CASE_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(cases)
    return buffer.getvalue()


def shortfalls(cases: list[dict[str, str]], functions: dict[str, Function], lang: str) -> list[str]:
    """What keeps the suite from the issue's size targets and coverage (every function, every split)."""
    found = []
    # A language without targets still needs a case of every function.
    total, per_function = MIN_CASES.get(lang, 0), MIN_CASES_PER_FUNCTION.get(lang, 1)
    if len(cases) < total:
        found.append(f"{len(cases)} cases, fewer than the {total} required")
    counts = Counter(case["function"] for case in cases)
    splits = defaultdict(set)
    for case in cases:
        splits[case["function"]].add(case["split"])
    for name in functions:
        if counts[name] < per_function:
            found.append(f"function {name}: {counts[name]} cases, fewer than {per_function}")
        elif len(splits[name]) < len(SPLIT_SHARES):
            found.append(f"function {name}: cases in {', '.join(sorted(splits[name]))} only")
    return found


def summary(cases: list[dict[str, str]], functions: dict[str, Function]) -> str:
    """A table of cases per function and split."""
    splits = [split for split, _ in SPLIT_SHARES]
    counts = Counter((case["function"], case["split"]) for case in cases)
    templates = Counter(case["function"] for case in {case["template_id"]: case for case in cases}.values())
    width = max(map(len, functions))
    lines = [f"{'function':<{width}} templates " + " ".join(f"{split:>5}" for split in splits) + "   all"]
    for name in functions:
        row = [counts[name, split] for split in splits]
        lines.append(f"{name:<{width}} {templates[name]:>9} " + " ".join(f"{n:>5}" for n in row) + f" {sum(row):>5}")
    totals = [sum(counts[name, split] for name in functions) for split in splits]
    lines.append(f"{'all':<{width}} {len({case['template_id'] for case in cases}):>9} "
                 + " ".join(f"{n:>5}" for n in totals) + f" {sum(totals):>5}")
    return "\n".join(lines)


def _raise_if(problems: list[str]) -> None:
    if problems:
        raise SuiteError(f"{len(problems)} problem(s):\n" + "\n".join(problems))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lang", required=True, help="language folder of templates/ (en, es)")
    parser.add_argument("--root", type=Path, default=ROOT,
                        help="the repository whose suite is built (default: this one)")
    args = parser.parse_args(argv)
    paths = suite_paths(args.root, args.lang)
    try:
        cases = build_suite(args.root, args.lang)
    except SuiteError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    write_text_atomic(paths.suite, suite_csv(cases))
    functions = read_functions(paths.functions)
    print(summary(cases, functions))
    print(f"wrote {len(cases)} cases to {paths.suite}")
    for shortfall in shortfalls(cases, functions, args.lang):
        print(f"warning: {shortfall}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
