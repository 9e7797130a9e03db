#!/usr/bin/env bash
# Installs the browser tests' npm packages (package-lock.json) into DIR/node_modules, once:
# again only when the lock file changes. Runs unattended (CI=true, no stdin, as root too).
#   tests/browser/npm_ci.sh DIR
set -euo pipefail
dir=$1
cd "$dir"
if [ -f node_modules/.inprof-lock ] && cmp -s package-lock.json node_modules/.inprof-lock &&
   [ -f node_modules/playwright-core/package.json ] &&
   [ -f node_modules/speedscope/dist/release/index.html ]; then
  exit 0
fi
export CI=true npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false
# --ignore-scripts: playwright-core needs no install step, and the system Chromium is used;
# speedscope's package is its built app (dist/release), served as it is.
npm ci --ignore-scripts --no-progress < /dev/null
cp package-lock.json node_modules/.inprof-lock
