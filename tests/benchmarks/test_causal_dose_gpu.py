"""The GPU run of the dose-response bench (benchmarks/causal_dose_gpu.py, benchmarks/causal_dose_gpu.sh) in
miniature on this CPU, as the GPU machine would run it: the prepared folder, the shell script that installs the
carried wheels, and the run under an emulation of the machine's image (tests/benchmarks/device_image.py: no package
the image lacks can be imported, except the carried ones from where the script installs them). It checks the
plumbing that must not fail on the GPU for a silly reason: calibration and one plan of steps for every model, the
models trained in parallel processes, probed, checked and linked, the comparisons, and the at most eight files the
machine gives back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import causal_dose_gpu  # noqa: E402
import device_image  # noqa: E402


@pytest.fixture(scope="module")
def gpu_run(tmp_path_factory) -> tuple[Path, dict]:
    folder = tmp_path_factory.mktemp("causal_dose_gpu")
    prepared, out, carried = folder / "prepared", folder / "out", folder / "site"
    causal_dose_gpu.main(["prepare", "--tiny", "-i", str(prepared)])
    device_image.write_sitecustomize(folder / "image")
    script = (ROOT / "benchmarks" / "causal_dose_gpu.sh").read_text().replace("/tmp/causal-dose-site", str(carried))
    (folder / "run.sh").write_text(script)
    env = {**os.environ, "PYTHONPATH": str(folder / "image"), "DEVICE_IMAGE_CARRIED": str(carried),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}  # python3: this one
    # A generous budget: the run ends when its work is done; the time guard is for a slow machine.
    done = subprocess.run(["bash", str(folder / "run.sh"), str(prepared), str(out), "--device", "cpu", "--budget",
                           "600", "--calibration-steps", "50", "--min-steps", "100"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out, json.loads((out / "results.json").read_text())


def test_the_image_emulation_refuses_what_the_machine_lacks(tmp_path):
    device_image.write_sitecustomize(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "DEVICE_IMAGE_CARRIED": str(tmp_path / "site")}
    probe = "import numpy, pandas, scipy\ntry:\n    import zstandard\nexcept ModuleNotFoundError as e:\n    print(e)"
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120)
    assert "zstandard" in done.stdout and "not in its image" in done.stdout, done.stdout + done.stderr


@pytest.mark.slow
def test_the_gpu_run_gives_back_its_results_in_at_most_eight_files(gpu_run):
    out, _ = gpu_run
    assert sorted(path.name for path in out.iterdir()) == [
        "causal_dose_corpus.png", "causal_dose_link.png", "causal_dose_model.png", "log.txt", "probes.tar.gz",
        "results.json", "workers_log.txt"]
    with tarfile.open(out / "probes.tar.gz") as archive:
        names = set(archive.getnames())
    for name in ("dose_0_seed0", "dose_100_seed1"):
        assert {f"probes/{name}/{part}" for part in ("summary.json", "link.json", "injection_check.json",
                                                      "scores.parquet")} <= names
        assert f"models/{name}/train_log.json" in names
    assert {"compare/seed0/compare.json", "compare/seed1/compare.json"} <= names
    assert "done in" in (out / "log.txt").read_text()


@pytest.mark.slow
def test_every_model_trains_the_planned_steps_and_is_probed_and_linked(gpu_run):
    _, results = gpu_run
    run = results["gpu_run"]
    assert run["failed"] == [] and len(run["models"]) == 4
    assert all(0 < speed < float("inf") for speed in run["calibration_s_per_step"])
    assert 100 <= run["steps_planned"] <= run["config"]["steps"]
    assert run["timing"]["calibrated_at"] < run["timing"]["workers_done_at"] < run["timing"]["finished_at"]
    models = {(m["dose_percent"], m["seed"]): m for m in results["models"]}
    assert sorted(models) == [(0, 0), (0, 1), (100, 0), (100, 1)]
    for model in models.values():
        train = model["train"]
        assert train["steps_done"] == train["steps"] == run["steps_planned"] and not train["stopped_early"]
        # the losses the run reports beside their plateaus, on the training corpus and on held-out documents
        for key in ("loss_last_100", "loss_train_fixed", "loss_eval", "unigram_entropy", "unigram_cross_entropy_eval"):
            assert 0 < train[key] < 10, key
        assert isinstance(model["link_evidence"], bool)
        assert len(model["injection_check"]) == 8  # the test's 8 mental illnesses
    assert set(results["compare"]) == {"seed0", "seed1"}
    assert [row["dose_percent"] for row in results["curve"]] == [0, 100]
