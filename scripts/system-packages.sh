#!/usr/bin/env bash
# The system packages the test suite uses, installed where this machine allows it (Debian,
# root): bubblewrap, the sandbox model-written code runs in, and chromium, which renders the
# HTML report in a test and which playwright drives in the viewer's browser tests and the
# demo's screenshots (playwright's own browser download is never used). Tests that need a
# missing one skip and say which package it is.
set -uo pipefail
missing=()
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
if [ "${#missing[@]}" -gt 0 ]; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    apt-get update -qq || true
    for package in "${missing[@]}"; do  # one at a time: one failure does not stop another
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$package" >/dev/null \
        || echo "$package could not be installed; the tests that need it will be skipped"
    done
  else
    echo "missing system packages: ${missing[*]} (install them as root with apt-get);" \
         "the tests that need them will be skipped"
  fi
fi
exit 0
