"""``python -m drsim``: the drsim command line."""

from drsim.cli import app

if __name__ == "__main__":
    app(prog_name="drsim")
