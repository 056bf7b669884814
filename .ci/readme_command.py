"""Print one of the two set-up commands from README.md: `run` or `test`.

The README marks each with an HTML comment (`<!-- run-command -->`, `<!-- test-command -->`)
right above its fenced code block; CI and the docs check call the command from there, so the
README can never drift from what is actually run.
"""

import re
import sys
from pathlib import Path

which = sys.argv[1]
readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
match = re.search(rf"<!-- {which}-command -->\s*```(?:bash|sh)?\n(.+?)\n```", readme, re.S)
if not match:
    sys.exit(f"README.md has no <!-- {which}-command --> block")
print(match.group(1).strip())
