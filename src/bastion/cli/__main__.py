"""``python -m bastion.cli``: the same command line as ``bastion``."""

from bastion.cli import main

main()
