"""layerpick's command-line interface (installed as `layerpick.cli`): parse, call the library, render."""
