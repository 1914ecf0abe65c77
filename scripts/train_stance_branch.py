"""Train the stance branch of a language's default model (corpus_audit/embed/stance.py; issue 41, item 2).

The branch is the encoder's top ``--layers`` layers, tuned with LoRA adapters (``--rank``; their layer norms tuned
whole) and a linear head over their mean-pooled token states, on the labelled sentences of
``templates/LANG/stigma_labelled.csv`` (real and written) and the functional suite's train cases
(``templates/LANG/stigma_suite.csv``), each masked as an audit masks it. The head learns the classes of the
stigma target ``category`` (each gate category of a sentence that does not stigmatise, and ``stigmatising``), with
classes balanced and each written or suite sentence weighing ``--written-weight``. The lower layers are frozen:
their hidden states are computed once. Dev sentences (real, written, suite) are scored after every epoch; the
held-out real sentences and the suite's test cases are never read.

Writes the adapter (``--out``, default the package's ``corpus_audit/axes/LANG-stance-MODEL.safetensors``) with
its settings, the data's hashes and the dev numbers in its header, and prints the dev numbers. ``--grid`` runs
several settings over one computation of the frozen states and writes each adapter and a JSON of all results into
``--out-dir`` (the way settings are chosen: on dev). Needs torch and peft (``pip install peft``); a GPU (``--device
cuda``) makes it minutes, two CPU cores an hour.

    PYTHONPATH=$PWD python scripts/train_stance_branch.py --lang en --layers 2 --rank 16 --epochs 4
    PYTHONPATH=$PWD python scripts/train_stance_branch.py --lang en --grid grid.json --out-dir runs/ --device cuda
"""

from __future__ import annotations

import argparse
import copy
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from sklearn.metrics import roc_auc_score

from corpus_audit.embed import stance_base
from corpus_audit.embed.stance import adapter_path, write_adapter
from corpus_audit.languages import LANGUAGES
from corpus_audit.scm.axes import STIGMA_TARGETS
from corpus_audit.scm.stigma import StigmaData, source_weights, stigma_labels
from corpus_audit.scm.suite import FLAG_TARGET, RECALL_TARGET, load_training_data
from corpus_audit.stigma.judgement import STIGMA_DECISION

TARGET = "category"
MAX_TOKENS = 128  # the labelled sentences are short; longer ones are cut here only while training
LORA_MODULES = ["query", "key", "value", "dense"]


@dataclass(frozen=True)
class Settings:
    layers: int = 2
    rank: int = 16  # LoRA rank of each tuned linear layer
    epochs: int = 4
    learning_rate: float = 3e-4  # of the adapters and layer norms
    head_learning_rate: float = 1e-3
    batch_size: int = 32
    written_weight: float = 0.5
    dropout: float = 0.1
    seed: int = 0

    @property
    def name(self) -> str:
        return (f"k{self.layers}-r{self.rank}-e{self.epochs}-lr{self.learning_rate:g}-w{self.written_weight:g}"
                f"-s{self.seed}")


class FrozenStates:
    """The hidden states after the first ``cut`` layers of the texts at ``rows`` (the train and dev sentences),
    computed once, kept on ``device``."""

    def __init__(self, transformer, tokenizer, texts: list[str], rows: np.ndarray, cut: int, device: str,
                 batch: int = 128) -> None:
        import torch

        self.states: dict = {}
        order = rows[np.argsort([len(texts[i]) for i in rows], kind="stable")]
        transformer = transformer.to(device).eval()
        with torch.inference_mode():
            for start in range(0, len(order), batch):
                chunk = order[start:start + batch]
                encoded = tokenizer([texts[i] for i in chunk], padding=True, truncation=True, max_length=MAX_TOKENS,
                                    return_tensors="pt").to(device)
                hidden = transformer(input_ids=encoded["input_ids"], attention_mask=encoded["attention_mask"],
                                     output_hidden_states=True).hidden_states[cut]
                for position, row in enumerate(chunk):
                    length = int(encoded["attention_mask"][position].sum())
                    self.states[row] = hidden[position, :length].clone()

    def batch(self, rows: np.ndarray):
        import torch

        sequences = [self.states[i] for i in rows]
        longest = max(len(sequence) for sequence in sequences)
        hidden = sequences[0].new_zeros((len(rows), longest, sequences[0].shape[1]))
        mask = torch.zeros((len(rows), longest), dtype=torch.long, device=hidden.device)
        for position, sequence in enumerate(sequences):
            hidden[position, :len(sequence)] = sequence
            mask[position, :len(sequence)] = 1
        return hidden, mask


