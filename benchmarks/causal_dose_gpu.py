"""The dose-response bench on a GPU in a few minutes (issue 44; docs/validation.md): doses 0/1/5/20 % x 3 seeds of
models large enough and trained long enough to leave the unigram plateau, probed, linked and compared as
benchmarks/causal_dose.py does.

Two steps, because the GPU machine has no network and only the packages of its image, and its time is short:

    # here (CPU): corpora, tokenizer, token blocks, the audits, the questionnaire and two wheels the product
    # imports that the GPU machine lacks, into one folder that travels with the working tree (``carry``)
    python benchmarks/causal_dose_gpu.py prepare -i bench-out/causal_dose_gpu
    # there: train the 12 models side by side, probe, link, compare; results and figures into OUT
    sh benchmarks/causal_dose_gpu.sh bench-out/causal_dose_gpu "$OUT"

``device`` starts one process per model (spawned), times ``--calibration-steps`` steps of every model at once,
then gives every model the same number of steps, as many as fit the training window of ``--budget`` (seconds from
the start of the command; between ``--min-steps`` and the configuration's ``steps``). Each process then probes its
model (``probe aq27``, default method, with the bench's questionnaire), checks the injected wording and links the
model to the audit of its corpus; the parent compares the doses of each seed (``probe compare``) and writes
``results.json`` (the bench's, with each model's training log: loss on the training corpus and on held-out
documents beside their unigram plateaus), the bench's three figures, ``probes.tar.gz`` (the probes' tables, links
and comparisons, to redo the results elsewhere) and ``workers_log.txt`` (the end of each model's log); the shell
script adds ``log.txt``, this command's own output. A time guard: training stops at the end of its
window whatever the step (recorded as ``stopped_early``), a probe that would start too late is not started, a
comparison likewise, and the results are written in every case from what finished.

``results`` redoes a run's results here, from what it gave back (``results.json`` and ``probes.tar.gz``) and the
prepared folder: every probe linked again with today's ``link``, ``results.json`` and the figures (named
``--prefix``), so that what is reported of a GPU run can be recomputed without the GPU.

``--tiny`` prepares a miniature (150 posts of the bundled demo corpus, doses 0 and 100 %, two seeds, a 2-layer
model, one noun phrase) that runs both steps on a CPU in about a minute: the plumbing of the GPU run, checked
before spending GPU time (tests/benchmarks/test_causal_dose_gpu.py).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import multiprocessing as mp
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import traceback
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import causal_dose  # noqa: E402
from causal_dose import BenchConfig  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
# The GPU run: the bench's corpora (documents that mention an illness), 5 % of them held out to measure the loss,
# a 4-layer RoFormer (BERT with rotary positions: on this corpus it leaves the unigram plateau within a few hundred
# steps where BERT stays on it, docs/validation.md) of hidden 256 on blocks of 128 tokens, 256 blocks a step,
# dropout 0.1 against learning the small corpus by heart; at most 2,000 steps (65 M tokens, about 100 epochs),
# fewer when the calibration says they do not fit.
GPU_SETTINGS: dict[str, Any] = {
    "doses": [0.0, 1.0, 5.0, 20.0], "seeds": [0, 1, 2], "eval_share": 0.05, "arch": "roformer", "layers": 4,
    "hidden": 256, "heads": 4, "seq_len": 128, "batch": 256, "lr": 1e-3, "dropout": 0.1, "steps": 2000,
    "checkpoint_every": 10 ** 9, "null_models": 1, "threads": 1}
TINY_CORPUS = ROOT / "demo" / "reddit_sample_en.jsonl.gz"
TINY_PROBE_ILLNESSES = ["anxiety", "ADHD", "social anxiety", "bipolar affective disorder", "depression", "PTSD",
                        "schizophrenia", "psychosis", "asthma", "diabetes", "flu", "cold", "migraines",
                        "hypertension"]
TINY_SETTINGS: dict[str, Any] = {
    "corpus": str(TINY_CORPUS), "limit_docs": 150, "doses": [0.0, 100.0], "seeds": [0, 1], "eval_share": 0.1,
    "arch": "roformer", "vocab_size": 800, "layers": 2, "hidden": 64, "heads": 2, "seq_len": 32, "batch": 16,
    "lr": 3e-3, "steps": 300, "checkpoint_every": 10 ** 9, "null_models": 1, "permutations": 199, "n_boot": 200,
    "audit_backend": "torch", "threads": 1}
# Imported by the product's probe, link and compare, and not in the GPU machine's image
# (/work/.library/device/KINDS.md lists what it has): carried as wheels for its Python.
WHEELS = ("pyahocorasick", "zstandard")
DEVICE_PYTHON = "3.12"
AUDIT_FILES = ("summary.json", "sentences.parquet", "documents.parquet", "aq27.csv", "score.json",
               "checkpoints.json", "filtered.summary.json")  # what link and the results read of an audit
PROBE_FILES = ("summary.json", "illnesses.csv", "dimensions.csv", "link.json", "injection_check.json",
               "scores.parquet", "baselines.parquet", "null_scores.parquet")


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


# ----------------------------------------------------------------------------------------------------------------
# prepare (here)


def prepare(folder: Path, tiny: bool) -> None:
    """Everything the GPU run needs but the models: the bench's corpora, tokenizer, blocks, questionnaire and
    audits (pruned to what link and the results read), the templates and the wheels, in ``folder``."""
    settings = TINY_SETTINGS if tiny else GPU_SETTINGS
    folder.mkdir(parents=True, exist_ok=True)
    templates = json.loads(causal_dose.DEFAULT_TEMPLATES.read_text())
    if tiny:
        templates.update(probe_noun_phrases=["someone"], probe_illnesses=TINY_PROBE_ILLNESSES)
    causal_dose.write_json(folder / "templates.json", templates)
    cfg = BenchConfig(**{**asdict(BenchConfig()), **settings, "templates": str(folder / "templates.json")})
    causal_dose.write_json(folder / "config.json", {**asdict(cfg), "tiny": tiny})
    manifest = causal_dose.build_corpora(cfg, folder)
    tokenizer_dir = causal_dose.build_tokenizer(cfg, folder, manifest)
    from transformers import BertTokenizerFast

    tokenizer = BertTokenizerFast.from_pretrained(str(tokenizer_dir))
    for dose in [*cfg.doses, None]:
        causal_dose.token_blocks(cfg, folder, manifest, dose, tokenizer)
    causal_dose.questionnaire(cfg, folder)
    causal_dose.run_audits(cfg, folder, manifest)
    for audit in (folder / "audits").iterdir():
        for path in audit.iterdir():
            if path.name not in AUDIT_FILES:
                shutil.rmtree(path) if path.is_dir() else path.unlink()
    wheels = folder / "wheels"
    wheels.mkdir(exist_ok=True)
    versions = [f"{name}=={importlib.metadata.version(name)}" for name in WHEELS]
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    for python in sorted({DEVICE_PYTHON, here} if tiny else {DEVICE_PYTHON}):  # and this one's for the check
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                        "--python-version", python, "--implementation", "cp", "--platform", "manylinux_2_28_x86_64",
                        "--platform", "manylinux_2_17_x86_64", "--platform", "manylinux2014_x86_64", "-d",
                        str(wheels), *versions], check=True)
    size = sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())
    log(f"prepared {folder}: {size / 2 ** 20:.1f} MiB ({len(list(wheels.glob('*.whl')))} wheels)")


# ----------------------------------------------------------------------------------------------------------------
# device (there)


def bench_config(bench: Path, device: str) -> BenchConfig:
    saved = json.loads((bench / "config.json").read_text())
    saved.pop("tiny", None)
    return BenchConfig(**{**saved, "device": device, "templates": str(bench / "templates.json")})


def model_name(cfg: BenchConfig, dose: float, seed: int) -> str:
    return f"{cfg.dose_name(dose)}_seed{seed}"


def worker(bench: str, device: str, dose: float, seed: int, index: int, timing: dict[str, float],
           speeds: Any, planned: Any, go: Any) -> None:
    """One model: calibrate (all models at once), wait for the planned steps, train, probe, check, link."""
    bench_path = Path(bench)
    cfg = bench_config(bench_path, device)
    name = model_name(cfg, dose, seed)
    (bench_path / "logs").mkdir(exist_ok=True)
    with open(bench_path / "logs" / f"{name}.txt", "w", buffering=1) as handle:
        sys.stdout = sys.stderr = handle
        try:
            manifest = json.loads((bench_path / "manifest.json").read_text())
            tokenizer_dir = bench_path / "tokenizer"
            calibration = causal_dose.train_model(
                replace(cfg, steps=int(timing["calibration_steps"])), bench_path, manifest, dose, seed,
                tokenizer_dir, deadline=timing["train_end"], folder=bench_path / "calibration" / name)
            speeds[index] = seconds_per_step(json.loads((calibration / "train_log.json").read_text()))
            log(f"{name}: {speeds[index]:.4f} s/step with every model training")
            if not go.wait(timeout=max(timing["train_end"] - time.time(), 1)):
                log(f"{name}: no plan before the end of the training window (time guard)")
                return
            steps = planned.value
            log(f"{name}: training {steps} steps")
            causal_dose.train_model(replace(cfg, steps=steps), bench_path, manifest, dose, seed, tokenizer_dir,
                                    deadline=timing["train_end"])
            if time.time() > timing["probe_start_by"]:
                log(f"{name}: too late to probe (time guard)")
                return
            model = bench_path / "models" / name
            probe = causal_dose.probe_model(cfg, bench_path, model)
            causal_dose.injection_check(cfg, bench_path, model)
            causal_dose.link_model(cfg, bench_path, dose, probe)
            log(f"{name}: probed, checked and linked")
        except Exception:  # the parent writes the results of the models that finished
            traceback.print_exc()
            raise
        finally:
            sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__


def seconds_per_step(train_log: dict[str, Any]) -> float:
    """From a training log: seconds per step after the first fifty (the device's start-up), else over all steps;
    infinite when no step was done."""
    clock = train_log["seconds_at_steps"]
    if len(clock) > 1:
        return (clock[-1][1] - clock[0][1]) / (clock[-1][0] - clock[0][0])
    return clock[0][1] / clock[0][0] if clock and clock[0][0] else float("inf")


def plan_steps(speeds: list[float], seconds: float, cfg: BenchConfig, min_steps: int) -> int:
    """The same number of steps for every model: as many as the slowest fits into ``seconds``, in fifties, between
    ``min_steps`` and ``cfg.steps``."""
    slowest = max(speeds) if speeds else float("inf")
    fits = int(seconds / slowest) // 50 * 50 if slowest > 0 else cfg.steps
    return max(min_steps, min(cfg.steps, fits))


def compare_available(cfg: BenchConfig, bench: Path) -> None:
    """``probe compare`` of each seed's probed doses (two or more)."""
    for seed in cfg.seeds:
        probes = [bench / "probes" / model_name(cfg, dose, seed) for dose in cfg.doses]
        probes = [probe for probe in probes if (probe / "link.json").exists()]
        target = bench / "compare" / f"seed{seed}"
        if len(probes) >= 2 and not (target / "compare.json").exists():
            causal_dose.cli("probe", "compare", *map(str, probes), "-o", str(target), "--permutations",
                            str(cfg.permutations), "--n-boot", str(cfg.n_boot))


def versions(device: str) -> dict[str, Any]:
    import torch

    found = {name: importlib.metadata.version(name) for name in ("torch", "transformers", "tokenizers", "numpy",
                                                                  "pandas", "scipy")}
    found["python"] = sys.version.split()[0]
    if device.startswith("cuda") and torch.cuda.is_available():
        found["gpu"] = torch.cuda.get_device_name(0)
    return found


def pack(bench: Path, out: Path) -> None:
    """The probes' tables, links, checks and the comparisons, and each model's training log, in one archive."""
    with tarfile.open(out / "probes.tar.gz", "w:gz") as archive:
        for probe in sorted((bench / "probes").glob("*")):
            for name in PROBE_FILES:
                if (probe / name).exists():
                    archive.add(probe / name, f"probes/{probe.name}/{name}")
        for path in sorted((bench / "models").glob("*/train_log.json")):
            archive.add(path, f"models/{path.parent.name}/train_log.json")
        for path in sorted((bench / "compare").glob("*/compare.json")):
            archive.add(path, f"compare/{path.parent.name}/compare.json")


def device_run(source: Path, out: Path, device: str, budget: float, calibration_steps: int, min_steps: int,
               train_reserve: float, started: float) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="causal-dose-gpu-"))
    bench = work / "bench"
    shutil.copytree(source, bench, ignore=shutil.ignore_patterns("wheels", "models", "probes", "compare",
                                                                 "calibration", "logs", "results.json"))
    cfg = bench_config(bench, device)
    timing = {"started": started, "budget": budget, "calibration_steps": calibration_steps,
              "train_end": started + budget - train_reserve,  # then probe, check, link, compare, results
              "probe_start_by": started + budget - 0.55 * train_reserve,
              "compare_start_by": started + budget - 0.25 * train_reserve,
              "workers_end": started + budget - 0.15 * train_reserve}
    pairs = causal_dose.model_order(cfg)
    context = mp.get_context("spawn")
    speeds, planned, go = context.Array("d", len(pairs)), context.Value("i", 0), context.Event()
    workers = [context.Process(target=worker, args=(str(bench), device, dose, seed, i, timing, speeds, planned, go),
                               name=model_name(cfg, dose, seed)) for i, (dose, seed) in enumerate(pairs)]
    for process in workers:
        process.start()
    log(f"{len(workers)} models started on {device}; training ends by {time.time() - started:.0f} + "
        f"{timing['train_end'] - time.time():.0f} s")
    while sum(value > 0 for value in speeds[:]) < sum(p.is_alive() or p.exitcode == 0 for p in workers) and \
            time.time() < timing["train_end"]:
        time.sleep(0.5)
    measured = [value for value in speeds[:] if 0 < value < float("inf")]
    planned.value = plan_steps(measured, timing["train_end"] - time.time() - 10, cfg, min_steps)
    timing["calibrated_at"] = time.time() - started
    log(f"calibration: {max(measured, default=float('nan')):.4f} s/step for the slowest of {len(measured)} models; "
        f"{planned.value} steps each")
    go.set()
    for process in workers:
        process.join(timeout=max(timing["workers_end"] - time.time(), 0))
    for process in workers:
        if process.is_alive():
            log(f"{process.name}: still running at the time guard, stopped")
            process.terminate()
            process.join(10)
    timing["workers_done_at"] = time.time() - started
    failed = [process.name for process in workers if process.exitcode != 0]
    if time.time() < timing["compare_start_by"]:
        try:
            compare_available(cfg, bench)
        except Exception:  # the results go on without the comparison
            traceback.print_exc()
    timing["compared_at"] = time.time() - started
    manifest = json.loads((bench / "manifest.json").read_text())
    results = causal_dose.summarise(cfg, bench, manifest)
    figure_error = None
    try:
        causal_dose.figures(results, out)
    except Exception as exc:  # the numbers matter more than the pictures
        figure_error = repr(exc)
    timing["finished_at"] = time.time() - started
    results["gpu_run"] = {"config": asdict(cfg), "steps_planned": planned.value, "calibration_s_per_step": speeds[:],
                          "models": [process.name for process in workers], "failed": failed,
                          "timing": {k: (v - started if k.endswith(("_end", "_by")) else v)
                                     for k, v in timing.items() if k != "started"},
                          "versions": versions(device), "figure_error": figure_error}
    causal_dose.write_json(out / "results.json", results)
    pack(bench, out)
    with open(out / "workers_log.txt", "w") as handle:
        for path in sorted((bench / "logs").glob("*.txt")):
            lines = path.read_text(errors="replace").replace("\r", "\n").splitlines()
            handle.write(f"\n===== {path.name} (last 40 lines)\n" + "\n".join(lines[-40:]) + "\n")
    shutil.rmtree(work, ignore_errors=True)
    return results


