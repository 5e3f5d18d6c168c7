#!/usr/bin/env bash
# What an agent runs in a fresh project with no network, one command per step, as an
# agent's tool calls are (tests/benches/prompts.rs runs each step under landstrip):
#   agent.sh STEP      run one step in the current directory (the project)
#   agent.sh steps     list the steps, in order
#   agent.sh all       every step in order (by hand: `landstrip-tray run -- bash agent.sh all`)
# Each step prints `step NAME: ok` or `step NAME: failed (exit N)`; a denied access makes a
# step fail, not the workload: the point is to count what is asked.
set -uo pipefail

steps=(git-init npm-install npm-test venv pip-install py-test make make-test
  cargo-build cargo-test shell-scratch git-commit)

run_step() {
  case "$1" in
    git-init) git init -q && git add -A && git commit -qm "initial" ;;
    npm-install) npm install --offline --no-audit --no-fund ;;
    npm-test) npm test ;;
    venv) python3 -m venv .venv ;;
    pip-install) .venv/bin/pip install --no-index --find-links vendor greet-py &&
      .venv/bin/python -c 'import greet_py; print(greet_py.greet("venv"))' ;;
    py-test) python3 -m unittest discover -s tests -t . ;;
    make) make ;;
    make-test) make test ;;
    cargo-build) cargo build --offline ;;
    cargo-test) cargo test --offline ;;
    shell-scratch)
      # A scratch file and folder, as scripts make them with mktemp, then cleaned up.
      f=$(mktemp) && echo data >"$f" && d=$(mktemp -d) && cp "$f" "$d/copy" &&
        sort "$d/copy" >/dev/null && rm -rf "$f" "$d" ;;
    git-commit) git add -A && git commit -qm "work" && git log --oneline | wc -l ;;
    *) echo "agent.sh: no step $1 (try: agent.sh steps)" >&2; return 2 ;;
  esac
}

one() {
  run_step "$1"
  local code=$?
  if ((code == 0)); then echo "step $1: ok"; else echo "step $1: failed (exit $code)"; fi
  return $code
}

case "${1:-}" in
  steps) printf '%s\n' "${steps[@]}" ;;
  all) failed=0; for s in "${steps[@]}"; do one "$s" || failed=1; done; exit $failed ;;
  "") echo "usage: agent.sh STEP | steps | all" >&2; exit 2 ;;
  *) one "$1" ;;
esac
