"""The ``contextwright`` command and ``python -m contextwright``.

The command line needs typer and rich, which the library does not: a plain install brings the
library alone, and the command says which extra to install instead of failing on an import.
"""

from __future__ import annotations

import sys


def main() -> None:
    """Console-script entry point."""
    try:
        import rich  # noqa: F401
        import typer  # noqa: F401
    except ImportError as exc:
        sys.stderr.write(
            f"contextwright: the command line needs {exc.name or 'typer and rich'}, which a plain install leaves out.\n"
            'Install it with: python3 -m pip install "contextwright[cli]"\n'
        )
        raise SystemExit(1) from None
    from contextwright.cli import main as run_cli

    run_cli()


if __name__ == "__main__":
    main()
