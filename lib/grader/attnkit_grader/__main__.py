"""``python -m attnkit_grader``: the grading pipeline's command line."""

import sys

from .cli import main

sys.exit(main())
