#!/bin/sh
# make lock: resolve requirements/*.in into the hashed locks requirements/*.txt, and the student pins
# (constraints.txt) from the hub's lock. Run it on purpose (a new package, a security fix, a new release to
# take); review its diff like code. Linux x86-64, CPython 3.11: the one Python with a CPU torch here.
set -eu
cd "$(dirname "$0")/.."
UV=${UV:-build/lock-venv/bin/uv}
compile() {
    # uv reads no pip configuration: the local torch file comes in through --find-links, everything else from
    # PyPI. The two local packages are bound to this checkout (-e in the .in) and never written to the lock.
    "$UV" pip compile "requirements/$1.in" -o "requirements/$1.txt" --quiet --generate-hashes \
        --python-version 3.11 --python-platform x86_64-manylinux_2_28 \
        --find-links /opt/wheels --index-strategy unsafe-best-match \
        --no-emit-package attention-kit --no-emit-package attention-kit-grader ${LOCK_UPGRADE:+--upgrade}
}
for name in kit site browser hub; do compile "$name"; done
PYTHONPATH=lib/grader "${PYTHON:-python3}" -m attnkit_grader.locks student requirements/hub.txt > constraints.txt
# npm: each folder's package.json names exact versions; its package-lock.json pins the whole tree with integrity
# hashes and no download address; make setup, make site and the hub install them with npm ci.
for folder in requirements/npm/*/; do
    (cd "$folder" && rm -f package-lock.json &&
     npm install --package-lock-only --omit-lockfile-registry-resolved --no-audit --no-fund --silent)
done
