"""`python -m demos.benchmark`: see the package's docstring, or --help."""
from .cli import main

main()
