"""Asymmetric retrieval (`validate --documents-by MODEL`): the documents of retrieval tasks are encoded by another
sentence-transformers model, their queries (and every text of the other kinds of task) by what is validated. This
is how a healed cut is scored as a query encoder for an index its full model built.

Owns finding the document encoder (an alias, a local folder or a hub id), loading it as an export's setup (its own
output, its vectors kept in the representation store so a corpus is encoded once), and the checks that pair it
with the setups being validated.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import Sequence

from layerpick.core import registry
from layerpick.core.load_errors import loading
from layerpick.core.models import LoadOptions
from layerpick.errors import LayerpickError
from layerpick.validation.sources import Setup, SourceOptions, exported_setup
from layerpick.validation.tasks import TaskSpec

logger = logging.getLogger(__name__)

OPTION = "--documents-by"


class DocumentsError(LayerpickError):
    """A document encoder that cannot be paired with what is validated."""


def with_documents(setups: list[Setup], name: str, options: SourceOptions, specs: Sequence[TaskSpec]) -> list[Setup]:
    """`setups` with their retrieval documents encoded by `name` (one setup shared by all); unchanged, with a
    warning, when none of the tasks is a retrieval task."""
    if not any(spec.is_retrieval for spec in specs):
        logger.warning("%s changes retrieval tasks only, and none of the tasks is one: ignored", OPTION)
        return setups
    documents = exported_setup(document_folder(name, options.load_options), options)
    documents.facts["model"] = name
    for setup in setups:
        if setup.embed_dim and documents.embed_dim and setup.embed_dim != documents.embed_dim:
            raise DocumentsError(
                f"{OPTION} {name} gives {documents.embed_dim} dimensions and {setup.label} {setup.embed_dim}: "
                "queries and documents must share one vector space"
            )
    return [dataclasses.replace(setup, documents=documents) for setup in setups]


def document_folder(name: str, load: LoadOptions) -> Path:
    """The folder of the document encoder `name` (an alias's package folder, a local folder, or a hub snapshot),
    refused unless it holds a sentence-transformers pipeline."""
    if not name.strip():
        raise DocumentsError(f"{OPTION} is empty: name the full model (an alias, a folder or a hub id)")
    return _sentence_transformers(name, _find_folder(name, load))


def _find_folder(name: str, load: LoadOptions) -> Path:
    if registry.get_entry(name) is not None:
        return registry.resolve_alias(name)[1].directory
    path = Path(name).expanduser()
    if path.exists() or name.startswith((".", "/", "~")):
        if not path.exists():
            raise DocumentsError(f"{OPTION}: folder not found: {path}")
        if not path.is_dir():
            raise DocumentsError(f"{OPTION}: {path} is a file; name a model folder")
        return path
    from huggingface_hub import snapshot_download

    with loading(name, what="document encoder"):
        try:
            return Path(snapshot_download(name, revision=load.revision))
        except (OSError, ValueError) as error:
            raise DocumentsError(
                f"{OPTION} {name}: not an alias, a local folder or a hub id that can be fetched ({error})"
            ) from error


def _sentence_transformers(name: str, folder: Path) -> Path:
    if not (folder / "modules.json").is_file():
        raise DocumentsError(
            f"{OPTION} {name}: not a sentence-transformers model (no modules.json); documents must be encoded by "
            "the full model's own pipeline or a layerpick export"
        )
    return folder


def describe(setup: Setup) -> dict | None:
    """validation.json's `documents_by`: what encoded the documents, or None for symmetric validation."""
    documents = setup.documents
    if documents is None:
        return None
    return {
        "model": documents.facts["model"],
        "path": documents.facts["exported_dir"],
        "fingerprint": documents.revision,
        "note": "retrieval tasks: queries by the validated model, documents by this one",
    }
