"""Where the tests find the repository and the shared evaluation data (read-only, never needed by the product)."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHARED_DATA = ROOT.parent / "shared" / "data"