def build_branch(transformer, settings: Settings, n_classes: int):
    """The top layers copied, LoRA adapters injected (only they and the layer norms train; rank 0: every weight of
    the copies trains), and the head."""
    import torch
    from peft import LoraConfig, inject_adapter_in_model

    cut = len(transformer.encoder.layer) - settings.layers
    layers = torch.nn.ModuleList(copy.deepcopy(transformer.encoder.layer[cut:]))
    if settings.rank:  # LoRA; rank 0: the top layers tuned whole
        layers = inject_adapter_in_model(LoraConfig(r=settings.rank, lora_alpha=2 * settings.rank,
                                                    lora_dropout=0.05, target_modules=LORA_MODULES), layers)
    for name, parameter in layers.named_parameters():
        parameter.requires_grad = not settings.rank or "lora_" in name or "LayerNorm" in name

    class Branch(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers, self.dropout = layers, torch.nn.Dropout(settings.dropout)
            self.head = torch.nn.Linear(transformer.config.hidden_size, n_classes)

        def features(self, hidden, mask):
            additive = (1.0 - mask[:, None, None, :].to(hidden.dtype)) * torch.finfo(hidden.dtype).min
            for layer in self.layers:
                out = layer(hidden, attention_mask=additive)
                hidden = out[0] if isinstance(out, tuple) else out
            weights = mask[:, :, None].to(hidden.dtype)
            return (hidden * weights).sum(1) / weights.sum(1)

        def forward(self, hidden, mask):
            return self.head(self.dropout(self.features(hidden, mask)))

    return Branch(), cut


def adapter_tensors(branch) -> dict[str, np.ndarray]:
    """The branch's trained tensors named as corpus_audit.embed.stance reads them."""
    tensors = {}
    for name, value in branch.layers.named_parameters():
        if not value.requires_grad:
            continue
        array = value.detach().float().cpu().numpy()
        for factor in ("lora_A", "lora_B"):
            marker = f".{factor}.default.weight"
            if name.endswith(marker):
                tensors[name.removesuffix(marker) + f".{factor}"] = array
                break
        else:
            tensors[name] = array
    return tensors


def evaluate(branch, states: FrozenStates, data: StigmaData, rows: np.ndarray) -> dict:
    """Dev numbers of the branch's own head (p(stigmatising)): AUC per source, and per suite function the share
    at or above 0.5."""
    import torch

    branch.eval()
    scores = []
    with torch.inference_mode():
        for start in range(0, len(rows), 256):
            hidden, mask = states.batch(rows[start:start + 256])
            scores.append(torch.softmax(branch(hidden, mask), -1)[:, -1].float().cpu().numpy())
    branch.train()
    score, truth, source = np.concatenate(scores), data.stigmatising[rows], data.source[rows]
    result = {f"auc_{name}": float(roc_auc_score(truth[source == name], score[source == name]))
              for name in ("real", "written", "suite") if len(set(truth[source == name])) == 2}
    suite = source == "suite"
    shares = {function: float((score[suite & (data.function[rows] == function)] >= STIGMA_DECISION).mean())
              for function in sorted(set(data.function[rows][suite]))}
    stigmatising = {function for function in shares if data.stigmatising[rows][data.function[rows] == function].all()}
    result["suite_functions_failing"] = sorted(
        function for function, share in shares.items()
        if (share < RECALL_TARGET if function in stigmatising else share > FLAG_TARGET))
    result["suite_shares"] = shares
    return result


def train(settings: Settings, transformer, states: FrozenStates, data: StigmaData, device: str,
          log=print) -> tuple[object, list[dict]]:
    import torch

    torch.manual_seed(settings.seed)
    classes = STIGMA_TARGETS[TARGET]
    branch, _ = build_branch(transformer, settings, len(classes))
    branch = branch.to(device).train()
    train_rows, dev_rows = data.rows(("train",)), data.rows(("dev",))
    labels = stigma_labels(data, np.arange(len(data)), TARGET)
    weights = source_weights(data, np.arange(len(data)), settings.written_weight)
    counts = np.bincount(labels[train_rows], weights=weights[train_rows], minlength=len(classes))
    class_weight = torch.tensor(counts.sum() / (len(classes) * np.maximum(counts, 1e-9)), dtype=torch.float32,
                                device=device)
    loss_function = torch.nn.CrossEntropyLoss(weight=class_weight, reduction="none")
    trainable = [p for p in branch.layers.parameters() if p.requires_grad]
    optimiser = torch.optim.AdamW([{"params": trainable, "lr": settings.learning_rate},
                                   {"params": branch.head.parameters(), "lr": settings.head_learning_rate}],
                                  weight_decay=0.01)
    steps = settings.epochs * -(-len(train_rows) // settings.batch_size)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda step: min(1.0, (step + 1) / max(1, steps // 10)) * max(0.0, (steps - step) / steps))
    rng = np.random.default_rng(settings.seed)
    history = []
    for epoch in range(settings.epochs):
        order = rng.permutation(train_rows)
        for start in range(0, len(order), settings.batch_size):
            rows = order[start:start + settings.batch_size]
            hidden, mask = states.batch(rows)
            batch_weights = torch.tensor(weights[rows], dtype=torch.float32, device=device)
            loss = (loss_function(branch(hidden, mask), torch.tensor(labels[rows], device=device))
                    * batch_weights).sum() / batch_weights.sum()
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            schedule.step()
        history.append({"epoch": epoch + 1, **evaluate(branch, states, data, dev_rows)})
        log(json.dumps({"settings": settings.name, **{key: value for key, value in history[-1].items()
                                                      if key != "suite_shares"}}))
    return branch, history


PREPARED_FIELDS = ("stigmatising", "split", "source", "category", "function")


def prepare(data: StigmaData, path: Path) -> None:
    """Write what training reads of ``data`` (masked texts, labels, splits, sources, suite functions, the data's
    hash) to ``path``: training where the package's data and lexicons are not installed (a GPU machine)."""
    rows = data.rows(("train", "dev"))
    fields = {"texts": [data.texts[i] for i in rows], "sha256": data.sha256,
              **{name: [str(value) for value in getattr(data, name)[rows]] for name in PREPARED_FIELDS}}
    path.write_text(json.dumps(fields), encoding="utf-8")


def read_prepared(path: Path) -> tuple[StigmaData, str]:
    """The training data of a :func:`prepare` file, and the hash of the data it was made from."""
    fields = json.loads(path.read_text(encoding="utf-8"))
    n = len(fields["texts"])
    column = {name: np.array(fields[name], dtype=object) for name in PREPARED_FIELDS}
    data = StigmaData(fields["texts"], column["stigmatising"] == "True", column["split"], column["source"],
                      np.full(n, "", dtype=object), path, column["category"], np.full(n, "", dtype=object),
                      [()] * n, column["function"])
    return data, fields["sha256"]


def keep_best(results: list[dict], keep: int) -> set[str]:
    """The adapters of the ``keep`` settings with the best mean of their last epoch's dev AUCs."""
    def mean_auc(result: dict) -> float:
        last = result["dev"][-1]
        return float(np.mean([value for key, value in last.items() if key.startswith("auc_")]))

    return {result["adapter"] for result in sorted(results, key=mean_auc, reverse=True)[:keep]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lang", choices=sorted(LANGUAGES), required=True)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", type=Path, help="the adapter file (default: the package's, for the language)")
    parser.add_argument("--grid", type=Path, help="JSON list of settings objects (fields of Settings) to run")
    parser.add_argument("--out-dir", type=Path, help="where --grid writes its adapters and results.json")
    parser.add_argument("--keep", type=int, default=None, help="with --grid, write only the best KEEP adapters")
    parser.add_argument("--max-seconds", type=float, default=None,
                        help="with --grid, start no new setting after this many seconds (reported as not run)")
    parser.add_argument("--prepare", type=Path, help="write the training data to this JSON file and stop")
    parser.add_argument("--prepared", type=Path, help="train on a --prepare file instead of the package's data")
    parser.add_argument("--base", type=Path, help="the base model's folder (default: the language's default "
                                                  "model's); with --base-sha256, the weights it stands for")
    parser.add_argument("--base-sha256", help="SHA-256 of the weights the adapter will merge into (with --base)")
    for field, default in asdict(Settings()).items():
        parser.add_argument(f"--{field.replace('_', '-')}", type=type(default), default=default)
    args = parser.parse_args()
    model = LANGUAGES[args.lang].default_model
    if args.prepare:
        prepare(load_training_data(args.lang), args.prepare)
        return
    import torch

    base = stance_base(model, args.base)
    base_sha256 = args.base_sha256 or base.weights_sha256
    if args.prepared:
        data, data_sha256 = read_prepared(args.prepared)
    else:
        data = load_training_data(args.lang)
        data_sha256 = data.sha256
    grid = [Settings(**entry) for entry in json.loads(args.grid.read_text())] if args.grid else \
        [Settings(**{field: getattr(args, field) for field in asdict(Settings())})]
    started = time.time()
    results, adapters = [], {}
    if args.grid:
        args.out_dir.mkdir(parents=True, exist_ok=True)
    for layers in sorted({settings.layers for settings in grid}):
        transformer = base.transformer()
        cut = len(transformer.encoder.layer) - layers
        states = FrozenStates(transformer, base.tokenizer, data.texts, data.rows(("train", "dev")), cut, args.device)
        print(f"frozen states after layer {cut}: {time.time() - started:.0f} s", flush=True)
        for settings in (entry for entry in grid if entry.layers == layers):
            if args.max_seconds is not None and time.time() - started > args.max_seconds:
                print(f"not run (time): {settings.name}", flush=True)
                continue
            branch, history = train(settings, transformer, states, data, args.device)
            out = (args.out_dir / f"{args.lang}-{settings.name}.safetensors" if args.grid
                   else args.out or adapter_path(model, args.lang))
            adapters[out.name] = (out, adapter_tensors(branch), dict(
                base=base.name, base_sha256=base_sha256, lang=args.lang, cut=cut, layers=layers,
                rank=settings.rank, alpha=2.0 * settings.rank if settings.rank else 1.0,
                extra={"settings": asdict(settings), "data_sha256": data_sha256, "target": TARGET,
                       "trained_on": int(len(data.rows(("train",)))), "dev": history, "torch": torch.__version__}))
            results.append({"settings": asdict(settings), "adapter": out.name, "dev": history,
                            "seconds": time.time() - started})
            if args.grid:  # after each setting, so that a run cut short still reports what it did
                (args.out_dir / "results.json").write_text(json.dumps(results, indent=1))
    chosen = keep_best(results, args.keep) if args.grid and args.keep is not None else set(adapters)
    for name in chosen:
        out, tensors, settings = adapters[name]
        out.parent.mkdir(parents=True, exist_ok=True)
        write_adapter(out, tensors, **settings)
        print(f"wrote {out}", flush=True)


if __name__ == "__main__":
    main()
