"""Safe loading: the package never unpickles (its source is scanned for unsafe loaders), and a damaged or
tampered axes file fails with AxesFileError, never with another exception or a silently wrong projection.
(Checkpoints and score parts: tests/test_resume.py.)"""

from __future__ import annotations

import ast
import io
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from corpus_audit.scm.axes import AxesFileError, SCMAxes
from corpus_audit.scm.store import read_metadata

PACKAGE = Path(__file__).resolve().parents[2] / "corpus_audit"
# Modules whose loaders execute code from the data (pickle and its relatives).
UNSAFE_MODULES = {"pickle", "cPickle", "_pickle", "dill", "cloudpickle", "joblib", "marshal", "shelve"}
UNSAFE_CALLS = {("torch", "load"), ("pd", "read_pickle"), ("pandas", "read_pickle"), ("yaml", "load"),
                ("yaml", "unsafe_load"), ("np", "fromfile")}
UNSAFE_METHODS = {"to_pickle", "read_pickle"}


def unsafe_loaders(source: str) -> list[str]:
    """Places in ``source`` that import a pickle-like module, call a loader that may unpickle or run code, or
    call ``np.load`` without ``allow_pickle=False``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [alias.name for alias in node.names]
            found += [f"line {node.lineno}: import {name}" for name in names if name.split(".")[0] in UNSAFE_MODULES]
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in ("eval", "exec"):
                found.append(f"line {node.lineno}: {func.id}()")
            elif isinstance(func, ast.Attribute):
                owner = func.value.id if isinstance(func.value, ast.Name) else None
                if (owner, func.attr) in UNSAFE_CALLS or func.attr in UNSAFE_METHODS:
                    found.append(f"line {node.lineno}: {owner}.{func.attr}()")
                elif (owner, func.attr) in (("np", "load"), ("numpy", "load")) and not any(
                        keyword.arg == "allow_pickle" and isinstance(keyword.value, ast.Constant)
                        and keyword.value.value is False for keyword in node.keywords):
                    found.append(f"line {node.lineno}: np.load without allow_pickle=False")
    return found


def test_the_scanner_finds_unsafe_loaders():
    source = ("import pickle\nfrom joblib import load\nimport numpy as np\nnp.load('x.npy')\n"
              "np.load('y.npz', allow_pickle=False)\ntorch.load('m.pt')\nframe.to_pickle('f')\neval('1')\n")
    assert unsafe_loaders(source) == ["line 1: import pickle", "line 2: import joblib", "line 4: np.load without "
                                      "allow_pickle=False", "line 6: torch.load()", "line 7: frame.to_pickle()",
                                      "line 8: eval()"]


def test_package_source_has_no_unsafe_loader():
    found = {str(path.relative_to(PACKAGE)): problems for path in sorted(PACKAGE.rglob("*.py"))
             if (problems := unsafe_loaders(path.read_text(encoding="utf-8")))}
    assert found == {}
    assert len(list(PACKAGE.rglob("*.py"))) > 20  # the scan saw the package


# --------------------------------------------------------------------------------------------- axes files


def synthetic(seed: int = 0, dim: int = 6) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = np.array([(w, c) for w in (-1, 1) for c in (-1, 1)] * 10, dtype=float)
    return y @ rng.normal(size=(2, dim)) + 0.1 * rng.normal(size=(len(y), dim)), y


@pytest.fixture(scope="module", params=["polar", "logistic", "mlp+logistic"])
def saved_axes(request, tmp_path_factory) -> tuple[bytes, SCMAxes]:
    X, y = synthetic()
    axes = SCMAxes(head=request.param, n_components=2, hidden_units=4).fit(X, y, metadata={"embedder_id": "toy"})
    path = tmp_path_factory.mktemp("axes") / "axes.npz"
    axes.save(path)
    return path.read_bytes(), axes


@given(edits=st.lists(st.tuples(st.sampled_from(["flip", "cut", "insert"]), st.floats(0, 1), st.binary(min_size=1,
                                                                                                     max_size=4)),
                      min_size=1, max_size=3))
def test_damaged_axes_file_fails_clearly_or_loads_unchanged(saved_axes, tmp_path_factory, edits):
    data, original = saved_axes
    damaged = bytearray(data)
    for edit, where, payload in edits:
        if not damaged:
            break
        at = int(where * (len(damaged) - 1))
        if edit == "flip":
            damaged[at] ^= payload[0] or 1
        elif edit == "cut":
            del damaged[at:]
        else:
            damaged[at:at] = payload
    path = tmp_path_factory.getbasetemp() / "damaged.npz"
    path.write_bytes(bytes(damaged))
    try:
        loaded = SCMAxes.load(path)
    except AxesFileError:
        assert read_metadata(path) is None or isinstance(read_metadata(path), dict)  # never raises either
        return
    X, _ = synthetic(seed=1)  # a byte the zip format ignores (e.g. a timestamp) changed: same axes
    np.testing.assert_array_equal(loaded.transform(X), original.transform(X))


def test_an_unknown_compression_method_is_a_damaged_file(saved_axes, tmp_path):
    """zipfile raises NotImplementedError for a compression method it does not know: a damaged byte, not a crash."""
    data, _ = saved_axes
    damaged = bytearray(data)
    central = damaged.rfind(b"PK\x01\x02")  # the last member's central directory entry: its method is at +10
    damaged[central + 10:central + 12] = (99).to_bytes(2, "little")
    path = tmp_path / "damaged.npz"
    path.write_bytes(bytes(damaged))
    with pytest.raises(AxesFileError, match="damaged.npz"):
        SCMAxes.load(path)
    assert read_metadata(path) is None or isinstance(read_metadata(path), dict)


def rewrite(data: bytes, path: Path, header_change=None, arrays_change=None) -> Path:
    """A copy of an axes file with its JSON header and/or arrays changed (a valid zip: only the content lies)."""
    with np.load(io.BytesIO(data), allow_pickle=False) as npz:
        header = json.loads(str(npz["header"]))
        arrays = {name: npz[name] for name in npz.files if name != "header"}
    header = header_change(header) if header_change else header
    arrays = arrays_change(arrays) if arrays_change else arrays
    with open(path, "wb") as handle:
        np.savez(handle, header=np.array(json.dumps(header)), **arrays)
    return path


def first_array(arrays: dict) -> str:
    return sorted(arrays)[0]


TAMPERINGS = {
    "header is a list": (lambda h: [h], None),
    "params not an object": (lambda h: {**h, "params": [1, 2]}, None),
    "unknown parameter": (lambda h: {**h, "params": {**h["params"], "evil": 1}}, None),
    "unknown head": (lambda h: {**h, "params": {**h["params"], "head": "pickle"}}, None),
    "array missing": (lambda h: {**h, "arrays": h["arrays"] + ["ghost"]}, None),
    "dimension is text": (lambda h: {**h, "n_features_in": "six"}, None),
    "dimension disagrees": (lambda h: {**h, "n_features_in": h["n_features_in"] + 3}, None),
    "metadata missing": (lambda h: {key: value for key, value in h.items() if key != "metadata"}, None),
    "array reshaped": (None, lambda a: {**a, first_array(a): a[first_array(a)].reshape(-1)[:-1]}),
    "array of text": (None, lambda a: {**a, first_array(a): np.array(["x"] * a[first_array(a)].size)}),
    "array of NaN": (None, lambda a: {**a, first_array(a): np.full(a[first_array(a)].shape, np.nan)}),
}


@pytest.mark.parametrize("tampering", list(TAMPERINGS))
def test_tampered_axes_content_fails_clearly(saved_axes, tmp_path, tampering):
    header_change, arrays_change = TAMPERINGS[tampering]
    path = rewrite(saved_axes[0], tmp_path / "tampered.npz", header_change, arrays_change)
    with pytest.raises(AxesFileError, match="tampered.npz"):
        SCMAxes.load(path)


def test_pickled_array_inside_an_axes_file_is_refused(saved_axes, tmp_path):
    path = rewrite(saved_axes[0], tmp_path / "evil.npz", lambda h: {**h, "arrays": h["arrays"] + ["projection__evil"]},
                   lambda a: {**a, "projection__evil": np.array([print], dtype=object)})  # saved pickled
    with pytest.raises(AxesFileError, match="Object arrays cannot be loaded"):
        SCMAxes.load(path)
