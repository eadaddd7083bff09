"""Private helpers written once: atomic writes, the cache folder, progress bars, torch threads, versions."""
