"""The house's import rules: the import-linter contracts in pyproject.toml hold, they catch a wrong arrow, and
the package has no import circle (lazy imports inside functions included)."""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([str(LINT_IMPORTS), "--no-cache", "--config", str(root / "pyproject.toml")], cwd=root,
                          env=env, capture_output=True, text=True, timeout=300)


def test_every_contract_is_kept():
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout and "KEPT" in result.stdout


def test_a_wrong_arrow_breaks_a_contract(tmp_path):
    """A stage that imports an engine, and click outside the command line, are caught."""
    copy = tmp_path / "tree"
    shutil.copytree(ROOT / "corpus_audit", copy / "corpus_audit", ignore=shutil.ignore_patterns("__pycache__", "*.npz"))
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    matcher = copy / "corpus_audit" / "corpus" / "matcher.py"
    matcher.write_text(matcher.read_text(encoding="utf-8") + "\n\ndef _wrong() -> None:\n"
                       "    import click  # noqa: F401\n    from corpus_audit.engines import make_scorer  # noqa: F401\n",
                       encoding="utf-8")
    result = lint_imports(copy)
    assert result.returncode != 0
    assert "click is imported only by the command line BROKEN" in result.stdout
    assert "The stages never import an engine, a wing or the command line BROKEN" in result.stdout
    assert "corpus_audit.corpus.matcher -> corpus_audit.engines" in result.stdout


def strongly_connected(graph: grimp.ImportGraph, modules: set[str]) -> list[set[str]]:
    """Tarjan's strongly connected components of the import graph restricted to ``modules``, larger than one."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    counter = [0]

    def visit(module: str) -> None:  # recursion depth is bounded by the package's size (~100 modules)
        index[module] = low[module] = counter[0]
        counter[0] += 1
        stack.append(module)
        on_stack.add(module)
        for target in graph.find_modules_directly_imported_by(module) & modules:
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == module:
                    break
            if len(component) > 1:
                found.append(component)

    for module in sorted(modules):
        if module not in index:
            visit(module)
    return found


def test_the_circle_finder_finds_a_circle():
    graph = grimp.ImportGraph()
    for module in ("p.a", "p.b", "p.c"):
        graph.add_module(module)
    graph.add_import(importer="p.a", imported="p.b")
    graph.add_import(importer="p.b", imported="p.a")
    graph.add_import(importer="p.b", imported="p.c")
    assert strongly_connected(graph, {"p.a", "p.b", "p.c"}) == [{"p.a", "p.b"}]


def test_no_import_circle_anywhere_in_the_package():
    graph = grimp.build_graph("corpus_audit", cache_dir=None)
    modules = {module for module in graph.modules if module.startswith("corpus_audit")}
    assert len(modules) > 60
    assert strongly_connected(graph, modules) == []


def test_what_an_engine_receives_is_a_picklable_spec():
    from corpus_audit.score.scorer import ModelSpec

    spec = ModelSpec("es", "e5-small", "cpu", 16, None)
    assert pickle.loads(pickle.dumps(spec)) == spec


def test_the_command_line_starts_without_the_heavy_libraries():
    """--help and option parsing import click and the registries only: numpy, pandas, scipy, torch, spaCy and
    sentence-transformers wait for the command that needs them."""
    code = ("import sys, corpus_audit.cli; heavy = ('numpy', 'pandas', 'scipy', 'torch', 'spacy', 'sklearn', "
            "'sentence_transformers', 'matplotlib'); print(','.join(m for m in heavy if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert result.stdout.strip() == ""
