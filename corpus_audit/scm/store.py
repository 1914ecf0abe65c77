"""Where trained axes live: shipped with the package, or trained on demand into the user cache."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from corpus_audit.common.resources import SHIPPED_AXES_DIR
from corpus_audit.embed.base import axes_apply
from corpus_audit.scm.axes import AXES_FILE_ERRORS, SCMAxes
from corpus_audit.scm.recipes import DEFAULT_RECIPE, train_axes

SHIPPED_DIR = SHIPPED_AXES_DIR


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "corpus-audit" / "axes"


def read_metadata(path: Path) -> dict | None:
    """The metadata saved with an axes file, or None if the file is not a readable axes file."""
    try:
        with np.load(path, allow_pickle=False) as data:
            return json.loads(str(data["header"]))["metadata"]
    except AXES_FILE_ERRORS:
        return None


def find_axes(embedder_id: str, lang: str, recipe: str = DEFAULT_RECIPE) -> Path | None:
    """A shipped or cached axes file trained on the embeddings of ``embedder_id`` (the same id, or the same weights
    on a backend with the same embeddings, or quantised: :func:`~corpus_audit.embed.base.axes_apply`) for ``lang``
    with ``recipe``."""
    for folder in (SHIPPED_DIR, cache_dir()):
        for path in sorted(folder.glob("*.npz")) if folder.is_dir() else []:
            meta = read_metadata(path)
            if meta and axes_apply(str(meta.get("embedder_id")), embedder_id) and meta.get("lang") == lang \
                    and meta.get("recipe", {}).get("name") == recipe:
                return path
    return None


def cached_axes_path(embedder_id: str, lang: str, recipe: str) -> Path:
    safe = "".join(c if c.isalnum() or c in "-_.@" else "_" for c in embedder_id)
    return cache_dir() / f"{lang}-{recipe}-{safe}.npz"


def axes_for(embedder, lang: str, axes_path: str | Path | None = None, recipe: str = DEFAULT_RECIPE,
             log=print) -> SCMAxes:
    """Axes for this embedder: from ``axes_path``, else shipped/cached ones, else trained now and cached."""
    if axes_path is not None:
        axes = SCMAxes.load(axes_path)
    else:
        found = find_axes(embedder.model_id, lang, recipe)
        if found is not None:
            axes = SCMAxes.load(found)
        else:
            target = cached_axes_path(embedder.model_id, lang, recipe)
            log(f"No trained {lang} axes for {embedder.model_id}; training them now (recipe {recipe!r}), "
                f"cached at {target}")
            axes = train_axes(embedder, lang=lang, recipe=recipe)
            try:
                axes.save(target)
            except OSError as error:
                log(f"warning: could not cache the trained axes ({error})")
    axes.check_embedder(embedder.model_id)
    return axes