def results_here(source: Path, run: Path, out: Path, figure_dir: Path, prefix: str) -> dict[str, Any]:
    """The results of the GPU run given back in ``run`` (its ``results.json`` and ``probes.tar.gz``) redone in
    ``out`` from the prepared folder ``source``: each probe linked again to its audit, then the bench's summary and
    figures (``figure_dir``, named ``prefix``); the run's own record (``gpu_run``) kept."""
    shutil.copytree(source, out, ignore=shutil.ignore_patterns("wheels"), dirs_exist_ok=True)
    with tarfile.open(run / "probes.tar.gz") as archive:
        archive.extractall(out, filter="data")
    cfg = bench_config(out, "cpu")
    for dose, seed in causal_dose.model_order(cfg):
        probe = out / "probes" / model_name(cfg, dose, seed)
        if (probe / "summary.json").exists():
            (probe / "link.json").unlink(missing_ok=True)
            causal_dose.link_model(cfg, out, dose, probe)
    results = causal_dose.summarise(cfg, out, json.loads((out / "manifest.json").read_text()))
    results["gpu_run"] = json.loads((run / "results.json").read_text()).get("gpu_run")
    causal_dose.write_json(out / "results.json", results)
    causal_dose.figures(results, figure_dir, prefix)
    return results


def main(argv: list[str] | None = None) -> None:
    started = time.time()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["prepare", "device", "results"],
                        help="prepare: the input folder (here); device: the run (there); results: a run's results "
                             "redone here from what it gave back (--run)")
    parser.add_argument("-i", "--input", type=Path, default=ROOT / "bench-out" / "causal_dose_gpu",
                        help="the prepared folder (default: bench-out/causal_dose_gpu)")
    parser.add_argument("-o", "--output", type=Path, help="device: where results.json, the figures, probes.tar.gz "
                                                          "and log.txt go (the GPU machine's $OUT); results: the "
                                                          "folder the results are redone in")
    parser.add_argument("--run", type=Path, help="results: the folder a run gave back (results.json, probes.tar.gz)")
    parser.add_argument("--figures", type=Path, help="results: folder for the figures (default: OUTPUT/figures)")
    parser.add_argument("--prefix", default="causal_dose_gpu", help="results: the figures' name prefix")
    parser.add_argument("--tiny", action="store_true", help="prepare: the miniature (runs on a CPU in a minute)")
    parser.add_argument("--device", default="cuda", help="device: cuda (default) or cpu (the --tiny check)")
    parser.add_argument("--budget", type=float, default=330, help="device: seconds for the whole run (default 330)")
    parser.add_argument("--train-reserve", type=float, default=110,
                        help="device: seconds of the budget kept after training for probes, links, compare and "
                             "results (default 110)")
    parser.add_argument("--calibration-steps", type=int, default=150,
                        help="device: steps timed on every model at once before planning (default 150)")
    parser.add_argument("--min-steps", type=int, default=200, help="device: fewest steps planned (default 200)")
    args = parser.parse_args(argv)
    if args.command == "prepare":
        prepare(args.input, args.tiny)
        return
    if args.output is None:
        parser.error(f"{args.command} needs -o/--output")
    if args.command == "results":
        if args.run is None:
            parser.error("results needs --run (the folder the GPU run gave back)")
        redone = results_here(args.input, args.run, args.output, args.figures or args.output / "figures",
                              args.prefix)
        for row in redone["curve"]:
            print(f"dose {row['dose_percent']:g}%: whole name, statements, change from dose 0 "
                  f"{row['held_out_statements_name_change'] or '-'}; link holds {row['link_evidence']}")
        return
    os.environ.setdefault("TQDM_MININTERVAL", "10")  # the workers' logs: a line every 10 s, not every step
    results = device_run(args.input, args.output, args.device, args.budget, args.calibration_steps,
                         args.min_steps, args.train_reserve, started)
    for row in results["models"]:
        train = row["train"]
        log(f"dose {row['dose_percent']:g} seed {row['seed']}: {train['steps_done']} steps, loss "
            f"{train['loss_last_100']:.2f} (held-out {train.get('loss_eval', float('nan')):.2f}; unigram "
            f"{train['unigram_entropy']:.2f}), injected wording T-C {row['target_minus_control_held_out']:+.3f} per "
            f"piece, {row['target_minus_control_held_out_name']:+.3f} whole name; link {row['link_evidence']}")
    log(f"done in {time.time() - started:.0f} s: {args.output}")


if __name__ == "__main__":
    main()
