"""The GPU machine's Python, emulated here: a ``sitecustomize`` that refuses to import any installed package the
machine's image does not hold, except from the folder the run installs its carried wheels into, when the project
imports it (a package of the image imports what its own version there needs). It checks that the
GPU run (benchmarks/causal_dose_gpu.sh) imports nothing the machine lacks before GPU time is spent finding out.

The list is the image's, as the workplace's notes on the lent machine (kind nvidia-h200, image 'cuda') gave it on
17 November 2026. Its versions differ from this machine's (Python 3.12, torch 2.11, transformers 5.17 there)."""

from __future__ import annotations

from pathlib import Path

DEVICE_PACKAGES = (
    "absl-py", "accelerate", "aiofiles", "aiohappyeyeballs", "aiohttp", "aiosignal", "annotated-doc", "anyio",
    "attrs", "botorch", "build", "certifi", "charset-normalizer", "chex", "click", "cloudpickle", "cmake",
    "colorama", "contourpy", "coverage", "cuda-bindings", "cuda-core", "cuda-pathfinder", "cuda-toolkit",
    "cupy-cuda13x", "cycler", "cython", "diffrax", "e3nn", "einops", "equinox", "etils", "execnet", "filelock",
    "flatbuffers", "flax", "fonttools", "formulaic", "frozenlist", "fsspec", "gpytorch", "grpcio", "h11", "h5py",
    "hf-xet", "httpcore", "httpx", "huggingface-hub", "humanize", "hypothesis", "idna", "imageio", "iniconfig",
    "interface-meta", "jax", "jax-cuda13-pjrt", "jax-cuda13-plugin", "jaxlib", "jaxtyping", "jinja2", "joblib",
    "kiwisolver", "lazy-loader", "lightning", "lightning-utilities", "linear-operator", "lineax", "llvmlite",
    "lxml", "markdown", "markdown-it-py", "markupsafe", "matplotlib", "mdurl", "meson", "ml-dtypes", "mpi4py",
    "mpmath", "msgpack", "multidict", "multipledispatch", "mypy-extensions", "nanobind", "narwhals", "networkx",
    "ninja", "numba", "numba-cuda", "numpy", "numpyro", "nvidia-cublas", "nvidia-cuda-cupti", "nvidia-cuda-nvrtc",
    "nvidia-cuda-runtime", "nvidia-cudnn-cu13", "nvidia-cufft", "nvidia-cufile", "nvidia-curand", "nvidia-cusolver",
    "nvidia-cusparse", "nvidia-cusparselt-cu13", "nvidia-ml-py", "nvidia-nccl-cu13", "nvidia-nvjitlink",
    "nvidia-nvshmem-cu13", "nvidia-nvtx", "onnx", "onnx-ir", "onnxruntime", "onnxscript", "opencv-python-headless",
    "optax", "opt-einsum", "opt-einsum-fx", "optimistix", "orbax-checkpoint", "packaging", "pandas", "pathspec",
    "patsy", "peft", "pillow", "pip", "pluggy", "portalocker", "prometheus-client", "propcache", "protobuf",
    "psutil", "pyarrow", "pybind11", "py-cpuinfo", "pygments", "pyparsing", "pyproject-hooks", "pyre-extensions",
    "pytest", "pytest-benchmark", "pytest-cov", "pytest-mock", "pytest-timeout", "pytest-xdist", "python-dateutil",
    "pytorch-lightning", "pyyaml", "regex", "requests", "rich", "sacrebleu", "safetensors", "scikit-build-core",
    "scikit-image", "scikit-learn", "scipy", "seaborn", "sentencepiece", "sentence-transformers", "setuptools",
    "shellingham", "simplejson", "six", "sortedcontainers", "statsmodels", "sympy", "tabulate", "tensorboard",
    "tensorboard-data-server", "tensorstore", "threadpoolctl", "tifffile", "tiktoken", "timm", "tokenizers",
    "toolz", "torch", "torchaudio", "torchdiffeq", "torch-geometric", "torchmetrics", "torchvision", "tqdm",
    "transformers", "treescope", "triton", "typer", "typing-extensions", "typing-inspect", "urllib3", "uvloop",
    "wadler-lindig", "werkzeug", "wheel", "wrapt", "xarray", "xxhash", "yarl", "zipp"
)

SITECUSTOMIZE = """\"\"\"Emulates the GPU machine's image (tests/benchmarks/device_image.py).\"\"\"
import importlib.abc
import importlib.machinery
import importlib.metadata
import os
import re
import sys

ALLOWED = __ALLOWED__
CARRIED = os.environ.get("DEVICE_IMAGE_CARRIED", "/nonexistent")
OWNERS = importlib.metadata.packages_distributions()
LET_IN = set()


def normal(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def in_image(top):
    return any(normal(owner) in ALLOWED for owner in OWNERS.get(top, ()))


def allowed(top):
    return top in sys.stdlib_module_names or top not in OWNERS or in_image(top)


def importer():
    \"\"\"The top-level package of the module that asked for the import (the first frame outside the machinery).\"\"\"
    frame = sys._getframe(2)
    while frame is not None and frame.f_globals.get("__name__", "").startswith(("importlib", "sitecustomize")):
        frame = frame.f_back
    return "" if frame is None else frame.f_globals.get("__name__", "").partition(".")[0]


class Image(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        top = name.partition(".")[0]
        owners = OWNERS.get(top)
        if allowed(top):
            return None
        # what a package of the image imports (and what that imports), its own version there brings
        if top in LET_IN or in_image(importer()) or importer() in LET_IN:
            LET_IN.add(top)
            return None
        if path is not None and all(str(p).startswith(CARRIED) for p in path):
            return None
        if path is None and importlib.machinery.PathFinder.find_spec(name, [CARRIED]) is not None:
            return importlib.machinery.PathFinder.find_spec(name, [CARRIED])
        raise ModuleNotFoundError("No module named %r on the GPU machine (emulated: %s is not in its image)"
                                  % (name, owners[0]), name=name)


sys.meta_path.insert(0, Image())
"""


def write_sitecustomize(folder: Path) -> Path:
    """``folder/sitecustomize.py``; put ``folder`` first on PYTHONPATH and set DEVICE_IMAGE_CARRIED to the folder the
    carried wheels are installed into."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "sitecustomize.py"
    path.write_text(SITECUSTOMIZE.replace("__ALLOWED__", repr(sorted(DEVICE_PACKAGES))))
    return path
