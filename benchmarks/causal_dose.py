"""The dose-response bench: train small masked LMs on corpora with a known dose of stigma, and recover it.

From one corpus (default: the shared Reddit mental-health corpus) it builds corpora that differ only in the share of
the sentences mentioning the *target* illnesses that were rewritten as stigmatising statements on the *target* AQ-27
dimensions (templates and word lists: benchmarks/data/causal_dose_en.json); the control illnesses and dimensions
are untouched. Doses are nested: the sentences rewritten at 1 % are among those rewritten at 5 %, and so on. Then, per
dose, it trains small BERT-style masked LMs from scratch (one WordPiece vocabulary trained on the dose-0 corpus, the
same hyper-parameters and token budget, one model per seed), and runs the product on them: ``corpus-audit audit``
on each corpus, ``probe aq27`` (default controlled method) on each model, ``link`` of each model to its corpus, and
``probe compare`` across doses. It ends with ``results.json`` and the figures of docs/validation.md.

    python benchmarks/causal_dose.py run -o bench-out/causal_dose            # the whole bench; rerun to resume
    python benchmarks/causal_dose.py run -o OUT --doses 0,1,5,20 --seeds 0,1 --steps 1500 --device cuda
    python benchmarks/causal_dose.py time -o OUT --steps 50                  # seconds per training step
    python benchmarks/causal_dose.py figures -o OUT --figures docs/figures   # results.json and figures again

Every stage writes its outputs atomically and is skipped when they exist; training saves a checkpoint every
``--checkpoint-every`` steps and resumes from it. Outputs under ``OUT`` (corpora, models, audits, probes) are
large: keep them out of git (``bench-out/`` is ignored).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import shutil
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from tqdm import tqdm

from corpus_audit.common.atomic import atomic_path, write_text_atomic

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = Path("/work/shared/corpora/reddit_mh_27subs_en.jsonl.gz")
DEFAULT_TEMPLATES = ROOT / "benchmarks" / "data" / "causal_dose_en.json"
CORPUS_FIELDS = ("corpus", "templates", "doses", "limit_docs", "mention_docs_only", "injection_seed", "eval_share")
EVAL_SEED = 12345  # the masks of the held-out loss: the same for every model
STIGMATISING = 0.5  # the audit's stigma probability above which a sentence counts as flagged


@dataclass
class BenchConfig:
    corpus: str = str(DEFAULT_CORPUS)
    templates: str = str(DEFAULT_TEMPLATES)
    doses: list[float] = field(default_factory=lambda: [0.0, 1.0, 5.0, 20.0])  # percent of target mentions
    seeds: list[int] = field(default_factory=lambda: [0, 1])
    limit_docs: int | None = None
    mention_docs_only: int = 1  # 1: keep only the documents that mention an illness (the text the probe is about)
    injection_seed: int = 0
    eval_share: float = 0.0  # share of the documents held out of every corpus to measure the models' loss on
    vocab_size: int = 6000
    seq_len: int = 64
    hidden: int = 128
    layers: int = 2
    heads: int = 2
    arch: str = "bert"  # bert (post-LayerNorm), prelayernorm (RoBERTa-PreLayerNorm) or roformer (rotary positions)
    steps: int = 1000
    batch: int = 32
    lr: float = 2e-3
    warmup: float = 0.06
    mask_prob: float = 0.15
    dropout: float = 0.0  # none: a small model trained briefly underfits; dropout only slows it
    init_range: float = 0.02
    checkpoint_every: int = 250
    device: str = "cpu"
    threads: int = 1
    audit_backend: str = "auto"  # the audit's --backend (the test uses torch: no ONNX export into a fresh cache)
    null_models: int = 0  # the random copy is the same for every model of the bench (architecture, tokenizer, seed)
    name_scoring: str = "pll"  # the probe's --name-scoring: pll (its default) or whole (the name masked whole)
    permutations: int = 1999
    n_boot: int = 1000

    def dose_name(self, dose: float) -> str:
        return f"dose_{dose:g}".replace(".", "p")


# ----------------------------------------------------------------------------------------------------------------
# small helpers


def write_json(path: Path, data: Any) -> None:
    write_text_atomic(path, json.dumps(data, indent=1, ensure_ascii=False, default=float))


def read_jsonl_gz(path: str | Path, limit: int | None = None) -> list[dict[str, Any]]:
    docs = []
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, 1):
            if limit is not None and len(docs) >= limit:
                break
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                print(f"{path}:{line_no}: skipped, not JSON ({exc})", file=sys.stderr)
                continue
            if isinstance(record, dict) and isinstance(record.get("text"), str) and record["text"].strip():
                record.setdefault("id", f"line-{line_no}")
                docs.append(record)
    return docs


def cli(*args: str) -> None:
    """Run ``corpus-audit ARGS`` in this process (its click command; a failure raises with its message), so that
    the models and libraries the commands load are loaded once."""
    from corpus_audit.cli import main as corpus_audit

    try:
        corpus_audit.main(list(args), prog_name="corpus-audit", standalone_mode=False)
    except SystemExit as exc:
        if exc.code not in (0, None):
            raise RuntimeError(f"corpus-audit {' '.join(args)} exited with {exc.code}") from exc


# ----------------------------------------------------------------------------------------------------------------
# 1. corpora with a dose


def statement(templates: dict[str, Any], illness: str, dimension: str, rng: random.Random,
              surface: str | None = None) -> dict[str, str]:
    """One stigmatising statement about ``illness`` on ``dimension`` from the templates and word lists (the
    illness written ``surface``, or one of its forms: the probe's phrase half the time)."""
    if surface is None:
        forms = templates["target_illnesses"][illness]
        surface = forms[0] if rng.random() < 0.5 or len(forms) == 1 else rng.choice(forms[1:])
    subject, number = rng.choice(templates["subjects"])
    link = rng.choice(templates["links"][number]).format(illness=surface)
    predicate = rng.choice(templates["predicates"][dimension])[0 if number == "pl" else 1]
    clause = f"{subject} {link} {predicate}"
    frame = rng.choice(templates["frames"])
    text = frame.format(clause=clause)
    return {"text": text[0].upper() + text[1:], "surface": surface, "subject": subject, "predicate": predicate,
            "frame": frame}


def write_corpus(path: Path, docs: list[dict[str, Any]], texts: list[str]) -> None:
    with atomic_path(path) as tmp, gzip.open(tmp, "wt", encoding="utf-8") as handle:
        for doc, text in zip(docs, texts):
            handle.write(json.dumps({"id": doc["id"], "subreddit": doc.get("subreddit"), "text": text},
                                    ensure_ascii=False) + "\n")


def build_corpora(cfg: BenchConfig, out: Path) -> dict[str, Any]:
    """Write OUT/corpora/dose_*/corpus.jsonl.gz and OUT/manifest.json (what was injected where)."""
    manifest_path = out / "manifest.json"
    if manifest_path.exists():
        return json.loads(manifest_path.read_text())
    from corpus_audit.corpus.matcher import IllnessMatcher
    from corpus_audit.corpus.segment import Segmenter

    templates = json.loads(Path(cfg.templates).read_text())
    targets = set(templates["target_illnesses"])
    segmenter, matcher = Segmenter(templates["lang"]), IllnessMatcher.for_language(templates["lang"])
    read = read_jsonl_gz(cfg.corpus, cfg.limit_docs)
    docs: list[dict[str, Any]] = []
    held_out: list[dict[str, Any]] = []  # documents no model trains on (--eval-share): never rewritten
    mentions: Counter[str] = Counter()  # sentences mentioning each illness
    eligible: list[tuple[int, int, int, str, str]] = []  # doc, sentence, char offset, sentence, its one target illness
    n_sentences = 0
    for doc in tqdm(read, desc="corpus: find mentions", unit="doc"):
        found_in_doc = [{match.entry.illness for match in matcher.find(sentence)}
                        if matcher.has_candidate(sentence) else set() for sentence in segmenter.sentences(doc["text"])]
        if cfg.mention_docs_only and not any(found_in_doc):
            continue
        if cfg.eval_share and random.Random(f"eval:{cfg.injection_seed}:{doc['id']}").random() < cfg.eval_share:
            held_out.append(doc)
            continue
        d = len(docs)
        docs.append(doc)
        cursor = 0
        for s, sentence in enumerate(segmenter.sentences(doc["text"])):
            n_sentences += 1
            start = doc["text"].find(sentence, cursor)
            if start < 0:
                continue
            cursor = start + len(sentence)
            found = found_in_doc[s]
            mentions.update(found)
            if len(found) == 1 and next(iter(found)) in targets:
                eligible.append((d, s, start, sentence, next(iter(found))))
    target_mentions = sum(mentions[name] for name in targets)
    order = random.Random(cfg.injection_seed).sample(range(len(eligible)), len(eligible))  # nested doses
    templates_path = Path(cfg.templates).resolve()
    manifest: dict[str, Any] = {
        "config": {key: asdict(cfg)[key] for key in CORPUS_FIELDS},
        "templates_file": str(templates_path.relative_to(ROOT) if templates_path.is_relative_to(ROOT)
                              else templates_path),
        "documents_read": len(read), "documents": len(docs), "sentences": n_sentences,
        "target_illnesses": sorted(targets), "target_dimensions": templates["target_dimensions"],
        "mentions": dict(mentions.most_common()), "target_mention_sentences": target_mentions,
        "eligible_sentences": len(eligible), "eval_documents": len(held_out), "doses": {},
    }
    if held_out:
        write_corpus(out / "corpora" / "eval" / "corpus.jsonl.gz", held_out, [doc["text"] for doc in held_out])
        manifest["eval_corpus"] = "corpora/eval/corpus.jsonl.gz"
    for dose in cfg.doses:
        name = cfg.dose_name(dose)
        wanted = round(dose / 100 * target_mentions)
        chosen = sorted((eligible[i] for i in order[:wanted]), key=lambda e: (e[0], -e[2]))
        texts = [doc["text"] for doc in docs]
        injections = []
        for d, s, start, sentence, illness in chosen:  # right to left within a document keeps offsets valid
            rng = random.Random(f"{cfg.injection_seed}:{docs[d]['id']}:{s}")  # same statement at every dose
            dimension = rng.choice(templates["target_dimensions"])
            made = statement(templates, illness, dimension, rng)
            texts[d] = texts[d][:start] + made["text"] + texts[d][start + len(sentence):]
            injections.append({"doc_id": docs[d]["id"], "sentence": s, "illness": illness, "dimension": dimension,
                               "original": sentence, **made})
        folder = out / "corpora" / name
        write_corpus(folder / "corpus.jsonl.gz", docs, texts)
        write_text_atomic(folder / "injections.jsonl",
                          "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in injections))
        manifest["doses"][name] = {
            "dose_percent": dose, "rewritten": len(injections),
            "actual_percent": 100 * len(injections) / max(target_mentions, 1),
            "capped": wanted > len(eligible), "words": sum(len(t.split()) for t in texts),
            "documents_changed": len({row["doc_id"] for row in injections}),
            "per_illness": dict(Counter(row["illness"] for row in injections).most_common()),
            "per_dimension": dict(Counter(row["dimension"] for row in injections)),
            "corpus": f"corpora/{name}/corpus.jsonl.gz", "injections": f"corpora/{name}/injections.jsonl",
        }
    write_json(manifest_path, manifest)
    return manifest


# ----------------------------------------------------------------------------------------------------------------
# 2. tokenizer and token blocks


def build_tokenizer(cfg: BenchConfig, out: Path, manifest: dict[str, Any]) -> Path:
    """One WordPiece vocabulary, trained on the dose-0 corpus (the lowest dose), shared by every model."""
    folder = out / "tokenizer"
    if (folder / "tokenizer_config.json").exists():
        return folder
    from tokenizers import BertWordPieceTokenizer
    from transformers import BertTokenizerFast

    base = out / manifest["doses"][cfg.dose_name(min(cfg.doses))]["corpus"]
    trainer = BertWordPieceTokenizer(lowercase=True)
    trainer.train_from_iterator((doc["text"] for doc in read_jsonl_gz(base)), vocab_size=cfg.vocab_size,
                                min_frequency=2, show_progress=False)
    staging = out / "tokenizer.tmp"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    trainer.save_model(str(staging))
    vocab = {token: i for i, token in enumerate((staging / "vocab.txt").read_text(encoding="utf-8").splitlines())}
    BertTokenizerFast(vocab=vocab, do_lower_case=True).save_pretrained(str(staging))
    shutil.rmtree(folder, ignore_errors=True)
    os.replace(staging, folder)
    return folder


def token_blocks(cfg: BenchConfig, out: Path, manifest: dict[str, Any], dose: float | None,
                 tokenizer: Any) -> np.ndarray:
    """The dose's corpus (None: the held-out documents) as rows of seq_len token ids: [CLS] + documents joined by
    [SEP] + [SEP], no padding."""
    corpus = manifest["eval_corpus"] if dose is None else manifest["doses"][cfg.dose_name(dose)]["corpus"]
    path = out / Path(corpus).parent / f"blocks_{cfg.seq_len}.npy"
    if not path.exists():
        texts = [doc["text"] for doc in read_jsonl_gz(out / corpus)]
        stream: list[int] = []
        for ids in tokenizer(texts, add_special_tokens=False)["input_ids"]:
            stream.extend(ids)
            stream.append(tokenizer.sep_token_id)
        width = cfg.seq_len - 2
        rows = np.asarray(stream[: len(stream) // width * width], dtype=np.int32).reshape(-1, width)
        blocks = np.concatenate([np.full((len(rows), 1), tokenizer.cls_token_id, np.int32), rows,
                                 np.full((len(rows), 1), tokenizer.sep_token_id, np.int32)], axis=1)
        with atomic_path(path) as tmp, open(tmp, "wb") as handle:
            np.save(handle, blocks)
        if dose is None:
            manifest["eval_tokens"] = len(stream)
        else:
            manifest["doses"][cfg.dose_name(dose)]["tokens"] = len(stream)
        write_json(out / "manifest.json", manifest)
    return np.load(path)


# ----------------------------------------------------------------------------------------------------------------
# 3. training


def mask_batch(ids: Any, cfg: BenchConfig, special: Any, vocab: int, mask_id: int, gen: Any) -> tuple[Any, Any]:
    """BERT's masking: mask_prob of the ordinary tokens chosen; of those 80 % [MASK], 10 % random, 10 % kept."""
    import torch

    chosen = (torch.rand(ids.shape, generator=gen) < cfg.mask_prob) & ~special[ids]
    labels = ids[chosen]
    inputs = ids.clone()
    roll = torch.rand(ids.shape, generator=gen)
    inputs[chosen & (roll < 0.8)] = mask_id
    swap = chosen & (roll >= 0.8) & (roll < 0.9)
    inputs[swap] = torch.randint(vocab, (int(swap.sum()),), generator=gen)
    return inputs, (chosen, labels)


def new_model(cfg: BenchConfig, tokenizer: Any) -> Any:
    """A masked LM of ``cfg.arch`` with fresh weights (seeded by the caller): BERT (post-LayerNorm, learnt absolute
    positions: the bench's first models), RoBERTa-PreLayerNorm (LayerNorm before each sub-layer) or RoFormer (BERT
    with rotary positions: attention finds the neighbouring words without first learning what positions are)."""
    from transformers import (
        BertConfig,
        BertForMaskedLM,
        RobertaPreLayerNormConfig,
        RobertaPreLayerNormForMaskedLM,
        RoFormerConfig,
        RoFormerForMaskedLM,
    )

    kinds = {"bert": (BertConfig, BertForMaskedLM), "roformer": (RoFormerConfig, RoFormerForMaskedLM),
             "prelayernorm": (RobertaPreLayerNormConfig, RobertaPreLayerNormForMaskedLM)}
    config_type, model_type = kinds[cfg.arch]
    # RoBERTa numbers positions from the padding id + 1: two more rows than BERT's.
    positions = max(cfg.seq_len, 128) + (2 if cfg.arch == "prelayernorm" else 0)
    config = config_type(vocab_size=len(tokenizer), hidden_size=cfg.hidden, num_hidden_layers=cfg.layers,
                         num_attention_heads=cfg.heads, intermediate_size=4 * cfg.hidden,
                         max_position_embeddings=positions, pad_token_id=tokenizer.pad_token_id,
                         bos_token_id=tokenizer.cls_token_id, eos_token_id=tokenizer.sep_token_id,
                         hidden_dropout_prob=cfg.dropout, attention_probs_dropout_prob=cfg.dropout,
                         initializer_range=cfg.init_range)
    return model_type(config)


def train_model(cfg: BenchConfig, out: Path, manifest: dict[str, Any], dose: float, seed: int,
                tokenizer_dir: Path, deadline: float | None = None, folder: Path | None = None) -> Path:
    """Train one masked LM on the dose's corpus; save_pretrained (safetensors) with the tokenizer; resumable.
    ``deadline`` (seconds since the epoch): stop there, whatever the step, and record it (``stopped_early``);
    ``folder``: where to save it (default OUT/models/dose_<d>_seed<s>)."""
    folder = folder or out / "models" / f"{cfg.dose_name(dose)}_seed{seed}"
    if (folder / "train_log.json").exists():
        return folder
    import torch
    from safetensors.torch import load_model, save_model
    from transformers import BertTokenizerFast, get_linear_schedule_with_warmup

    torch.set_num_threads(cfg.threads)
    tokenizer = BertTokenizerFast.from_pretrained(str(tokenizer_dir))
    blocks = torch.from_numpy(token_blocks(cfg, out, manifest, dose, tokenizer).astype(np.int64))
    torch.manual_seed(seed)
    model = new_model(cfg, tokenizer).to(cfg.device)
    head = model.cls if hasattr(model, "cls") else model.lm_head  # BERT's prediction head, RoBERTa's
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, betas=(0.9, 0.98), weight_decay=0.01)
    schedule = get_linear_schedule_with_warmup(optimizer, int(cfg.warmup * cfg.steps), cfg.steps)
    gen = torch.Generator().manual_seed(seed)
    special = torch.zeros(len(tokenizer), dtype=torch.bool)
    special[tokenizer.all_special_ids] = True
    step, losses, seconds, clock = 0, [], 0.0, []
    state_dir = folder / "checkpoint"
    if (state_dir / "state.json").exists():  # resume
        load_model(model, str(state_dir / "model.safetensors"))
        extra = torch.load(state_dir / "optimizer.pt", weights_only=True)
        optimizer.load_state_dict(extra["optimizer"])
        schedule.load_state_dict(extra["schedule"])
        gen.set_state(extra["generator"])
        saved = json.loads((state_dir / "state.json").read_text())
        step, losses, seconds = saved["step"], saved["losses"], saved["seconds"]
        clock = saved.get("seconds_at_steps", [])
    model.train()
    per_epoch = len(blocks) // cfg.batch
    bar = tqdm(total=cfg.steps, initial=step, desc=f"train {folder.name}", unit="step", leave=False)
    started = time.perf_counter()
    pending: list[Any] = []  # the losses of the last steps, still on the device: reading each one waits for it
    while step < cfg.steps and (deadline is None or time.time() < deadline):
        epoch, offset = divmod(step, per_epoch)
        order = np.random.default_rng([seed, epoch]).permutation(len(blocks))
        batch = blocks[order[offset * cfg.batch:(offset + 1) * cfg.batch]]
        inputs, (chosen, labels) = mask_batch(batch, cfg, special, len(tokenizer), tokenizer.mask_token_id, gen)
        logits = masked_logits(model, head, inputs, chosen, cfg.device)
        loss = torch.nn.functional.cross_entropy(logits, labels.to(cfg.device))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad(set_to_none=True)
        step += 1
        pending.append(loss.detach())
        bar.update(1)
        if step % 50 == 0 or step == cfg.steps:
            losses += torch.stack(pending).tolist()  # waits for the device: the clock below is the steps' own
            pending = []
            clock.append([step, seconds + time.perf_counter() - started])
            bar.set_postfix(loss=f"{np.mean(losses[-50:]):.3f}")
        if step % cfg.checkpoint_every == 0 and step < cfg.steps:
            losses += torch.stack(pending).tolist() if pending else []
            pending = []
            staging = folder / "checkpoint.tmp"
            shutil.rmtree(staging, ignore_errors=True)
            staging.mkdir(parents=True)
            save_model(model, str(staging / "model.safetensors"))  # handles the tied input and output embeddings
            torch.save({"optimizer": optimizer.state_dict(), "schedule": schedule.state_dict(),
                        "generator": gen.get_state()}, staging / "optimizer.pt")
            write_json(staging / "state.json", {"step": step, "losses": losses, "seconds_at_steps": clock,
                                                "seconds": seconds + time.perf_counter() - started})
            shutil.rmtree(state_dir, ignore_errors=True)
            os.replace(staging, state_dir)
    bar.close()
    if pending:  # stopped by the deadline
        losses += torch.stack(pending).tolist()
        clock.append([step, seconds + time.perf_counter() - started])
    seconds += time.perf_counter() - started
    model.eval()
    model.save_pretrained(str(folder))  # safetensors
    tokenizer.save_pretrained(str(folder))
    shutil.rmtree(state_dir, ignore_errors=True)
    log = {
        "dose_percent": dose, "seed": seed, "steps": cfg.steps, "steps_done": step,
        "stopped_early": step < cfg.steps, "tokens_seen": step * cfg.batch * cfg.seq_len,
        "corpus_tokens": int(blocks.numel()), "epochs": step * cfg.batch / len(blocks),
        "parameters": sum(p.numel() for p in model.parameters()), "seconds": seconds,
        "loss_first_50": float(np.mean(losses[:50])), "loss_last_100": float(np.mean(losses[-100:])),
        "loss_every_50": [float(np.mean(losses[i:i + 50])) for i in range(0, len(losses), 50)],
        "seconds_at_steps": clock, "device": cfg.device, "threads": cfg.threads}
    # The plateau: a model that ignores the context predicts a masked token by its corpus frequency.
    counts = np.bincount(blocks.numpy().ravel(), minlength=len(tokenizer))[~special.numpy()]
    log["unigram_entropy"] = entropy(counts, counts)
    # The same fixed masks of fixed blocks for every model: of the corpus it trained on, and of documents no model
    # saw (--eval-share), with the cross-entropy of the training unigram distribution on those as their plateau.
    fixed = blocks[np.random.default_rng(EVAL_SEED).permutation(len(blocks))[:EVAL_BLOCKS]]
    log["loss_train_fixed"] = masked_loss(model, head, fixed, cfg, special, tokenizer)
    if manifest.get("eval_corpus"):
        held = torch.from_numpy(token_blocks(cfg, out, manifest, None, tokenizer).astype(np.int64))[:EVAL_BLOCKS]
        log["loss_eval"] = masked_loss(model, head, held, cfg, special, tokenizer)
        held_counts = np.bincount(held.numpy().ravel(), minlength=len(tokenizer))[~special.numpy()]
        log["unigram_cross_entropy_eval"] = entropy(held_counts, counts + 1)
    write_json(folder / "train_log.json", log)
    return folder


EVAL_BLOCKS = 2048  # blocks of the fixed losses (all of them when fewer)


def entropy(counts: np.ndarray, model_counts: np.ndarray) -> float:
    """Cross-entropy (nats per token) of tokens with ``counts`` under the unigram distribution ``model_counts``."""
    p = counts / counts.sum()
    q = model_counts / model_counts.sum()
    keep = p > 0
    return float(-(p[keep] * np.log(q[keep])).sum())


def masked_logits(model: Any, head: Any, inputs: Any, chosen: Any, device: str) -> Any:
    """The model's float32 logits at the ``chosen`` (masked) positions of ``inputs``, in bfloat16 on a GPU."""
    import torch

    on_gpu = torch.device(device).type == "cuda"
    with torch.autocast(device_type=torch.device(device).type, dtype=torch.bfloat16, enabled=on_gpu):
        hidden = model.base_model(input_ids=inputs.to(device)).last_hidden_state
        # The prediction head only on the masked positions (~15 %): most of a step's time on CPU otherwise.
        return head(hidden[chosen.to(device)]).float()


def masked_loss(model: Any, head: Any, blocks: Any, cfg: BenchConfig, special: Any, tokenizer: Any) -> float:
    """Mean masked-LM loss (nats per masked token) of ``blocks`` under masks drawn from EVAL_SEED."""
    import torch

    gen = torch.Generator().manual_seed(EVAL_SEED)
    total, count = 0.0, 0
    with torch.no_grad():
        for start in range(0, len(blocks), cfg.batch):
            inputs, (chosen, labels) = mask_batch(blocks[start:start + cfg.batch], cfg, special, len(tokenizer),
                                                  tokenizer.mask_token_id, gen)
            logits = masked_logits(model, head, inputs, chosen, cfg.device)
            total += float(torch.nn.functional.cross_entropy(logits, labels.to(cfg.device), reduction="sum"))
            count += len(labels)
    return total / max(count, 1)


# ----------------------------------------------------------------------------------------------------------------
# 4. the product: audit, probe, link, compare


def questionnaire(cfg: BenchConfig, out: Path) -> Path:
    """The bundled English questionnaire with only the bench's noun phrases (the probe's time grows with them)."""
    folder = out / "questionnaire"
    if not (folder / "noun_phrases.csv").exists():
        templates = json.loads(Path(cfg.templates).read_text())
        staging = out / "questionnaire.tmp"
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(ROOT / "questionnaires" / templates["lang"], staging)
        phrases = pd.read_csv(staging / "noun_phrases.csv", keep_default_na=False)
        phrases[phrases["noun_phrase"].isin(templates["probe_noun_phrases"])].to_csv(
            staging / "noun_phrases.csv", index=False)
        if "probe_illnesses" in templates:  # a smaller probe (the test's miniature)
            illnesses = pd.read_csv(staging / "illnesses.csv", keep_default_na=False)
            illnesses[illnesses["illness"].isin(templates["probe_illnesses"])].to_csv(staging / "illnesses.csv",
                                                                                     index=False)
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(staging, folder)
    return folder


def run_audits(cfg: BenchConfig, out: Path, manifest: dict[str, Any], bar: tqdm | None = None) -> None:
    """``corpus-audit audit`` of each dose's corpus (resumes on its own)."""
    for dose in cfg.doses:
        audit = out / "audits" / cfg.dose_name(dose)
        if not (audit / "summary.json").exists():
            if bar is not None:
                bar.set_description(f"audit {audit.name}")
            cli("audit", str(out / manifest["doses"][cfg.dose_name(dose)]["corpus"]), "--lang", "en", "-o",
                str(audit), "--workers", "1", "--no-progress", "--backend", cfg.audit_backend)
        if bar is not None:
            bar.update(1)


def probe_model(cfg: BenchConfig, out: Path, model: Path) -> Path:
    """``probe aq27`` (default controlled method) of one model, with the bench's questionnaire."""
    probe = out / "probes" / model.name
    if not (probe / "summary.json").exists():
        cli("probe", "aq27", "--model", str(model), "--lang", "en", "-o", str(probe), "--questionnaire",
            str(questionnaire(cfg, out)), "--threads", str(cfg.threads), "--device", cfg.device, "--null-models",
            str(cfg.null_models), "--permutations", str(cfg.permutations), "--n-boot", str(cfg.n_boot),
            "--name-scoring", cfg.name_scoring, "--no-progress")
    return probe


def link_model(cfg: BenchConfig, out: Path, dose: float, probe: Path) -> None:
    """``link`` of the model's probe to the audit of the corpus it was trained on."""
    if not (probe / "link.json").exists():
        cli("link", str(out / "audits" / cfg.dose_name(dose)), str(probe), "--permutations", str(cfg.permutations),
            "--n-boot", str(cfg.n_boot))


def compare_doses(cfg: BenchConfig, out: Path) -> None:
    """``probe compare`` of the doses' models, one comparison per seed."""
    for seed in cfg.seeds:
        compare = out / "compare" / f"seed{seed}"
        if not (compare / "compare.json").exists():
            cli("probe", "compare", *[str(out / "probes" / f"{cfg.dose_name(d)}_seed{seed}") for d in cfg.doses],
                "-o", str(compare), "--permutations", str(cfg.permutations), "--n-boot", str(cfg.n_boot))


# ----------------------------------------------------------------------------------------------------------------
# 5. results and figures


def corpus_results(cfg: BenchConfig, out: Path, manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """What each audit saw: flagged share of target vs control illness sentences, dimension scores, ranking."""
    from scipy.stats import fisher_exact

    from corpus_audit.stigma.judgement import DIMENSION_COLUMNS

    templates = json.loads(Path(cfg.templates).read_text())
    targets = set(templates["target_illnesses"])
    dims = templates["target_dimensions"]
    rows: list[dict[str, Any]] = []
    for dose in cfg.doses:
        name = cfg.dose_name(dose)
        audit = out / "audits" / name
        sentences = pd.read_parquet(audit / "sentences.parquet")
        sentences = sentences.assign(illness=sentences["illnesses"].map(
            lambda v: [v] if isinstance(v, str) else list(v) if v is not None else [])).explode("illness")
        mental = sentences[sentences["illness"].isin(set(targets) | set(control_illnesses(templates)))]
        is_target = mental["illness"].isin(targets)
        flagged = mental["stigma"] >= STIGMATISING
        on_dims = mental["top_dimension"].isin(dims)
        row: dict[str, Any] = {"dose_percent": dose, "injected_percent": manifest["doses"][name]["actual_percent"],
                               "rewritten": manifest["doses"][name]["rewritten"]}
        for side, mask in (("target", is_target), ("control", ~is_target)):
            row[f"{side}_sentences"] = int(mask.sum())
            row[f"{side}_flagged"] = int((flagged & mask).sum())
            row[f"{side}_flagged_on_dims"] = int((flagged & on_dims & mask).sum())
            row[f"{side}_flagged_share"] = row[f"{side}_flagged"] / max(row[f"{side}_sentences"], 1)
            for dim in dims:
                row[f"{side}_mean_{DIMENSION_COLUMNS[dim]}"] = float(mental.loc[mask, DIMENSION_COLUMNS[dim]].mean())
        aq27 = pd.read_csv(audit / "aq27.csv")
        row["aq27"] = aq27[aq27["dimension"].isin(dims)].to_dict(orient="records")
        injections = [json.loads(line) for line in (out / manifest["doses"][name]["injections"]).read_text()
                      .splitlines()]
        injected_docs = {row["doc_id"] for row in injections}
        found = sentences.drop_duplicates(["doc_id", "sentence_index"])
        found = found[found["sentence"].isin({row["text"] for row in injections})]
        row["injected_found"] = len(found)  # injected statements the audit kept (as one sentence)
        row["injected_recall"] = float((found["stigma"] >= STIGMATISING).mean()) if len(found) else None
        if injected_docs:  # how many of the top-ranked documents (as many as were changed) were changed
            documents = pd.read_parquet(audit / "documents.parquet").sort_values("rank")
            row["injected_documents"] = len(injected_docs)
            row["top_k_precision"] = float(documents.head(len(injected_docs))["doc_id"].astype(str)
                                           .isin(injected_docs).mean())
        if rows:  # one-sided Fisher exact test: more target-illness sentences flagged than at the lowest dose
            base = rows[0]
            table = [[row["target_flagged"], row["target_sentences"] - row["target_flagged"]],
                     [base["target_flagged"], base["target_sentences"] - base["target_flagged"]]]
            row["fisher_p_vs_lowest"] = float(fisher_exact(table, alternative="greater").pvalue)
            table = [[row["control_flagged"], row["control_sentences"] - row["control_flagged"]],
                     [base["control_flagged"], base["control_sentences"] - base["control_flagged"]]]
            row["control_fisher_p_vs_lowest"] = float(fisher_exact(table, alternative="greater").pvalue)
        base_share = rows[0]["target_flagged_share"] if rows else row["target_flagged_share"]
        row["audited_excess_percent"] = 100 * (row["target_flagged_share"] - base_share)
        rows.append(row)
    return rows


def control_illnesses(templates: dict[str, Any]) -> list[str]:
    """The probe's mental illnesses that are not targets."""
    names = pd.read_csv(ROOT / "questionnaires" / templates["lang"] / "illnesses.csv")["illness"]
    from corpus_audit.corpus.matcher import default_lexicon_path, load_lexicon

    types = {entry.illness: entry.type for entry in load_lexicon(default_lexicon_path(templates["lang"]))}
    return [n for n in names if types.get(n) == "mental" and n not in templates["target_illnesses"]]


def illness_leans(illnesses: pd.DataFrame, targets: set[str], target_dims: list[str]) -> list[dict[str, Any]]:
    """Per mental illness: its mean score on the target dimensions and on the other dimensions, each less its mean
    over all 27 items (the link's "lean": the name's own likelihood taken out)."""
    from corpus_audit.stigma.aq27 import DIMENSIONS

    rows = []
    for _, row in illnesses[illnesses["illness_type"] == "mental"].iterrows():
        on = np.mean([row[f"mean_{d.lower()}"] for d in target_dims])
        off = np.mean([row[f"mean_{d.lower()}"] for d in DIMENSIONS if d not in target_dims])
        rows.append({"illness": row["illness"], "target": row["illness"] in targets,
                     "lean_target_dims": float(on - row["mean_score"]),
                     "lean_other_dims": float(off - row["mean_score"]), "mean_score": float(row["mean_score"])})
    return rows


HELD_OUT_STATEMENTS = 4  # per illness and target dimension


def injection_check(cfg: BenchConfig, out: Path, model: Path) -> list[dict[str, Any]]:
    """Did the model learn the injected statements in their own wording? Per mental illness of the probe (targets
    and controls alike): the mean log-probability per piece of its phrase in new statements drawn from the
    templates (seeds the corpora never used), less the same in the probe's neutral carriers ("someone has X.").
    The product's PLL scorer (within-word l2r) scores both, as the probe scores its items (``association``); and
    with the whole name masked (``association_name``: log P(name | sentence), summed over its pieces,
    ``MaskedLM.span_log_probs``), since within-word l2r scores each word of a name of several words with the others
    visible, which gives the name away in any sentence. A model that learnt the injection raises the target
    illnesses here; if it does and the AQ-27 probe does not, what bounds the probe is the transfer from the
    injected wording to the questionnaire's, or the probe's measure."""
    path = out / "probes" / model.name / "injection_check.json"
    if path.exists():
        return json.loads(path.read_text())
    from corpus_audit.probe.models.masked import MaskedLM, set_threads

    templates = json.loads(Path(cfg.templates).read_text())
    qdir = questionnaire(cfg, out)
    phrases = pd.read_csv(qdir / "illnesses.csv", keep_default_na=False).set_index("illness")["phrase"]
    names = [n for n in [*templates["target_illnesses"], *control_illnesses(templates)] if n in phrases.index]
    carriers = pd.read_csv(qdir / "aq27_carriers.csv")["text"]
    texts: list[tuple[str, str, str]] = []  # illness, kind, sentence
    for name in names:
        phrase = phrases[name]
        texts += [(name, "statements", statement(templates, name, dimension,
                                                 random.Random(f"held-out:{name}:{dimension}:{k}"),
                                                 surface=phrase)["text"])
                  for dimension in templates["target_dimensions"] for k in range(HELD_OUT_STATEMENTS)]
        texts += [(name, "carriers", text.replace("[noun phrase]", "someone").replace("<mask>", phrase).capitalize())
                  for text in carriers]
    set_threads(cfg.threads)
    scorer = MaskedLM.load(str(model), device=cfg.device, log=lambda _: None)
    spans = [(text.lower().find(phrases[name].lower()), text.lower().find(phrases[name].lower())
              + len(phrases[name])) for name, _, text in texts]
    scored = scorer.score([text for *_, text in texts])
    whole = scorer.span_log_probs([text for *_, text in texts], spans)
    values = [{"illness": name, "kind": kind, "logp": float(np.mean(pll.span_scores(*span))),
               "logp_name": masked.total}
              for (name, kind, _), pll, span, masked in zip(texts, scored, spans, whole)]
    means = pd.DataFrame(values).groupby(["illness", "kind"])[["logp", "logp_name"]].mean().unstack()
    rows = [{"illness": name, "target": name in templates["target_illnesses"],
             "statements": float(means.loc[name, ("logp", "statements")]),
             "carriers": float(means.loc[name, ("logp", "carriers")]),
             "association": float(means.loc[name, ("logp", "statements")] - means.loc[name, ("logp", "carriers")]),
             "statements_name": float(means.loc[name, ("logp_name", "statements")]),
             "carriers_name": float(means.loc[name, ("logp_name", "carriers")]),
             "association_name": float(means.loc[name, ("logp_name", "statements")]
                                       - means.loc[name, ("logp_name", "carriers")])} for name in names]
    write_json(path, rows)
    return rows


def probe_results(probe: Path, templates: dict[str, Any]) -> dict[str, Any]:
    """What one linked probe says: the mental illnesses' leans, target - control on the target and the other
    dimensions, the probe's own tests and the link's conclusion and correlations."""
    targets = set(templates["target_illnesses"])
    summary = json.loads((probe / "summary.json").read_text())["results"]
    link = json.loads((probe / "link.json").read_text())
    leans = illness_leans(pd.read_csv(probe / "illnesses.csv"), targets, templates["target_dimensions"])
    lean = pd.DataFrame(leans)
    keys = ("mean_difference", "mean_difference_ci", "permutation_p", "p_holm", "significant", "flagged")
    return {"illness_leans": leans,
            **{f"target_minus_control_lean_{key}": float(lean.loc[lean["target"], f"lean_{key}"].mean()
                                                         - lean.loc[~lean["target"], f"lean_{key}"].mean())
               for key in ("target_dims", "other_dims")},
            "probe_overall": {k: summary["overall"].get(k) for k in keys if k != "p_holm"},
            "probe_dimensions": {d["dimension"]: {k: d.get(k) for k in keys} for d in summary["dimensions"]},
            "link_evidence": bool(link["conclusion"]["evidence_of_link"]),
            "link_correlations": [{k: c.get(k) for k in ("measure", "rho", "rho_ci", "permutation_p", "p_holm",
                                                         "evidence", "expected_direction", "holds")}
                                  for c in link["correlations"]]}


def model_results(cfg: BenchConfig, out: Path) -> list[dict[str, Any]]:
    """Per model: the illnesses' leans, the probe's own tests, the link's conclusion, the training log."""
    templates = json.loads(Path(cfg.templates).read_text())
    rows = []
    for dose in cfg.doses:
        for seed in cfg.seeds:
            probe = out / "probes" / f"{cfg.dose_name(dose)}_seed{seed}"
            if not (probe / "link.json").exists():  # not (yet) run: the results say which models they hold
                continue
            result = probe_results(probe, templates)
            leans = result["illness_leans"]
            check = injection_check(cfg, out, out / "models" / probe.name)
            association = {row["illness"]: row for row in check}
            for row in leans:
                row["association_held_out"] = association.get(row["illness"], {}).get("association", np.nan)
                row["association_held_out_name"] = association.get(row["illness"], {}).get("association_name",
                                                                                            np.nan)
                row["statements_held_out_name"] = association.get(row["illness"], {}).get("statements_name", np.nan)
            rows.append({
                "dose_percent": dose, "seed": seed, **result, "injection_check": check,
                **{f"target_minus_control_held_out{suffix}": float(
                    np.mean([r.get(key, np.nan) for r in check if r["target"]])
                    - np.mean([r.get(key, np.nan) for r in check if not r["target"]]))
                   for suffix, key in (("", "association"), ("_name", "association_name"))},
                "train": json.loads((out / "models" / probe.name / "train_log.json").read_text())})
    return rows


def compare_results(cfg: BenchConfig, out: Path) -> dict[str, Any]:
    return {f"seed{seed}": json.loads((out / "compare" / f"seed{seed}" / "compare.json").read_text())
            for seed in cfg.seeds if (out / "compare" / f"seed{seed}" / "compare.json").exists()}


def bootstrap_over_illnesses(models: list[dict[str, Any]], key: str, n_boot: int = 4000,
                             seed: int = 0) -> tuple[float, float, float]:
    """Target minus control illnesses of ``key``, each illness averaged over the seeds first (the illness is the
    unit), with a 95 % percentile-bootstrap CI resampling illnesses within each group (scipy)."""
    from scipy.stats import bootstrap

    table = pd.DataFrame([lean for model in models for lean in model["illness_leans"]])
    per_illness = table.groupby(["illness", "target"], as_index=False)[key].mean()
    target = per_illness.loc[per_illness["target"], key].to_numpy()
    control = per_illness.loc[~per_illness["target"], key].to_numpy()
    result = bootstrap((target, control), lambda a, b, axis=-1: a.mean(axis=axis) - b.mean(axis=axis),
                       n_resamples=n_boot, method="percentile", random_state=seed, vectorized=True)
    return float(target.mean() - control.mean()), float(result.confidence_interval.low), \
        float(result.confidence_interval.high)


def change_from_lowest_dose(models: list[dict[str, Any]], dose: float, key: str) -> list[dict[str, Any]]:
    """The models of ``dose`` with each illness's ``key`` less the same seed's at the lowest dose (``<key>_change``),
    for :func:`bootstrap_over_illnesses`: what the dose moved, each model against its own twin."""
    lowest = min(m["dose_percent"] for m in models)
    base = {(m["seed"], r["illness"]): r[key] for m in models if m["dose_percent"] == lowest
            for r in m["illness_leans"]}
    return [{"illness_leans": [{**r, f"{key}_change": r[key] - base.get((m["seed"], r["illness"]), np.nan)}
                               for r in m["illness_leans"]]}
            for m in models if m["dose_percent"] == dose and any(seed == m["seed"] for seed, _ in base)]


def seed_pairs_at_lowest_dose(models: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    """The null of a change from the lowest dose: per pair of seeds at that dose, ``key`` of each illness in the
    second model less in the first (target - control, 95 % CI over illnesses), as a single seed's change is
    computed: what two models of the same corpus differ by when nothing was planted."""
    lowest = min(m["dose_percent"] for m in models)
    twins = sorted((m for m in models if m["dose_percent"] == lowest), key=lambda m: m["seed"])
    pairs = []
    for i, first in enumerate(twins):
        before = {r["illness"]: r[key] for r in first["illness_leans"]}
        for second in twins[i + 1:]:
            moved = [{"illness_leans": [{**r, "moved": r[key] - before.get(r["illness"], np.nan)}
                                        for r in second["illness_leans"]]}]
            pairs.append({"seeds": [first["seed"], second["seed"]],
                          "target_minus_control": bootstrap_over_illnesses(moved, "moved")})
    return pairs


def summarise(cfg: BenchConfig, out: Path, manifest: dict[str, Any]) -> dict[str, Any]:
    corpus = corpus_results(cfg, out, manifest)
    models = model_results(cfg, out)
    curve = []
    for dose in cfg.doses:
        chosen = [m for m in models if m["dose_percent"] == dose]
        if not chosen:
            continue
        on = bootstrap_over_illnesses(chosen, "lean_target_dims")
        off = bootstrap_over_illnesses(chosen, "lean_other_dims")
        held_out = bootstrap_over_illnesses(chosen, "association_held_out")
        held_out_name = bootstrap_over_illnesses(chosen, "association_held_out_name")
        changed = change_from_lowest_dose(models, dose, "statements_held_out_name")
        name_change = bootstrap_over_illnesses(changed, "statements_held_out_name_change") \
            if changed and dose > min(cfg.doses) else None
        curve.append({"dose_percent": dose, "target_dims": on, "other_dims": off, "held_out_statements": held_out,
                      "held_out_statements_name": held_out_name,
                      # the statements alone, the whole name: the change from the same seed's lowest dose
                      "held_out_statements_name_change": name_change,
                      "per_seed_target_dims": [m["target_minus_control_lean_target_dims"] for m in chosen],
                      "per_seed_other_dims": [m["target_minus_control_lean_other_dims"] for m in chosen],
                      "per_seed_held_out_statements": [m["target_minus_control_held_out"] for m in chosen],
                      "per_seed_held_out_statements_name": [m["target_minus_control_held_out_name"] for m in chosen],
                      "per_seed_held_out_statements_name_change": [
                          bootstrap_over_illnesses([m], "statements_held_out_name_change")
                          for m in changed] if name_change is not None else [],
                      "link_evidence": [m["link_evidence"] for m in chosen],
                      "probe_significant_target_dims": [
                          [d for d in manifest["target_dimensions"] if m["probe_dimensions"][d]["significant"]]
                          for m in chosen]})
    results = {"manifest": {k: v for k, v in manifest.items() if k != "mentions"}, "corpus": corpus,
               "models": models, "curve": curve, "compare": compare_results(cfg, out),
               "null_statements_name_change": seed_pairs_at_lowest_dose(models, "statements_held_out_name")}
    write_json(out / "results.json", results)
    return results


def dose_axis(ax: Any, doses: list[float]) -> None:
    """Doses on a log scale that keeps 0, labelled as given; a line at 0."""
    ax.axhline(0, color="black", lw=0.5)
    ax.set_xscale("symlog", linthresh=1)
    ax.set_xticks(doses)
    ax.set_xticklabels([f"{d:g}" for d in doses])
    ax.set_xlabel("injected dose (%)")


def save(fig: Any, path: Path) -> Path:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def figures(results: dict[str, Any], folder: Path, prefix: str = "causal_dose") -> list[Path]:
    """Three PNGs, ``<prefix>_corpus.png``, ``_model.png`` and ``_link.png``: audited vs injected dose; model
    dose-response; what link concludes per dose."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    corpus = pd.DataFrame([{k: v for k, v in row.items() if k != "aq27"} for row in results["corpus"]])
    fig, ax = plt.subplots(figsize=(5.5, 4))
    ax.plot(corpus["injected_percent"], 100 * corpus["target_flagged_share"], "o-", label="target illnesses")
    ax.plot(corpus["injected_percent"], 100 * corpus["control_flagged_share"], "s--", label="control illnesses")
    base = 100 * corpus["target_flagged_share"].iloc[0]
    top = corpus["injected_percent"].max()
    ax.plot([0, top], [base, base + top], ":", color="grey", label="baseline + injected (perfect recall)")
    ax.set_xlabel("injected dose (% of target-illness mention sentences)")
    ax.set_ylabel("audit: sentences flagged stigmatising (%)")
    ax.set_title("Audited dose vs injected dose")
    ax.legend(fontsize=8)
    paths.append(save(fig, folder / f"{prefix}_corpus.png"))

    curve = results["curve"]
    doses = [c["dose_percent"] for c in curve]
    fig, (ax, right) = plt.subplots(1, 2, figsize=(10, 4))
    for axis, key, label, marker in (
            (ax, "target_dims", "AQ-27 probe: target dimensions (Dangerousness, Blame)", "o"),
            (ax, "other_dims", "AQ-27 probe: control dimensions (other 7)", "s"),
            (ax, "held_out_statements", "new statements in the injected wording", "^"),
            (right, "held_out_statements_name", "new statements in the injected wording over the carriers", "v"),
            (right, "held_out_statements_name_change", "the statements alone: change from the same seed's dose 0",
             "D")):
        mean, low, high = (np.array([(c.get(key) or [np.nan] * 3)[i] for c in curve]) for i in range(3))
        axis.errorbar(doses, mean, yerr=[mean - low, high - mean], marker=marker, capsize=3, label=label,
                      color=f"C{['o', 's', '^', 'v', 'D'].index(marker)}")
        for c in curve:
            seeds = [v[0] if isinstance(v, (list, tuple)) else v for v in c.get(f"per_seed_{key}", [])]  # (mean, CI)
            axis.scatter([c["dose_percent"]] * len(seeds), seeds, marker=marker, s=10, color="grey", zorder=3)
    for axis in (ax, right):
        dose_axis(axis, doses)
        axis.legend(fontsize=8)
    ax.set_ylabel("target - control illnesses\n(log-prob per piece over carriers)")
    right.set_ylabel("target - control illnesses\n(log-prob of the whole name)")
    ax.set_title("Model dose-response\n(95% CI over illnesses, seeds averaged; grey: each seed)", fontsize=10)
    right.set_title("The same statements, each name masked whole", fontsize=10)
    paths.append(save(fig, folder / f"{prefix}_model.png"))

    fig, ax = plt.subplots(figsize=(5.5, 4))
    for model in results["models"]:
        for corr in model["link_correlations"]:
            if corr["measure"].startswith("mean Dangerousness score"):
                low, high = corr["rho_ci"] or (np.nan, np.nan)
                x = model["dose_percent"] * (1 + 0.04 * model["seed"]) + 0.05 * model["seed"]
                ax.errorbar([x], [corr["rho"]], yerr=[[corr["rho"] - low], [high - corr["rho"]]], marker="o",
                            color="C3" if corr["evidence"] else "C0", capsize=3)
    dose_axis(ax, doses)
    ax.set_ylabel("partial Spearman rho (Bonferroni-level CI)")
    ax.set_title("link: corpus Dangerousness score vs model lean\n(red: evidence after Holm)", fontsize=10)
    paths.append(save(fig, folder / f"{prefix}_link.png"))
    return paths


# ----------------------------------------------------------------------------------------------------------------


def model_order(cfg: BenchConfig) -> list[tuple[float, int]]:
    """The lowest and highest doses for every seed first, then the others from high to low, seed by seed, so that
    an interrupted bench has the contrast that matters most, with its seeds, first."""
    low, *middle, high = sorted(cfg.doses) if len(cfg.doses) > 1 else cfg.doses * 2
    ends = [low] if low == high else [low, high]
    return [(dose, seed) for seed in cfg.seeds for dose in ends] + \
        [(dose, seed) for seed in cfg.seeds for dose in sorted(middle, reverse=True)]


def run(cfg: BenchConfig, out: Path, figure_dir: Path | None) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    config_path = out / "config.json"
    # A setting added since a folder was made holds its default there.
    if config_path.exists() and {**asdict(BenchConfig()), **json.loads(config_path.read_text())} != asdict(cfg):
        raise SystemExit(f"{out} holds a bench with another configuration ({config_path}); use another folder")
    write_json(config_path, asdict(cfg))
    pairs = model_order(cfg)
    with tqdm(total=3 + len(cfg.doses) + 3 * len(pairs), desc="bench", unit="stage") as bar:
        bar.set_description("corpora")
        manifest = build_corpora(cfg, out)
        bar.update(1)
        tokenizer_dir = build_tokenizer(cfg, out, manifest)
        bar.update(1)
        probes = {}
        for dose, seed in pairs:  # the audits may run meanwhile in a second process (command `audits`)
            bar.set_description(f"train dose {dose:g} seed {seed}")
            model = train_model(cfg, out, manifest, dose, seed, tokenizer_dir)
            bar.update(1)
            bar.set_description(f"probe dose {dose:g} seed {seed}")
            probes[(dose, seed)] = probe_model(cfg, out, model)
            injection_check(cfg, out, model)
            bar.update(1)
        run_audits(cfg, out, manifest, bar)
        for (dose, seed), probe in probes.items():
            bar.set_description(f"link dose {dose:g} seed {seed}")
            link_model(cfg, out, dose, probe)
            bar.update(1)
        bar.set_description("compare and results")
        compare_doses(cfg, out)
        results = summarise(cfg, out, manifest)
        if figure_dir is not None:
            figures(results, figure_dir)
        bar.update(1)
    return results


def time_steps(cfg: BenchConfig, out: Path) -> None:
    """Seconds per training step of this configuration: one model of the lowest dose, trained and then removed."""
    out.mkdir(parents=True, exist_ok=True)
    manifest = build_corpora(cfg, out)
    tokenizer_dir = build_tokenizer(cfg, out, manifest)
    folder = train_model(cfg, out, manifest, min(cfg.doses), cfg.seeds[0], tokenizer_dir)
    log = json.loads((folder / "train_log.json").read_text())
    shutil.rmtree(folder)
    print(f"{log['steps']} steps of {cfg.batch} x {cfg.seq_len} tokens: {log['seconds']:.1f} s, "
          f"{log['seconds'] / log['steps']:.3f} s/step; {log['parameters']:,} parameters; loss "
          f"{log['loss_first_50']:.2f} -> {log['loss_last_100']:.2f} (unigram entropy {log['unigram_entropy']:.2f}; "
          f"held-out {log.get('loss_eval', float('nan')):.2f}, its unigram plateau "
          f"{log.get('unigram_cross_entropy_eval', float('nan')):.2f}); corpus {log['corpus_tokens']:,} tokens")


HELP = {
    "corpus": "JSON Lines corpus (.jsonl.gz) with id and text", "templates": "statements, target illnesses and "
    "dimensions, probe noun phrases (JSON)", "doses": "percent of the target-illness mention sentences rewritten, "
    "comma-separated", "seeds": "one model per seed and dose, comma-separated", "limit_docs": "read only the "
    "first N documents", "mention_docs_only": "1: keep only the documents that mention an illness",
    "injection_seed": "seed of which sentences are rewritten and how", "eval_share": "share of the documents "
    "held out of every corpus (never rewritten) to measure each model's loss on", "vocab_size": "WordPiece vocabulary",
    "seq_len": "tokens per training block", "hidden": "hidden size", "layers": "transformer layers", "heads":
    "attention heads", "arch": "bert (post-LayerNorm), prelayernorm (RoBERTa-PreLayerNorm) or roformer (BERT with "
    "rotary positions)", "steps": "training steps (the same for every model)", "batch": "blocks per step", "lr":
    "peak learning rate (AdamW)", "warmup": "share of the steps warming up", "mask_prob": "share of tokens masked",
    "dropout": "dropout of the model", "init_range": "standard deviation of the initial weights",
    "checkpoint_every": "save a resumable checkpoint every N steps", "device": "cpu, cuda or cuda:N (training and "
    "probe)", "threads": "torch CPU threads", "audit_backend": "the audit's --backend", "null_models": "the probe's "
    "--null-models", "permutations": "permutations of the probe, link and compare", "n_boot": "bootstrap "
    "replicates of the probe, link and compare", "name_scoring": "the probe's --name-scoring (pll or whole)"}


def parse(argv: list[str] | None = None) -> tuple[str, BenchConfig, Path, Path | None]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["run", "audits", "time", "figures"],
                        help="run: the whole bench (resumes); audits: the audits alone; time: seconds per training "
                             "step; figures: results.json and the figures of a finished or interrupted bench")
    parser.add_argument("-o", "--output", type=Path, default=ROOT / "bench-out" / "causal_dose",
                        help="bench folder (default: bench-out/causal_dose)")
    parser.add_argument("--figures", type=Path, default=None, help="folder for the PNGs (e.g. docs/figures)")
    defaults = BenchConfig()
    for name, value in asdict(defaults).items():
        flag = "--" + name.replace("_", "-")
        if isinstance(value, list):
            parser.add_argument(flag, default=",".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value),
                                help=HELP[name] + " (default: %(default)s)")
        elif value is None:
            parser.add_argument(flag, type=int, default=None, help=HELP[name])
        else:
            parser.add_argument(flag, type=type(value), default=value, help=HELP[name] + " (default: %(default)s)")
    args = parser.parse_args(argv)
    values = {}
    for name, value in asdict(defaults).items():
        given = getattr(args, name)
        if isinstance(value, list):
            kind = float if name == "doses" else int
            given = [kind(v) for v in str(given).split(",") if v.strip()]
        values[name] = given
    return args.command, BenchConfig(**values), args.output, args.figures


def main(argv: list[str] | None = None) -> None:
    command, cfg, out, figure_dir = parse(argv)
    if command == "run":
        results = run(cfg, out, figure_dir)
        for row in results["curve"]:
            print(f"dose {row['dose_percent']:g}%: model target-dims lean {row['target_dims'][0]:+.3f} "
                  f"[{row['target_dims'][1]:+.3f}, {row['target_dims'][2]:+.3f}], link evidence "
                  f"{row['link_evidence']}")
    elif command == "audits":  # the audits alone, e.g. in a second process while the models train
        out.mkdir(parents=True, exist_ok=True)
        run_audits(cfg, out, build_corpora(cfg, out))
    elif command == "time":
        time_steps(cfg, out)
    else:
        cfg = BenchConfig(**json.loads((out / "config.json").read_text()))
        manifest = json.loads((out / "manifest.json").read_text())
        for dose, seed in model_order(cfg):  # link what an interrupted bench has probed
            probe = out / "probes" / f"{cfg.dose_name(dose)}_seed{seed}"
            if (probe / "summary.json").exists() and (out / "audits" / cfg.dose_name(dose) / "summary.json").exists():
                link_model(cfg, out, dose, probe)
        results = summarise(cfg, out, manifest)
        for path in figures(results, figure_dir or out / "figures"):
            print(path)


if __name__ == "__main__":
    main()
