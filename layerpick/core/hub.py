"""Hub ids: loaded from the hub or the local cache, or refused in one line within seconds.

Left to itself, transformers retries an unreachable hub five times with backoff (about 25 s of warnings)
before it says a model is missing, and a typo such as `minilm/l6` looks like a hub id. `resolve_hub_id`
settles it before any load, with at most one request (no retries):

- offline (`HF_HUB_OFFLINE=1`): the local Hugging Face cache must hold the model; it loads from there;
- online: one quick question to the hub; a repository or revision the hub does not have is refused at once;
  a hub that cannot be reached falls back to the cache, or is refused when the cache lacks the model.

Refusals name the id, say why, and suggest a close registry alias ("did you mean 'minilm-l6'?").
`hub_file` fetches one small file (a sentence-transformers config) the same way.
"""

from __future__ import annotations

import difflib
import logging
import re
from dataclasses import dataclass

from layerpick.errors import ModelNotFoundError

logger = logging.getLogger(__name__)

PROBE_TIMEOUT_S = 5.0
REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


@dataclass(frozen=True)
class HubSource:
    """A hub id to load, and whether to load it from the local cache without asking the hub."""

    repo_id: str
    revision: str | None = None
    local_only: bool = False


def resolve_hub_id(
    repo_id: str, revision: str | None = None, *, needed_file: str = "config.json", aliases: tuple[str, ...] = ()
) -> HubSource:
    """Decide how `repo_id` loads (see the module docstring), or raise ModelNotFoundError in one line."""
    hint = suggestion(repo_id, aliases)
    if not REPO_ID.match(repo_id) or ".." in repo_id:
        raise ModelNotFoundError(f"{repo_id!r} is not a model alias, a local path or a hub id (org/name){hint}")
    cached = in_cache(repo_id, needed_file, revision)
    if offline():
        if cached:
            return HubSource(repo_id, revision, local_only=True)
        raise ModelNotFoundError(
            f"hub id {repo_id!r} is not in the local Hugging Face cache, and HF_HUB_OFFLINE is set{hint}"
        )
    problem = _ask_hub(repo_id, revision)
    if problem is None:
        return HubSource(repo_id, revision)
    missing, reason = problem
    if missing:
        raise ModelNotFoundError(f"{reason}{hint}")
    if cached:
        logger.warning("the Hugging Face hub cannot be reached (%s); loading %s from the local cache", reason, repo_id)
        return HubSource(repo_id, revision, local_only=True)
    raise ModelNotFoundError(
        f"cannot reach the Hugging Face hub for {repo_id!r} ({reason}), and it is not in the local cache{hint}"
    )


def offline() -> bool:
    """Offline mode as huggingface_hub read it at import, or as the environment says now."""
    import os

    from huggingface_hub import constants

    words = (os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE") or "").strip().lower()
    return bool(constants.HF_HUB_OFFLINE) or words in ("1", "true", "yes", "on")


def hub_file(source: HubSource, filename: str) -> str | None:
    """The local path of `filename` in the repository (downloaded or cached), or None when it has none."""
    from huggingface_hub import hf_hub_download

    try:
        return hf_hub_download(source.repo_id, filename, revision=source.revision, local_files_only=source.local_only)
    except Exception as error:  # noqa: BLE001 - missing file, not cached, hub gone: all mean "no such file"
        logger.debug("no %s in %s: %s", filename, source.repo_id, error)
        return None


def in_cache(repo_id: str, filename: str, revision: str | None = None) -> bool:
    from huggingface_hub import try_to_load_from_cache

    return isinstance(try_to_load_from_cache(repo_id, filename, revision=revision), str)


def suggestion(name: str, aliases: tuple[str, ...]) -> str:
    """' (did you mean 'x'?)' for the registry alias closest to `name`, or ''."""
    close = difflib.get_close_matches(name.lower(), aliases, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _ask_hub(repo_id: str, revision: str | None) -> tuple[bool, str] | None:
    """None when the hub has the repository (and revision); else (the hub said it is missing, why)."""
    from huggingface_hub import HfApi
    from huggingface_hub.errors import RepositoryNotFoundError, RevisionNotFoundError

    try:
        HfApi().model_info(repo_id, revision=revision, timeout=PROBE_TIMEOUT_S)
    except RevisionNotFoundError:
        return True, f"revision {revision!r} of {repo_id!r} is not on the Hugging Face hub"
    except RepositoryNotFoundError:
        return True, f"no model {repo_id!r} on the Hugging Face hub (a private or gated one needs HF_TOKEN)"
    except Exception as error:  # noqa: BLE001 - no network, DNS, proxy, timeout, offline mode: the hub is not there
        text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return False, text
    return None
