"""`python -m llmopt` is the `llmopt` command."""

import sys

from llmopt.cli import main

sys.exit(main())
