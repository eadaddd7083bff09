"""`python -m layerpick ...` (and `torchrun -m layerpick ...`): the same command line as the `layerpick` script."""

from layerpick.cli.app import main

if __name__ == "__main__":
    main()
